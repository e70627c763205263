"""Caffe: BVLC Caffe 1.0 (and its descendants S-Caffe, CaffeOnSpark), trained through its
solver, here via pycaffe (`caffe.SGDSolver(...).solve()`; PyPI brocolli-caffe builds it).

Parser: reads the glog output of the solver (stderr), lines such as

  I20261121 22:18:06.996481 14571 solver.cpp:231] Iteration 0, loss = 2.35957
  I1121 21:40:01.123456 12345 solver.cpp:218] Iteration 100 (1.23 iter/s, 81.3s/100 iters), loss = 0.43
  I1121 21:40:05.000000 12345 solver.cpp:330] Iteration 500, Testing net (#0)
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #0: accuracy = 0.9185
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #1: loss = 0.27 (* 1 = 0.27 loss)
  I1121 21:40:09.000000 12345 solver.cpp:...] Optimization Done.

The releases' wordings it reads (tests/data/logs/real/caffe/ holds their real output):
- BVLC Caffe up to 1.0-rc3 (2016): `Iteration N, loss = x`, no rate;
- BVLC Caffe 1.0-rc4 on (2017): `Iteration N (r iter/s, ts/k iters), loss = x`;
- NVIDIA Caffe 0.15: the same with `s/k iter)`; 0.16 and 0.17: `Iteration N (t s), loss = x`
  for the first iterations (a time, not a rate), then `(r iter/s, ts/k iter), [e/Eep, ]loss = x`,
  0.17 with the net's device (`[0.1]` training, `(0)` testing) before the message;
- Intel Caffe over MLSL under Intel MPI's `mpirun -l`: every line prefixed `[<rank>] `, the
  ranks' solvers interleaved (each rank's rows carry task `rank:<r>`, each its own clock);
- glog before 0.6 stamps month-day (I1121), from 0.6 on year-month-day (I20261121).

Rows: per displayed iteration loss (the solver's smoothed loss), steps_per_s when the
line carries `iter/s`, wall_clock_s (glog time since the solver's first `Iteration` line,
which may be the test pass at iteration 0); per test pass top1_accuracy (output named
`accuracy`), top5_accuracy (`accuracy_top5`, `top5`), test_loss (`loss`). A rate not above
zero is left out: it rates no iteration (BVLC 1.0 prints `0 iter/s` at iteration 0, where no
iteration ran since the solver's timer started). Finished when `Optimization Done.` is present
(under MPI, on any rank). Times are differences within the log; older glog stamps carry no year,
and a change of day is followed. Two logs mixed are unparseable: iterations out of order, one
solver's training lines from two glog thread ids (two processes), or rank-prefixed lines among
unprefixed ones.
"""

import re
from datetime import datetime, timedelta

from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser

LOG_FILES = ("stderr.log", "stdout.log")

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
# Intel MPI's `mpirun -l` (Intel Caffe over MLSL): the rank before every line
RANK_PREFIX = re.compile(r"^\[(\d+)\] (.*)$")
TESTING = re.compile(r"^Iteration (\d+), Testing net \(#(\d+)\)")
TEST_OUT = re.compile(r"^\s*Test net output #\d+: (\S+) = (" + NUM + r")")
DONE = re.compile(r"^Optimization Done\.")
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
    reads them through this. Rows carry `task` when one is set. Raises LogError for
    iterations out of order (two logs interleaved or concatenated)."""

    def __init__(self, result: ParseResult, task: str | None = None):
        self.result = result
        self.task = task
        self.start = None      # time of the first Iteration line (training or test pass)
        self.last_iter = -1
        self.last_stamp = None  # time of the last displayed training iteration
        self.testing = None    # iteration of the test pass being reported
        self.done = False
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
        elif DONE.match(message):
            if self.done:
                raise LogError(f"line {no}: a second 'Optimization Done.' (two logs concatenated?)")
            self.done = True
        else:
            return False
        return True

    def training_span_s(self) -> float | None:
        """Seconds from the first Iteration line to the last displayed training iteration."""
        if self.start is None or self.last_stamp is None:
            return None
        return (self.last_stamp - self.start).total_seconds()

    def close(self) -> None:
        if "unmapped_test_outputs" in self.result.meta:
            self.result.meta["unmapped_test_outputs"] = sorted(self.result.meta["unmapped_test_outputs"])


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    solvers = {}  # MPI rank (None: a log without rank prefixes) -> (its clock, its solver)
    for no, line in lines:
        rank = None
        if p := RANK_PREFIX.match(line):
            rank, line = int(p[1]), p[2]
        if not (g := GLOG.match(line)):
            continue
        if solvers and (None in solvers) != (rank is None):
            raise LogError(f"line {no}: a glog line {'without' if rank is None else 'with'} an MPI rank "
                           f"prefix among lines {'with' if rank is None else 'without'} one (two logs "
                           "interleaved?)")
        if rank not in solvers:
            solvers[rank] = GlogClock(), SolverLines(result, None if rank is None else f"rank:{rank}")
        clock, solver = solvers[rank]
        solver.read(no, clock.stamp(no, g), g[7], THREAD.match(line)[1])
    for _, solver in solvers.values():
        solver.close()
    if not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} Caffe's format: no glog 'Iteration N, loss = x' or 'Test net output' line")
    if None not in solvers:
        result.meta["mpi_ranks"] = len(solvers)
    # under MPI one rank's 'Optimization Done.' ends the run
    last = max(solver.last_iter for _, solver in solvers.values())
    done = any(solver.done for _, solver in solvers.values())
    return result.close(None if done else f"no 'Optimization Done.' line (last iteration {last})", cut=cut)


parse = line_parser(_parse)
