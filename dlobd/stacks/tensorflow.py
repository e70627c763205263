"""Native distributed TensorFlow: the project's workload workloads/tensorflow/train_distributed.py,
one process per TF task (parameter servers + workers, or collective workers) talking gRPC,
configured through TF_CONFIG.

Parser: reads each task's log (its stdout+stderr) for the workload's DLOBD lines
(format in workloads/tensorflow/dlobd_tf.py), e.g.

  DLOBD event=start task=worker:0 workload=tensorflow model=resnet50 batch_size=8 ...
  DLOBD event=warmup task=worker:0 warmup_steps=1 warmup_s=30.2
  DLOBD event=step task=worker:0 step=10 epoch=1 wall_clock_s=12.3 loss=6.9 images_per_s=11.2 steps_per_s=0.7
  DLOBD event=epoch task=worker:0 step=20 epoch=1 wall_clock_s=25.0 epoch_time_s=24.6 top1_accuracy=0.41
  DLOBD event=summary task=worker:0 step=20 epoch=1 train_time_s=24.6 images_per_s=11.4 steps_per_s=0.7 end_to_end_s=31.2

Keys named like a metric of docs/metrics.md become rows in that metric's unit. Summary
values are run totals (empty step). A task's log is finished when it has its summary;
a parameter-server or worker server of the `ps` strategy prints only a start line
(role=server) and is finished by design when the launcher ends it.
The same line format is read for TensorFlowOnSpark (dlobd.stacks.tensorflowonspark).
"""

import math
import re

from dlobd.metrics import METRICS, row
from dlobd.stacks import NO_LINES, LogError, ParseResult, text_lines

LOG_FILES = ("stdout.log", "tasks/*.log")

MARK = "DLOBD "
EVENTS = ("start", "warmup", "step", "epoch", "summary")
# Keys of step/epoch/summary lines that are not metrics.
PLACE_KEYS = ("event", "task", "step", "epoch")
TOKEN = re.compile(r"^([a-z_][a-z0-9_]*)=(\S+)$")


def parse(text: str) -> ParseResult:
    try:
        lines, cut = text_lines(text)
        result = ParseResult()
        tasks = read_dlobd_lines(lines, result)
    except LogError as e:
        return ParseResult.unparseable(str(e))
    if not tasks:
        return ParseResult.unparseable(f"{NO_LINES} the workload's format: no 'DLOBD event=...' line")
    finish(result, tasks, cut)
    return result


def dlobd_fields(no: int, line: str) -> dict | None:
    """The key=value pairs of a DLOBD line, None for other lines; LogError if damaged."""
    at = line.find(MARK + "event=")
    if at < 0:
        return None
    fields = {}
    for token in line[at + len(MARK):].split():
        m = TOKEN.match(token)
        if not m:
            raise LogError(f"line {no}: damaged DLOBD line, {token!r} is not key=value")
        if m[1] in fields:
            raise LogError(f"line {no}: key {m[1]} twice in one DLOBD line (lines run together?)")
        fields[m[1]] = m[2]
    if fields["event"] not in EVENTS + ("driver_start", "cluster_stopped"):
        raise LogError(f"line {no}: unknown DLOBD event {fields['event']!r}")
    return fields


def _number(no: int, key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise LogError(f"line {no}: {key}={text!r} is not a number") from None


def _int(no: int, key: str, fields: dict):
    if key not in fields:
        return None
    value = _number(no, key, fields[key])
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise LogError(f"line {no}: {key}={fields[key]!r} is not a count")
    return int(value)


def read_dlobd_lines(lines, result: ParseResult) -> dict:
    """Add the rows of the training events to `result`; return per-task state.

    State per task: {"started": bool, "server": bool, "summary": bool, "step": last step}.
    Driver events (TFoS) are left to the caller: they come back in result.events.
    """
    tasks = {}
    for no, line in lines:
        fields = dlobd_fields(no, line)
        if fields is None:
            continue
        event = fields["event"]
        if event in ("driver_start", "cluster_stopped"):
            result.events.append({"event": f"dlobd_{event}", "line": no, "text": line})
            continue
        task = fields.get("task")
        if task is None:
            raise LogError(f"line {no}: DLOBD {event} line without task=")
        state = tasks.setdefault(task, {"started": False, "server": False, "summary": False, "step": 0})
        if event == "start":
            if state["started"]:
                raise LogError(f"line {no}: task {task} starts a second time "
                               "(two logs interleaved or concatenated?)")
            state["started"] = True
            state["server"] = fields.get("role") == "server"
            for key, value in fields.items():
                if key not in ("event", "task", "role"):
                    result.meta[key] = value
            continue
        if not state["started"]:
            raise LogError(f"line {no}: task {task} reports {event} before its start line")
        if event == "warmup":
            # Steps trained before the clock started: settings, outside every count.
            if state["step"] or "warmup" in state:
                raise LogError(f"line {no}: task {task} warms up after training started "
                               "(two logs interleaved or concatenated?)")
            state["warmup"] = True
            result.meta.update({k: v for k, v in fields.items() if k not in ("event", "task")})
            continue
        if state["summary"]:
            raise LogError(f"line {no}: task {task} reports {event} after its summary "
                           "(two logs interleaved or concatenated?)")
        step, epoch = _int(no, "step", fields), _int(no, "epoch", fields)
        if step is None:
            raise LogError(f"line {no}: DLOBD {event} line without step=")
        if step < state["step"] or (event == "step" and step == state["step"]):
            raise LogError(f"line {no}: task {task} step {step} after step {state['step']} "
                           "(two logs interleaved or concatenated?)")
        state["step"] = step
        wall = _number(no, "wall_clock_s", fields["wall_clock_s"]) if "wall_clock_s" in fields else None
        for key, text in fields.items():
            if key in PLACE_KEYS:
                continue
            if key not in METRICS:
                raise LogError(f"line {no}: {key} is neither a metric of docs/metrics.md nor one of "
                               f"{', '.join(PLACE_KEYS)}")
            value = _number(no, key, text)
            if not math.isfinite(value):
                result.meta.setdefault("nonfinite", []).append(f"{key} at step {step}")
                continue
            if event == "summary":
                result.rows.append(row(key, value, epoch=epoch, task=task))
            elif key == "wall_clock_s":
                result.rows.append(row(key, value, step=step, epoch=epoch, task=task))
            else:
                result.rows.append(row(key, value, step=step, epoch=epoch, task=task, wall_clock_s=wall))
        if event == "summary":
            state["summary"] = True
    return tasks


def finish(result: ParseResult, tasks: dict, cut: bool) -> None:
    """Set finished/reason: every training task has its summary and no line was cut."""
    missing = sorted(t for t, s in tasks.items() if not s["server"] and not s["summary"])
    result.close(f"task {', '.join(missing)} has no summary line (last step "
                 f"{', '.join(str(tasks[t]['step']) for t in missing)})" if missing else None,
                 cut=cut)
