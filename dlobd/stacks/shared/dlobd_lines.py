"""The DLOBD line that the project's TensorFlow programs print (workloads/README.md, "The DLOBD
line"): one event per line, key=value pairs, read into rows and per-task state. Native TF and
TensorFlowOnSpark read their runs' logs through this.
"""

import math
import re

from dlobd.spec.metrics import METRICS, row
from dlobd.stacks import LogError, ParseResult

MARK = "DLOBD "
EVENTS = ("start", "warmup", "step", "epoch", "summary")
# Keys of step/epoch/summary lines that are not metrics.
PLACE_KEYS = ("event", "task", "step", "epoch")
TOKEN = re.compile(r"^([a-z_][a-z0-9_]*)=(\S+)$")
# TensorFlow 1.x's SessionManager, while a worker that is not the chief finds the variables not
# yet initialized; it looks again every 30 s (recovery_wait_secs)
WAITING_FOR_CHIEF = "Waiting for model to be ready."


def phases(result: ParseResult, task: str, state: dict, end_to_end: float | None) -> None:
    """At a task's summary, the time_breakdown_s rows of the task that leads the training
    (docs/metrics.md, phases): `training` = wall_clock_s of its last step line, i.e. from the
    start of the first counted step (the workload's clock starts there, after any warm-up)
    to the end of the last one; `data_loading` = the data_loading_s of its start line
    (reading the data set from disk; absent for data generated in the graph); `tf_startup`
    = the rest of its end_to_end_s (importing TF, joining the cluster, building the model,
    warm-up steps, evaluation).

    One task per run leads, so summing the phases of a run counts each once: the chief (ps
    strategy), worker:0 (collective: the others run the same steps in lockstep), or local:0.
    """
    start = state["start"]
    if not (task.startswith("chief:") or task == "local:0"
            or (task == "worker:0" and start.get("strategy") == "collective")):
        return
    spans = {}
    if "data_loading_s" in start:
        spans["data_loading"] = float(start["data_loading_s"])
    if state.get("last_wall") is not None:
        spans["training"] = state["last_wall"]
    if end_to_end is not None:
        # the rest of the task's life, so that the phases add up to its end_to_end_s
        spans["tf_startup"] = max(0.0, end_to_end - sum(spans.values()))
    for phase, seconds in spans.items():
        result.rows.append(row("time_breakdown_s", seconds, phase=phase, task=task))


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

    State per task: {"started": bool, "server": bool, "summary": bool, "step": last step,
    "start": the start line's fields, "last_wall": wall_clock_s of the last step line,
    "waiting": TF's session waited for the chief's variables after the task's start, and no step
    line has come since}. Driver events (TFoS) are left to the caller: they come back in
    result.events.
    """
    tasks = {}
    for no, line in lines:
        fields = dlobd_fields(no, line)
        if fields is None:
            if WAITING_FOR_CHIEF in line:
                # TF's line names no task: it is the task's where one alone has started and not stepped
                waiting = [s for s in tasks.values() if s["started"] and not s["server"]
                           and not s["summary"] and "last_wall" not in s]
                if len(waiting) == 1:
                    waiting[0]["waiting"] = True
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
            state["start"] = fields
            if "data_loading_s" in fields:
                _number(no, "data_loading_s", fields["data_loading_s"])
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
        state["waiting"] = False
        wall = _number(no, "wall_clock_s", fields["wall_clock_s"]) if "wall_clock_s" in fields else None
        if event == "step":
            state["last_wall"] = wall
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
            phases(result, task, state,
                    _number(no, "end_to_end_s", fields["end_to_end_s"]) if "end_to_end_s" in fields else None)
    return tasks


def finish(result: ParseResult, tasks: dict, cut: bool) -> None:
    """Set finished/reason: every training task has its summary and no line was cut. A task
    whose log ends while its session waits for the chief's variables did not stop short: it
    trained no step before the run ended (as a worker whose feed held nothing). It is named in
    meta `waiting_for_chief`."""
    missing = sorted(t for t, s in tasks.items() if not s["server"] and not s["summary"])
    waiting = [t for t in missing if tasks[t].get("waiting")]
    stopped = [t for t in missing if t not in waiting]
    if waiting:
        result.meta["waiting_for_chief"] = waiting
    result.close(f"task {', '.join(stopped)} has no summary line (last step "
                 f"{', '.join(str(tasks[t]['step']) for t in stopped)})" if stopped else None,
                 cut=cut)
