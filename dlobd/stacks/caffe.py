"""Caffe: BVLC Caffe 1.0 (and its descendants S-Caffe, CaffeOnSpark), trained through its
solver, here via pycaffe (`caffe.SGDSolver(...).solve()`; PyPI brocolli-caffe builds it).

Parser: reads the glog output of the solver (stderr), lines such as

  I20261121 22:18:06.996481 14571 solver.cpp:231] Iteration 0, loss = 2.35957
  I1121 21:40:01.123456 12345 solver.cpp:218] Iteration 100 (1.23 iter/s, 81.3s/100 iters), loss = 0.43
  I1121 21:40:05.000000 12345 solver.cpp:330] Iteration 500, Testing net (#0)
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #0: accuracy = 0.9185
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #1: loss = 0.27 (* 1 = 0.27 loss)
  I1121 21:40:09.000000 12345 solver.cpp:...] Optimization Done.

Rows: per displayed iteration loss (the solver's smoothed loss), steps_per_s when the
line carries `iter/s` (newer Caffe), wall_clock_s (glog time since the solver's first
`Iteration` line, which may be the test pass at iteration 0);
per test pass top1_accuracy (output named `accuracy`), top5_accuracy (`accuracy_top5`,
`top5`), test_loss (`loss`). Finished when `Optimization Done.` is present.
Times are differences within the log; older glog stamps carry no year, and a change
of day is followed.
"""

import re
from datetime import datetime, timedelta

from dlobd.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser

LOG_FILES = ("stderr.log", "stdout.log")

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
# glog before 0.6 prints month-day (I1121), from 0.6 on year-month-day (I20261121).
GLOG = re.compile(r"^([IWEF])(\d{4})?(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)\s+\d+ (\S+):\d+\] (.*)$")
TRAIN = re.compile(r"^Iteration (\d+)(?: \((" + NUM + r") iter/s, [^)]*\))?, loss = (" + NUM + r")\s*$")
TESTING = re.compile(r"^Iteration (\d+), Testing net \(#(\d+)\)")
TEST_OUT = re.compile(r"^\s*Test net output #\d+: (\S+) = (" + NUM + r")")
DONE = re.compile(r"^Optimization Done\.")
TEST_METRIC = {"accuracy": "top1_accuracy", "acc": "top1_accuracy", "accuracy_top1": "top1_accuracy",
               "accuracy_top5": "top5_accuracy", "top5": "top5_accuracy", "loss": "test_loss"}


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    start = previous = None
    day_shift = timedelta(0)
    last_iter = -1
    testing = None   # iteration of the test pass being reported
    done = False
    for no, line in lines:
        g = GLOG.match(line)
        if not g:
            continue
        try:  # without a year, 2000 (a leap year: any month-day parses)
            stamp = datetime.strptime(f"{g[2] or 2000}{g[3]}{g[4]} {g[5][:15]}",
                                      "%Y%m%d %H:%M:%S.%f") + day_shift
        except ValueError:
            raise LogError(f"line {no}: {line[:21]!r} is not a glog time stamp") from None
        if previous and stamp < previous - timedelta(hours=12):
            day_shift += timedelta(days=1)  # glog's month-day-time passed midnight
            stamp += timedelta(days=1)
        previous = stamp
        message = g[7]
        if t := TRAIN.match(message):
            it = int(t[1])
            if done:
                raise LogError(f"line {no}: iteration {it} after 'Optimization Done.' "
                               "(two logs interleaved or concatenated?)")
            if it <= last_iter:
                raise LogError(f"line {no}: iteration {it} after iteration {last_iter} "
                               "(two logs interleaved or concatenated?)")
            start = start or stamp
            wall = (stamp - start).total_seconds()
            last_iter, testing = it, None
            result.rows.append(row("loss", float(t[3]), step=it, wall_clock_s=wall))
            if t[2] is not None:
                result.rows.append(row("steps_per_s", float(t[2]), step=it, wall_clock_s=wall))
            result.rows.append(row("wall_clock_s", wall, step=it))
        elif t := TESTING.match(message):
            it = int(t[1])
            if it < last_iter:
                raise LogError(f"line {no}: test at iteration {it} after iteration {last_iter} "
                               "(two logs interleaved or concatenated?)")
            testing = it
            start = start or stamp
        elif (t := TEST_OUT.match(message)) and testing is not None:
            metric = TEST_METRIC.get(t[1])
            if metric:
                result.rows.append(row(metric, float(t[2]), step=testing,
                                       wall_clock_s=(stamp - start).total_seconds()))
            else:
                result.meta.setdefault("unmapped_test_outputs", set()).add(t[1])
        elif DONE.match(message):
            if done:
                raise LogError(f"line {no}: a second 'Optimization Done.' (two logs concatenated?)")
            done = True
    if "unmapped_test_outputs" in result.meta:
        result.meta["unmapped_test_outputs"] = sorted(result.meta["unmapped_test_outputs"])
    if not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} Caffe's format: no glog 'Iteration N, loss = x' or 'Test net output' line")
    return result.close(None if done else f"no 'Optimization Done.' line (last iteration {last_iter})",
                        cut=cut)


parse = line_parser(_parse)
