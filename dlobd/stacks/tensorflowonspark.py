"""TensorFlowOnSpark (TFoS): Yahoo's library that starts a distributed TF cluster inside
Spark executors (TFCluster.run) and feeds it RDD partitions (InputMode.SPARK) or lets TF
read its own data (InputMode.TENSORFLOW). The workload is workloads/tensorflowonspark/train.py.

Parser: reads the driver's log and each executor's stdout/stderr. Two kinds of lines:
- the workload's DLOBD lines (format and rows as in dlobd.stacks.tensorflow), printed by
  each TF node on its executor, and by the driver around the cluster's life
  (`DLOBD event=driver_start`, `DLOBD event=cluster_stopped`);
- TFoS's own Python logging lines, `2026-11-21 21:49:25,629 INFO (MainThread-123) <message>`,
  of which these become events (time as the log prints it, in the host's local zone):
    driver:   Reserving TFSparkNodes | Starting TensorFlow on executors |
              All TFSparkNodes started | Feeding training data |
              Waiting for TensorFlow nodes to complete... | Shutting down cluster
    executor: Starting TensorFlow <job:index> [as <role>] on cluster node ... | Feeding partition ... |
              Processed <n> items in partition | Stopping all queues |
              Setting mgr.state to 'stopped' | Finished TensorFlow <job:index> ...
From the driver's events come time_breakdown_s rows (differences of those timestamps):
  tfos_startup  = All TFSparkNodes started - Reserving TFSparkNodes
  training      = Shutting down cluster  - All TFSparkNodes started
  tfos_shutdown = DLOBD cluster_stopped  - Shutting down cluster
A driver log is finished when it has the cluster_stopped line; a node's log when its
task has its DLOBD summary line.
"""

import re
from datetime import datetime

from dlobd.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, text_lines
from dlobd.stacks.tensorflow import finish, read_dlobd_lines

LOG_FILES = ("stdout.log", "stderr.log", "executors/*/stdout", "executors/*/stderr",
             "containers/*/stdout", "containers/*/stderr")

PYLOG = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) [A-Z]+ \([^)]*\) (.*)$")
DRIVER_EVENTS = {
    "Reserving TFSparkNodes": "reserve_start",
    "Starting TensorFlow on executors": "executors_start",
    "All TFSparkNodes started": "nodes_started",
    "Feeding training data": "feeding_start",
    "Waiting for TensorFlow nodes to complete...": "waiting_for_nodes",
    "Shutting down cluster": "shutdown_start",
    "TensorFlow execution timed out, exiting Spark application with error status": "timed_out",
    "Exiting Spark application with error status.": "error_exit",
}
NODE_EVENTS = (
    (re.compile(r"^Starting TensorFlow (\S+:\d+) (?:as \S+ )?on cluster node (\d+)"), "node_start"),
    (re.compile(r"^Feeding partition "), "feed_partition_start"),
    (re.compile(r"^Processed (\d+) items in partition"), "feed_partition_done"),
    (re.compile(r"^Stopping all queues"), "node_stopping"),
    (re.compile(r"^Setting mgr\.state to 'stopped'"), "node_stopped"),
    (re.compile(r"^Finished TensorFlow (\S+) on cluster node"), "node_finished"),
)
# Driver milestones that occur once per application, in this order.
ONCE = ("dlobd_driver_start", "reserve_start", "nodes_started", "shutdown_start", "dlobd_cluster_stopped")
PHASES = (("tfos_startup", "reserve_start", "nodes_started"),
          ("training", "nodes_started", "shutdown_start"),
          ("tfos_shutdown", "shutdown_start", "dlobd_cluster_stopped"))


def parse(text: str) -> ParseResult:
    try:
        lines, cut = text_lines(text)
        result = ParseResult()
        tasks = read_dlobd_lines(lines, result)
        _tfos_events(lines, result)
        driver = _driver_phases(result)
    except LogError as e:
        return ParseResult.unparseable(str(e))
    if not tasks and not result.events:
        return ParseResult.unparseable(
            f"{NO_LINES} TFoS's or the workload's format: no TFoS logging line and no 'DLOBD event=' line")
    finish(result, tasks, cut)
    if driver and "dlobd_cluster_stopped" not in driver:
        result.finished = False
        last = max(driver, key=lambda k: driver[k]["line"])
        why = f"the driver log ends at '{last}' (line {driver[last]['line']}) before the cluster was stopped"
        result.reason = "; ".join(filter(None, [result.reason, why]))
    return result


def _time(stamp: str, no: int) -> datetime:
    try:
        return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        raise LogError(f"line {no}: {stamp!r} is not a time") from None


def _tfos_events(lines, result: ParseResult) -> None:
    stamps = {}
    for no, line in lines:
        m = PYLOG.match(line)
        if not m:
            continue
        stamp, message = m[1], m[2].rstrip()
        stamps[no] = stamp
        event = DRIVER_EVENTS.get(message)
        detail = None
        if event is None:
            for pattern, name in NODE_EVENTS:
                if p := pattern.match(message):
                    event, detail = name, (p.group(1) if p.groups() else None)
                    break
        if event:
            result.events.append({"time": _time(stamp, no).isoformat(timespec="milliseconds"),
                                  "event": event, "line": no, **({"detail": detail} if detail else {})})
    # The driver's DLOBD lines are logged through the same logging format: give them its time.
    for e in result.events:
        if "time" not in e and e["line"] in stamps:
            e["time"] = _time(stamps[e["line"]], e["line"]).isoformat(timespec="milliseconds")
        e.pop("text", None)
    result.events.sort(key=lambda e: e["line"])


def _driver_phases(result: ParseResult) -> dict:
    seen = {}
    for e in result.events:
        if e["event"] not in ONCE:
            continue
        if e["event"] in seen:
            raise LogError(f"line {e['line']}: '{e['event']}' a second time (line {seen[e['event']]['line']} "
                           "was the first): two driver logs interleaved or concatenated?")
        if "time" not in e:
            raise LogError(f"line {e['line']}: driver event {e['event']} without a timestamp")
        seen[e["event"]] = e
    order = [seen[k] for k in ONCE if k in seen]
    for a, b in zip(order, order[1:]):
        if b["line"] < a["line"] or b["time"] < a["time"]:
            raise LogError(f"line {b['line']}: '{b['event']}' comes before '{a['event']}' "
                           f"(line {a['line']}): not one driver's log in order")
    for phase, start, end in PHASES:
        if start in seen and end in seen:
            seconds = (datetime.fromisoformat(seen[end]["time"]) -
                       datetime.fromisoformat(seen[start]["time"])).total_seconds()
            result.rows.append(row("time_breakdown_s", seconds, phase=phase, task="driver"))
    return seen
