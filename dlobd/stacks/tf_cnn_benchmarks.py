"""tf_cnn_benchmarks: TensorFlow's CNN benchmark script (github.com/tensorflow/benchmarks,
scripts/tf_cnn_benchmarks), run at a pinned commit with TF 2.x through tf.compat.v1; it
trains AlexNet, ResNet-50, Inception-v3 ... on synthetic or real ImageNet data, locally
or distributed (parameter servers / replicated, over gRPC).

Parser: reads the script's stdout:

  TensorFlow:  2.15
  Model:       alexnet
  Batch size:  8 global
  ...
  Step	Img/sec	total_loss[	top_1_accuracy	top_5_accuracy]
  10	images/sec: 14.2 +/- 0.5 (jitter = 1.5)	6.912
  ----------------------------------------------------------------
  total images/sec: 15.14

Rows: per printed step images_per_s (the script's running mean over the steps since
warm-up, as it prints it), loss (total_loss) and training accuracies when printed; the
run's images_per_s from `total images/sec` (empty step). In a distributed run (Devices
name a `/job:<job>/.../task:<n>`) each worker prints its own rate per step: those rows
are worker_images_per_s with task `<job>:<n>`, while `total images/sec` counts all
workers and stays images_per_s. A non-finite loss (the script
prints `nan` when training diverges) gives no row and is listed in meta. The log is
finished when it has the `total images/sec` line.
"""

import math
import re

from dlobd.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser

LOG_FILES = ("stdout.log", "tasks/*.log")

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
HEADER_FIELD = re.compile(r"^(TensorFlow|Model|Dataset|Mode|Batch size|Num batches|Num epochs|"
                          r"Devices|Data format|Optimizer|Variables):\s+(.*?)\s*$")
COLUMNS = re.compile(r"^Step\tImg/sec\t(.*)$")
STEP = re.compile(r"^(\d+)\timages/sec: (" + NUM + r") \+/- (" + NUM + r") \(jitter = (" + NUM + r")\)\t(.*)$")
TOTAL = re.compile(r"^total images/sec: (" + NUM + r")\s*$")
EVAL = re.compile(r"^Accuracy @ 1 = (" + NUM + r") Accuracy @ 5 = (" + NUM + r") \[(\d+) examples\]")
DEVICE_TASK = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)/")
# Column names of the step table -> metric names.
COLUMN_METRIC = {"total_loss": "loss", "top_1_accuracy": "top1_accuracy", "top_5_accuracy": "top5_accuracy"}


def _task(devices: str) -> str | None:
    """`worker:0` for a distributed run's Devices line, None for a local run."""
    m = DEVICE_TASK.search(devices)
    return f"{m[1]}:{m[2]}" if m else None


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    columns = None
    last_step = 0
    total_line = None
    for no, line in lines:
        if h := HEADER_FIELD.match(line):
            key = h[1].lower().replace(" ", "_")
            if key == "model" and "model" in result.meta:
                raise LogError(f"line {no}: a second 'Model:' header (two logs interleaved or concatenated?)")
            result.meta[key] = h[2]
        elif c := COLUMNS.match(line):
            if columns is not None:
                raise LogError(f"line {no}: a second step table header (two logs interleaved or concatenated?)")
            columns = c[1].split("\t")
            unknown = [name for name in columns if name not in COLUMN_METRIC]
            if unknown:
                raise LogError(f"line {no}: step table column(s) {', '.join(unknown)} unknown to this parser")
        elif s := STEP.match(line):
            if columns is None:
                raise LogError(f"line {no}: a step line before the step table header")
            if total_line is not None:
                raise LogError(f"line {no}: a step line after the total (two logs interleaved?)")
            step = int(s[1])
            if step <= last_step:
                raise LogError(f"line {no}: step {step} after step {last_step} "
                               "(two logs interleaved or concatenated?)")
            last_step = step
            values = s[5].split("\t")
            if len(values) != len(columns):
                raise LogError(f"line {no}: {len(values)} values for the {len(columns)} columns "
                               f"{', '.join(columns)}")
            task = _task(result.meta.get("devices", ""))
            result.rows.append(row("worker_images_per_s", float(s[2]), step=step, task=task) if task
                               else row("images_per_s", float(s[2]), step=step))
            for name, text in zip(columns, values):
                try:
                    value = float(text)
                except ValueError:
                    raise LogError(f"line {no}: {name} {text!r} is not a number") from None
                if math.isfinite(value):
                    result.rows.append(row(COLUMN_METRIC[name], value, step=step, task=task))
                else:
                    result.meta.setdefault("nonfinite", []).append(f"{name} at step {step}")
        elif t := TOTAL.match(line):
            if total_line is not None:
                raise LogError(f"line {no}: a second 'total images/sec' (line {total_line} was the "
                               "first): two logs interleaved or concatenated?")
            total_line = no
            result.rows.append(row("images_per_s", float(t[1]), task=_task(result.meta.get("devices", ""))))
        elif e := EVAL.match(line):
            result.rows.append(row("top1_accuracy", float(e[1])))
            result.rows.append(row("top5_accuracy", float(e[2])))
            total_line = total_line or no
    if not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} tf_cnn_benchmarks' format: no step line and no 'total images/sec' line")
    return result.close(f"no 'total images/sec' line (last step printed: {last_step})"
                        if total_line is None else None, cut=cut)


parse = line_parser(_parse)
