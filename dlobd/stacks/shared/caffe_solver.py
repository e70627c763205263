"""Caffe's solver in its glog lines, as every Caffe-derived stack prints them (Caffe, the
executors of CaffeOnSpark, S-Caffe): glog's time stamps (GlogClock) and the solver's
iteration, test and end lines (SolverLines). dlobd/stacks/caffe.py's docstring lists the
releases' wordings.
"""

import re
from datetime import datetime, timedelta

from dlobd.spec.metrics import row
from dlobd.stacks import LogError, ParseResult

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
# glog before 0.6 prints month-day (I1121), from 0.6 on year-month-day (I20261121).
GLOG = re.compile(r"^([IWEF])(\d{4})?(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)\s+\d+ (\S+):\d+\] (.*)$")
# `(r iter/s, ts/k iters)` from BVLC 1.0-rc4 and NVIDIA Caffe; `(t s)` NVIDIA's first iterations;
# `e/Eep, ` NVIDIA 0.17's epochs
TRAIN = re.compile(r"^Iteration (\d+)(?: \((?:(" + NUM + r") iter/s, [^)]*|(?:" + NUM + r") s)\))?,"
                   r"(?: [\d.]+/[\d.]+ep,)? loss = (" + NUM + r")\s*$")
# NVIDIA Caffe 0.17 names the net's device before its messages: [0.1] training, (0) testing
DEVICE = re.compile(r"^\s*(?:\[[\d.]+\]|\([\d.]+\))\s+")
# the thread id of a glog line
THREAD = re.compile(r"^\S+ \S+\s+(\d+) ")
TESTING = re.compile(r"^Iteration (\d+), Testing net \(#(\d+)\)")
TEST_OUT = re.compile(r"^\s*Test net output #\d+: (\S+) = (" + NUM + r")")
DONE = re.compile(r"^Optimization Done\.")
# a model snapshot names the iterations done; the one after the last iteration is the end of
# training where the last iteration was not displayed (`display` not dividing `max_iter`)
SNAPSHOT = re.compile(r"^Snapshotting to binary proto file \S*_iter_(\d+)\.caffemodel")
TEST_METRIC = {"accuracy": "top1_accuracy", "acc": "top1_accuracy", "accuracy_top1": "top1_accuracy",
               "accuracy_top5": "top5_accuracy", "top5": "top5_accuracy", "loss": "test_loss"}


class GlogClock:
    """The time stamps of one glog log as datetimes. Older glog stamps carry no year (2000
    stands in, a leap year: any month-day parses), and a change of year is followed. A stamp more
    than 12 hours before the last one is another process's line (its clock, not this log's): it
    gets its own time and moves this clock not."""

    def __init__(self):
        self.previous = None
        self.shift = timedelta(0)

    def stamp(self, no: int, g: re.Match) -> datetime:
        try:
            stamp = datetime.strptime(f"{g[2] or 2000}{g[3]}{g[4]} {g[5][:15]}",
                                      "%Y%m%d %H:%M:%S.%f") + self.shift
        except ValueError:
            raise LogError(f"line {no}: {g[0][:21]!r} is not a glog time stamp") from None
        if self.previous and stamp < self.previous - timedelta(hours=12):
            if g[2] is not None or (stamp.month, self.previous.month) != (1, 12):
                return stamp
            # a month-day stamp passed New Year's Eve: a year later (the stand-in year has 366 days)
            self.shift += timedelta(days=366)
            stamp += timedelta(days=366)
        self.previous = stamp
        return stamp


class SolverLines:
    """Caffe's solver lines (solver.cpp's glog messages) of one solver process, in order, as
    rows of `result`: every Caffe-derived stack (Caffe, CaffeOnSpark's executors, S-Caffe)
    reads them through this. Rows carry `task` when one is set. `caffe train`'s two
    `Optimization Done.` lines in a row (solver.cpp's, then tools/caffe.cpp's) end one run. Raises
    LogError for iterations out of order or a run's end repeated otherwise (two logs interleaved or
    concatenated)."""

    def __init__(self, result: ParseResult, task: str | None = None):
        self.result = result
        self.task = task
        self.start = None      # time of the first Iteration line (training or test pass)
        self.last_iter = -1
        self.last_stamp = None  # time of the last displayed training iteration, or later snapshot
        self.testing = None    # iteration of the test pass being reported
        self.done = False
        self.tool_done_next = False  # the solver's 'Optimization Done.' was the last solver line
        self.thread = None     # glog's thread id of the training lines

    def read(self, no: int, stamp: datetime, message: str, thread: str | None = None) -> bool:
        """Read one glog message (of glog's thread id `thread`, where known); True when it was a
        solver line."""
        rows = self.result.rows
        message = DEVICE.sub("", message, count=1)
        if t := TRAIN.match(message):
            it = int(t[1])
            if thread is not None and self.thread not in (None, thread):
                raise LogError(f"line {no}: iteration {it} from thread {thread}, the solver's before it "
                               f"from thread {self.thread} (two logs interleaved?)")
            self.thread = thread or self.thread
            if self.done:
                raise LogError(f"line {no}: iteration {it} after 'Optimization Done.' "
                               "(two logs interleaved or concatenated?)")
            if it <= self.last_iter:
                raise LogError(f"line {no}: iteration {it} after iteration {self.last_iter} "
                               "(two logs interleaved or concatenated?)")
            self.start = self.start or stamp
            wall = (stamp - self.start).total_seconds()
            self.last_iter, self.last_stamp, self.testing = it, stamp, None
            rows.append(row("loss", float(t[3]), step=it, wall_clock_s=wall, task=self.task))
            # BVLC's rate at iteration 0 is `0 iter/s`: no iteration ran since its timer started
            if t[2] is not None and float(t[2]) > 0:
                rows.append(row("steps_per_s", float(t[2]), step=it, wall_clock_s=wall, task=self.task))
            rows.append(row("wall_clock_s", wall, step=it, task=self.task))
        elif t := TESTING.match(message):
            it = int(t[1])
            if it < self.last_iter:
                raise LogError(f"line {no}: test at iteration {it} after iteration {self.last_iter} "
                               "(two logs interleaved or concatenated?)")
            self.testing = it
            self.start = self.start or stamp
        elif (t := TEST_OUT.match(message)) and self.testing is not None:
            metric = TEST_METRIC.get(t[1])
            if metric:
                rows.append(row(metric, float(t[2]), step=self.testing,
                                wall_clock_s=(stamp - self.start).total_seconds(), task=self.task))
            else:
                self.result.meta.setdefault("unmapped_test_outputs", set()).add(t[1])
        elif (t := SNAPSHOT.match(message)) and self.start is not None and int(t[1]) > self.last_iter:
            self.last_stamp = stamp
        elif DONE.match(message):
            # `caffe train` logs it twice, one run: the solver's at the end of Solve(), then the
            # tool's (tools/caffe.cpp) once Solve() returned, with no solver line between
            if self.done and not self.tool_done_next:
                raise LogError(f"line {no}: 'Optimization Done.' again after the solver's and the caffe "
                               "tool's, or after other solver lines (two logs concatenated?)")
            self.tool_done_next = not self.done
            self.done = True
            return True
        else:
            return False
        self.tool_done_next = False
        return True

    def training_span_s(self) -> float | None:
        """Seconds from the first Iteration line to the last displayed training iteration or a
        snapshot after it; None when nothing marks an iteration after the first (one displayed
        iteration and no snapshot: no span)."""
        if self.start is None or self.last_stamp is None or self.last_stamp == self.start:
            return None
        return (self.last_stamp - self.start).total_seconds()

    def close(self) -> None:
        if "unmapped_test_outputs" in self.result.meta:
            self.result.meta["unmapped_test_outputs"] = sorted(self.result.meta["unmapped_test_outputs"])
