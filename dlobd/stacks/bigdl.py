"""BigDL: Intel's deep learning library on Spark; its Scala training mains (e.g.
`com.intel.analytics.bigdl.dllib.models.lenet.Train`, `models.vgg.Train`) run through
`spark-submit` on Spark local, standalone or YARN.

Parser: reads the driver log that holds BigDL's DistriOptimizer lines (stderr with
BigDL's default log4j set-up; any log4j layout works, only the message is read):

  [Epoch 1 12800/60000][Iteration 100][Wall Clock 21.56s] Trained 128.0 records in
      0.094 seconds. Throughput is 1355.85 records/second. Loss is 0.877942. ...
  [Epoch 1 ...][Iteration 469][Wall Clock ...] Epoch finished. Wall clock time is 5696.04 ms
  [...] Top1Accuracy is Accuracy(correct: 9290, count: 10000, accuracy: 0.929)
  [...] Top5Accuracy is Accuracy(correct: ..., accuracy: 0.99)
  [...] Loss is (Loss: 3198.36, count: 2000, Average Loss: 1.599)

Rows: per iteration throughput_records_per_s, loss, wall_clock_s; per epoch epoch_time_s
(difference of BigDL's cumulative "Wall clock time" of consecutive epochs), top1/top5
accuracy and test_loss of the validation; train_time_s (the last epoch's wall clock) when
the log reaches the end of its last epoch. BigDL prints no end-of-training line, so a log
cut exactly between two epochs reads as finished: the run's exit status tells the rest.
"""

import math
import re

from dlobd.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser

LOG_FILES = ("stderr.log", "stdout.log", "containers/*/stderr")

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|-?Infinity"
PREFIX = re.compile(
    r"\[Epoch (\d+) (\d+)/(\d+)\]\[Iteration (\d+)\]\[Wall Clock (" + NUM + r")s\] (.*)$")
TRAINED = re.compile(
    r"^Trained (" + NUM + r") records in (" + NUM + r") seconds\. Throughput is (" + NUM +
    r") records/second\. Loss is (" + NUM + r")\.(?:\s|$)")
EPOCH_DONE = re.compile(r"^Epoch finished\. Wall clock time is (" + NUM + r") ms")
ACCURACY = re.compile(
    r"^Top([15])Accuracy is Accuracy\(correct: (\d+), count: (\d+), accuracy: (" + NUM + r")\)")
TEST_LOSS = re.compile(r"^Loss is \(Loss: (" + NUM + r"), count: (\d+), Average Loss: (" + NUM + r")\)")
JAVA_ERROR = re.compile(r"((?:java|scala|org|com)\.[\w.$]*(?:Exception|Error))(?::\s*(.*))?")


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    rows = result.rows
    last_iter = last_epoch = 0
    last_wall = -math.inf
    epoch_done = {}     # epoch -> cumulative wall clock (s) at its end
    thrown = cause = None
    for no, line in lines:
        m = PREFIX.search(line)
        if not m:
            if ("Exception in thread" in line or line.startswith("Caused by:")) and (
                    e := JAVA_ERROR.search(line)):
                # The first uncaught exception, and the last "Caused by:" as its root cause.
                if line.startswith("Caused by:"):
                    cause = e.group(0).strip()[:200]
                elif thrown is None:
                    thrown = e[1]
            continue
        epoch, total, it = int(m[1]), int(m[3]), int(m[4])
        wall, message = float(m[5]), m[6]
        if epoch < last_epoch or it < last_iter or wall < last_wall:
            raise LogError(f"line {no}: epoch {epoch} iteration {it} wall clock {wall}s comes after "
                           f"epoch {last_epoch} iteration {last_iter}: not one run's log in order "
                           "(two logs interleaved or concatenated?)")
        where = dict(step=it, epoch=epoch, wall_clock_s=wall)
        if t := TRAINED.match(message):
            if it == last_iter:
                raise LogError(f"line {no}: iteration {it} is reported twice "
                               "(two logs interleaved or concatenated?)")
            result.meta.setdefault("records_per_iteration", float(t[1]))
            result.meta["epoch_records"] = total
            rows.append(row("throughput_records_per_s", float(t[3]), **where))
            if math.isfinite(loss := float(t[4])):
                rows.append(row("loss", loss, **where))
            else:
                result.meta.setdefault("nonfinite_loss_iterations", []).append(it)
            rows.append(row("wall_clock_s", wall, step=it, epoch=epoch))
            last_iter = it
        elif it != last_iter or last_iter == 0:
            raise LogError(f"line {no}: a report for iteration {it} but the last trained "
                           f"iteration is {last_iter} (two logs interleaved?)")
        elif e := EPOCH_DONE.match(message):
            if epoch in epoch_done:
                raise LogError(f"line {no}: epoch {epoch} finishes twice (two logs interleaved?)")
            total_s = float(e[1]) / 1000.0
            previous = max((s for k, s in epoch_done.items() if k < epoch), default=0.0)
            epoch_done[epoch] = total_s
            rows.append(row("epoch_time_s", round(total_s - previous, 9),
                            step=it, epoch=epoch, wall_clock_s=total_s))
        elif a := ACCURACY.match(message):
            rows.append(row(f"top{a[1]}_accuracy", float(a[4]), **where))
            result.meta["test_records"] = int(a[3])
        elif t := TEST_LOSS.match(message):
            rows.append(row("test_loss", float(t[3]), **where))
        last_epoch, last_wall = epoch, wall
    error = f"{thrown} (caused by {cause})" if thrown and cause else (thrown or cause)
    if error:
        result.meta["error"] = error
    if not rows:
        reason = f"{NO_LINES} BigDL's format: no '[Epoch n a/b][Iteration i][Wall Clock ts]' line"
        if error:
            reason += f"; the log shows {error}"
        return ParseResult.unparseable(reason)
    result.close(None if last_epoch in epoch_done else
                 f"epoch {last_epoch} at iteration {last_iter} has no 'Epoch finished' line",
                 cut=cut)
    if result.finished:
        rows.append(row("train_time_s", epoch_done[last_epoch], epoch=last_epoch))
    elif error:
        result.reason += f"; the log shows {error}"
    return result


parse = line_parser(_parse)
