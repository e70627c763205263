"""TensorFlowOnSpark (TFoS): Yahoo's library that starts a distributed TF cluster inside
Spark executors (TFCluster.run) and feeds it RDD partitions (InputMode.SPARK) or lets TF
read its own data (InputMode.TENSORFLOW). The workload is workloads/tensorflowonspark/train.py
(TFoS 2.x, TensorFlow 2), on the paper profile workloads/tensorflowonspark/train_tf1.py (TFoS
1.0.8, TensorFlow 1.x; see the end of this docstring).

Parser: reads the driver's log and each executor's stdout/stderr. Two kinds of lines:
- the workload's DLOBD lines (format and rows as in dlobd.stacks.tensorflow), printed by
  each TF node on its executor, and by the driver around the cluster's life
  (`DLOBD event=driver_start`, `DLOBD event=cluster_stopped`);
- TFoS's own Python logging lines, `2026-11-21 21:49:25,629 INFO (MainThread-123) <message>`,
  of which these become events (time as the log prints it, in the host's local zone; the
  launcher makes that UTC):
    driver:   Reserving TFSparkNodes | Starting TensorFlow on executors |
              All TFSparkNodes started | Feeding training data |
              Waiting for TensorFlow nodes to complete... | Shutting down cluster
    executor: Starting TensorFlow <job:index> [as <role>] on cluster node ... | Feeding partition ... |
              Processed <n> items in partition | Stopping all queues |
              Setting mgr.state to 'stopped' | Finished TensorFlow <job:index> ... |
              Training <job:index> starts its first step   (the workload's own line)
A driver log alone gives the driver's spans as time_breakdown_s rows with task=driver
(differences of its timestamps):
  tfos_startup  = All TFSparkNodes started - Reserving TFSparkNodes
  training      = Shutting down cluster  - All TFSparkNodes started
  tfos_shutdown = DLOBD cluster_stopped  - Shutting down cluster
A driver log is finished when it has the cluster_stopped line; a node's log when its
task has its DLOBD summary line, or when, under TF 1.x, it ends while the task's session waits
for the chief's variables ("Waiting for model to be ready."): that task trained no step, and
meta `waiting_for_chief` names it (dlobd_lines.finish).

Logs of other workloads (no DLOBD line), from TFoS before 1.0 to 1.4 on TensorFlow 1.x: the
same TFoS milestones (up to 1.1 a node starts `Starting TensorFlow worker:0 on cluster node 1
on background process`, from 1.2 `... worker:0 as worker on cluster node 1 ...`; before 1.0
the driver logs `Starting TensorFlow` and `Stopping TensorFlow nodes`, and neither 'All
TFSparkNodes started' nor 'Shutting down cluster'), and TF 1.x's own training lines, behind
TFoS's logging format (TFoS 1.x routes TF's logger through it), TF 1.x's `INFO:tensorflow:` or absl's
`I0807 09:57:44.788796 140518901212992 file.py:271] `:
  loss = 65.8497, step = 1641531 (12.828 sec)   -> loss at that (global) step
  global_step/sec: 7.8                          -> steps_per_s
  Loss for final step: 37.241173.               -> meta final_loss
with task `<job>:<index>` when the log names one node. Such a driver log is finished at
'Shutting down cluster' (before 1.0: 'Stopping TensorFlow nodes'), a node's log at its
'Finished TensorFlow <job>:<index>' line. A driver that runs clusters one after another (TFoS's
demo notebook trains, then infers) gives the first one's spans and says so in meta. Where
absl took over Python's logging (TFoS 1.4 on TensorFlow 1.14), TFoS's own lines carry absl's
prefix too (`I0807 09:57:44.789118 140518901212992 TFSparkNode.py:337] Starting TensorFlow
worker:3 as worker ...`): their events keep that year-less stamp as `clock` and give no spans.

A run on YARN (`parse_records`, called by dlobd.stacks.parse_run) has more: the
ResourceManager's record of the application (`yarn/<app_id>.json`) and Spark's event log
(`spark-events/<app_id>`). From them, the driver's lines and the chief's lines comes the
run's breakdown into six phases that tile the application's life, submission to end
(docs/metrics.md, "Phases of a TensorFlowOnSpark run on YARN"), and its end_to_end_s; they
replace the per-file spans above, and the nodes' end_to_end_s (a node process's lifetime,
kept in meta as node_end_to_end_s).

Launcher: stages the point's data set ($DLOBD_DATA_DIR/mnist or cifar10-synthetic) into
HDFS (prepare.log), then `spark-submit --master yarn` of train.py with one TF node per
executor (1 core, one task at a time, no dynamic allocation): executors = the point's
`gpus` (fig5b; CPU worker processes here) or the fixed `workers` (fig9; TFoS 2.x's
MultiWorkerMirroredStrategy has no parameter servers, so `parameter_servers` takes no
executor), the input mode from the fixed `mode`, the point's network as TF's protocol
(config/networks.yaml: gRPC, or grpc+verbs with the tf-rdma Python, else not runnable) and
the TF nodes' addresses. One run_command with the run's YARN tag: a time limit kills the
application, and its RM record and container logs land in the attempt.

The paper profile (DLOBD_PROFILE=paper; its one version set with TFoS is paper-tfos-bigdl:
TFoS 1.0.8, TensorFlow 1.4.0, Spark 2.1.0) runs train_tf1.py instead, as the paper's TFoS 1.0
did: parameter servers (fixed `parameter_servers`, else 1, labelled as the launcher's choice)
and `gpus`/`workers` TF workers, one executor each, in a Python Spark 2.1.0's PySpark runs on
(3.5 or 2.7, SPARK-19019) that carries TFoS 1.0.8 and TensorFlow 1.4.0: DLOBD_TFOS_PYTHON
(dlobd_stack_settings; without it, on the spack and registry methods, the wrapper of the paper
image's Python 2.7; role python_env checks either on every host), or DLOBD_TF_RDMA_PYTHON for
the points of TF's verbs channel (which then needs TFoS 1.0.8 too) and, where the site gives it,
for the other points too, as native TF's (tf_cluster.transport): one TF build on both sides of a
comparison (label tf_build). Without either the points are not runnable, naming the setting. `mode: parameter server` (fig5b) is the strategy, not an
input mode: such points, and those without a mode, are fed from RDDs (InputMode.SPARK, the
launcher's choice, labelled). The stacks' Python keeps the project's own helpers (the
monitor's psutil). Spark 2.1 knows the executors' memory overhead as
spark.yarn.executor.memoryOverhead. A GPU point (device not cpu) gives every executor a
container sized so that YARN, which schedules memory and no GPUs, places at most the point's
`gpus_per_node` of them on a node (the parameter servers' among them), and CUDA's libraries
(DLOBD_CUDA_LIBRARY_PATH) as their library path (gpu_executors). In a rehearsal on a site whose
CPU processes stand in for GPUs (capabilities.standing_in), a GPU point keeps that layout on the
gpu group's workers and its TF workers run `--num-gpus 0` (label num_gpus) in whatever build the
site gives, CUDA or not; elsewhere a CPU-only TensorFlow refuses a GPU point. On a cluster of several
workers a CPU point's containers are sized alike so that they spread evenly, one TF node per
node where they are as many (spread_executors), in both profiles. train_tf1.py runs under
Spark 2.1 on YARN in the paper image (make test-paper-profile); its TF nodes also train on
TensorFlow 1.4.0 without Spark (tests/tf1_harness.py).
"""

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.spec import networks
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, runner, text_lines
from dlobd.stacks.shared import tf_cluster
from dlobd.stacks.shared.dlobd_lines import finish, read_dlobd_lines

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
    # TFoS before 1.0 (February 2017): no 'All TFSparkNodes started' and no 'Shutting down
    # cluster'; 'Stopping TensorFlow nodes' (also 1.x's, before 'Shutting down cluster') ends it
    "Reserving TFSparkNodes w/ TensorBoard": "reserve_start",
    "Starting TensorFlow": "executors_start",
    "Stopping TensorFlow nodes": "nodes_stopping",
    "Feeding inference data": "inference_feeding_start",
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
    (re.compile(r"^Training (\S+) starts its first step"), "train_start"),
)
# TF 1.x's own training lines in a node's log, behind one of three prefixes: TFoS's logging
# format (TFoS 1.x sets up the root logger, which TF's logger goes through), TF 1.x's default
# "INFO:tensorflow:", or absl's "I0807 09:57:44.788796 140518901212992 file.py:271] " (TF 1.14 on)
NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
ABSL = re.compile(r"^[IWEF](\d{4}) (\d\d:\d\d:\d\d\.\d+)\s+\d+ [\w.]+:\d+\] (.*)$")
TF1_PREFIX = "INFO:tensorflow:"
TF_LOSS = re.compile(r"^loss = (" + NUM + r"), step = (\d+)(?: \((?:" + NUM + r") sec\))?\s*$")
TF_RATE = re.compile(r"^global_step/sec: (" + NUM + r")\s*$")
TF_FINAL = re.compile(r"^Loss for final step: (" + NUM + r")\.\s*$")
# The line of each driver milestone that ends a cluster, for the reason when it is missing.
SHUTDOWN_LINE = {"shutdown_start": "Shutting down cluster", "nodes_stopping": "Stopping TensorFlow nodes"}
# Driver milestones that occur once per TF cluster, in this order.
ONCE = ("dlobd_driver_start", "reserve_start", "nodes_started", "nodes_stopping", "shutdown_start",
        "dlobd_cluster_stopped")
PHASES = (("tfos_startup", "reserve_start", "nodes_started"),
          ("training", "nodes_started", "shutdown_start"),
          ("tfos_shutdown", "shutdown_start", "dlobd_cluster_stopped"))


def parse(text: str) -> ParseResult:
    try:
        lines, cut = text_lines(text)
        result = ParseResult()
        tasks = read_dlobd_lines(lines, result)
        # a TF node's start-up inside TFoS is the driver's tfos_startup span, not native TF's
        result.rows = [r for r in result.rows if r.get("phase") != "tf_startup"]
        _tfos_events(lines, result)
        # a log of this project's workload has its DLOBD lines; any other run's, TF's own
        ours = bool(tasks) or any(e["event"].startswith("dlobd_") for e in result.events)
        clusters = _driver_phases(result, several=not ours)
        if not ours:
            _tf_training_lines(lines, result)
    except LogError as e:
        return ParseResult.unparseable(str(e))
    if not tasks and not result.events and not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} TFoS's or the workload's format: no TFoS logging line, no TF training "
            "line and no 'DLOBD event=' line")
    finish(result, tasks, cut)
    # the driver's end (of its last cluster): our workload's cluster_stopped line, else TFoS's
    # own last milestone, which TFoS before 1.0 words differently
    driver = clusters[-1]
    end = ("dlobd_cluster_stopped" if ours else
           "shutdown_start" if "nodes_started" in driver else "nodes_stopping")
    why = None
    if driver and end not in driver:
        last = max(driver, key=lambda k: driver[k]["line"])
        why = (f"the driver log ends at '{last}' (line {driver[last]['line']}) before the cluster was "
               + ("stopped" if ours else f"shut down ('{SHUTDOWN_LINE[end]}')"))
    elif not ours and not driver and not any(e["event"] == "node_finished" for e in result.events):
        why = "the node's log has no 'Finished TensorFlow' line"
    if why and result.reason:
        result.finished = False
        result.reason += f"; {why}"
    elif why:
        result.close(why, cut=cut)
    return result


def _message(line: str) -> str | None:
    """The message of a line behind TFoS's logging format, TF 1.x's "INFO:tensorflow:" or absl's
    prefix; None for any other line."""
    if m := PYLOG.match(line):
        return m[2]
    if line.startswith(TF1_PREFIX):
        return line[len(TF1_PREFIX):]
    return a[3] if (a := ABSL.match(line)) else None


def _tf_training_lines(lines, result: ParseResult) -> None:
    """Rows of TF 1.x's own training lines (another workload's node log): loss per step,
    global_step/sec, and the final loss in meta. Steps must grow, as in one node's log."""
    last_step, last_no = -1, None
    for no, line in lines:
        message = _message(line)
        if message is None:
            continue
        if loss := TF_LOSS.match(message):
            step = int(loss[2])
            if step <= last_step:
                raise LogError(f"line {no}: step {step} after step {last_step} (line {last_no}): "
                               "not one node's log in order (two logs interleaved or concatenated?)")
            last_step, last_no = step, no
            if math.isfinite(value := float(loss[1])):
                result.rows.append(row("loss", value, step=step))
            else:
                result.meta.setdefault("nonfinite", []).append(f"loss at step {step}")
        elif rate := TF_RATE.match(message):
            result.rows.append(row("steps_per_s", float(rate[1])))
        elif final := TF_FINAL.match(message):
            result.meta["final_loss"] = float(final[1])
    nodes = {e["detail"] for e in result.events if e["event"] in ("node_start", "node_finished")}
    if len(nodes) == 1:  # the log of one TF node: its rows are that node's
        task = nodes.pop()
        result.rows = [{**r, "task": task} if r["metric"] in ("loss", "steps_per_s") else r
                       for r in result.rows]


def _time(stamp: str, no: int) -> datetime:
    try:
        return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        raise LogError(f"line {no}: {stamp!r} is not a time") from None


def _tfos_events(lines, result: ParseResult) -> None:
    stamps = {}
    for no, line in lines:
        if m := PYLOG.match(line):
            stamp, message = m[1], m[2].rstrip()
            stamps[no] = stamp
            when = {"time": _time(stamp, no).isoformat(timespec="milliseconds")}
        elif a := ABSL.match(line):
            # absl's stamp has no year: the event keeps it as printed, and gives no span
            message, when = a[3].rstrip(), {"clock": f"{a[1]} {a[2]}"}
        else:
            continue
        event = DRIVER_EVENTS.get(message)
        detail = None
        if event is None:
            for pattern, name in NODE_EVENTS:
                if p := pattern.match(message):
                    event, detail = name, (p.group(1) if p.groups() else None)
                    break
        if event:
            result.events.append({**when, "event": event, "line": no, **({"detail": detail} if detail else {})})
    # The driver's DLOBD lines are logged through the same logging format: give them its time.
    for e in result.events:
        if "time" not in e and e["line"] in stamps:
            e["time"] = _time(stamps[e["line"]], e["line"]).isoformat(timespec="milliseconds")
        e.pop("text", None)
    result.events.sort(key=lambda e: e["line"])


def _driver_phases(result: ParseResult, several: bool) -> list[dict]:
    """The driver's milestones, one dict per TF cluster the log holds, and the driver's spans of
    the first cluster as rows. `several`: a driver program may run clusters one after another
    (another workload's: TFoS's demo trains, then infers); a milestone seen a second time
    before its cluster's shutdown is two logs interleaved."""
    clusters = [{}]
    for e in result.events:
        if e["event"] not in ONCE:
            continue
        seen = clusters[-1]
        if e["event"] in seen:
            ended = seen.get("shutdown_start") or seen.get("nodes_stopping")
            if not (several and e["event"] == "reserve_start" and ended and "time" in e
                    and e["time"] >= ended["time"]):
                raise LogError(f"line {e['line']}: '{e['event']}' a second time (line {seen[e['event']]['line']} "
                               "was the first): two driver logs interleaved or concatenated?")
            seen = {}
            clusters.append(seen)
        if "time" not in e and "clock" not in e:
            raise LogError(f"line {e['line']}: driver event {e['event']} without a timestamp")
        seen[e["event"]] = e
    for seen in clusters:
        order = [seen[k] for k in ONCE if k in seen]
        for a, b in zip(order, order[1:]):
            if b["line"] < a["line"] or ("time" in a and "time" in b and b["time"] < a["time"]):
                raise LogError(f"line {b['line']}: '{b['event']}' comes before '{a['event']}' "
                               f"(line {a['line']}): not one driver's log in order")
    first = clusters[0]
    if len(clusters) > 1:
        result.meta["driver_clusters"] = len(clusters)
        result.meta["driver_cluster_read"] = (
            f"the first (lines {min(e['line'] for e in first.values())}-"
            f"{max(e['line'] for e in first.values())}): its spans are the time_breakdown_s rows; the "
            "later clusters' milestones are events only")
    for phase, start, end in PHASES:
        if "time" in first.get(start, {}) and "time" in first.get(end, {}):
            seconds = (datetime.fromisoformat(first[end]["time"]) -
                       datetime.fromisoformat(first[start]["time"])).total_seconds()
            result.rows.append(row("time_breakdown_s", seconds, phase=phase, task="driver"))
    return clusters


# ---------------------------------------------------------------- a run on YARN

RECORD_FILES = ("yarn/*.json", "spark-events/*")  # the RM's record, Spark's event log
# The boundaries of a run on YARN in time order, and the phase each one ends (docs/metrics.md).
BOUNDARIES = (("submitted", None), ("executors_registered", "yarn_scheduling"),
              ("reserve_start", "data_loading"), ("training_start", "tfos_startup"),
              ("training_end", "training"), ("shutdown_start", "spark_jobs"),
              ("application_end", "tfos_shutdown"))
LEAD = "chief:"  # train.py names its first node chief; its clock is the run's training phase


def parse_records(run_dir, result: ParseResult) -> None:
    """Complete a run's combined result (dlobd.stacks.parse_run) with the breakdown of a run on
    YARN: six time_breakdown_s phases that tile submission .. application end, and that span
    as end_to_end_s. Raises LogError for records that cannot be read or do not agree."""
    run_dir = Path(run_dir)
    records, event_logs = (sorted(p for p in run_dir.glob(g) if p.is_file()) for g in RECORD_FILES)
    lead_training = [r for r in result.rows if r["metric"] == "time_breakdown_s"
                     and r.get("phase") == "training" and str(r.get("task", "")).startswith(LEAD)]
    if not records and not event_logs:
        # Spark standalone: no breakdown; `training` is the lead node's, not the driver's span
        if lead_training:
            result.rows = [r for r in result.rows if not (
                r["metric"] == "time_breakdown_s" and r.get("phase") == "training" and r.get("task") == "driver")]
        return
    if len(event_logs) != 1:
        raise LogError(f"spark-events/ holds {len(event_logs)} event logs; a TFoS run is one Spark application")
    spark = _spark_events(event_logs[0], run_dir)
    app = _rm_record(records, spark["app_id"], run_dir)
    at = {"submitted": _from_ms(app["startedTime"]),
          "executors_registered": spark["executors_registered"],
          "application_end": spark["application_end"]}
    used = [app["_log"], spark["log"]]
    for event in ("reserve_start", "shutdown_start"):
        found = [e for e in result.events if e["event"] == event and "time" in e]
        if found:
            at[event] = datetime.fromisoformat(found[0]["time"])
            used.append(found[0].get("log"))
    starts = [e for e in result.events if e["event"] == "train_start" and "time" in e
              and e.get("detail", "").startswith(LEAD)]
    if starts and lead_training:
        at["training_start"] = datetime.fromisoformat(starts[0]["time"])
        at["training_end"] = at["training_start"] + timedelta(seconds=lead_training[0]["value"])
        used += [starts[0].get("log"), lead_training[0].get("log")]
    result.events += [{"time": _from_ms(app[key]).isoformat(timespec="milliseconds"), "event": event,
                       "log": app["_log"]}
                      for event, key in (("yarn_submitted", "startedTime"), ("yarn_am_launched", "launchTime"))
                      if app.get(key)]
    missing = [BOUNDARY_SOURCES[name] for name, _ in BOUNDARIES if at.get(name) is None]
    # a run on YARN has the whole breakdown or none: the per-file spans are not its phases
    result.rows = [r for r in result.rows if r["metric"] != "time_breakdown_s"]
    if missing:
        result.finished = False
        why = "no breakdown of the run on YARN: missing " + "; ".join(missing)
        result.reason = "; ".join(filter(None, [result.reason, why]))
        return
    # TFoS 1.0.x logs 'Shutting down cluster' as its shutdown job starts, which hands the nodes
    # their end of feed and waits for them: the chief may still drain its queue then. Those last
    # steps are training; spark_jobs is empty and the shutdown phase starts after them.
    overlap = (at["training_end"] - at["shutdown_start"]).total_seconds()
    if overlap > 0:
        at["shutdown_start"] = at["training_end"]
        result.meta["shutdown_before_last_step_s"] = round(overlap, 6)
    for (a, _), (b, _) in zip(BOUNDARIES, BOUNDARIES[1:]):
        if at[b] < at[a]:
            raise LogError(f"{b} ({at[b].isoformat(timespec='milliseconds')}) comes before {a} "
                           f"({at[a].isoformat(timespec='milliseconds')}): not one run's records, or "
                           "the TFoS log times are not UTC (the launcher runs them with TZ=UTC)")
    used = " + ".join(dict.fromkeys(filter(None, used)))
    nodes = {r["task"]: r["value"] for r in result.rows if r["metric"] == "end_to_end_s" and r.get("task")}
    if nodes:
        result.meta["node_end_to_end_s"] = nodes
    result.rows = [r for r in result.rows if r["metric"] != "end_to_end_s"]
    for (a, _), (b, phase) in zip(BOUNDARIES, BOUNDARIES[1:]):
        result.rows.append({**row("time_breakdown_s", (at[b] - at[a]).total_seconds(), phase=phase), "log": used})
    total = (at["application_end"] - at["submitted"]).total_seconds()
    result.rows.append({**row("end_to_end_s", total), "log": used})


# Where each boundary comes from, for the reason when one is missing.
BOUNDARY_SOURCES = {
    "submitted": "the ResourceManager's startedTime",
    "executors_registered": "Spark's ExecutorAdded events before the first job",
    "reserve_start": "the driver's 'Reserving TFSparkNodes' line",
    "training_start": f"the {LEAD}0 node's 'Training ... starts its first step' line",
    "training_end": f"the {LEAD}0 node's DLOBD step lines (its training phase)",
    "shutdown_start": "the driver's 'Shutting down cluster' line",
    "application_end": "Spark's ApplicationEnd event (an event log still .inprogress: the "
                       "application did not end)",
}


def _from_ms(ms) -> datetime:
    """Epoch milliseconds (the ResourceManager's and Spark's times) as naive UTC."""
    return datetime.fromtimestamp(int(ms) / 1000, timezone.utc).replace(tzinfo=None)


def _spark_events(path: Path, run_dir: Path) -> dict:
    """From Spark's event log: the application id, when its last initial executor registered
    (the last ExecutorAdded before the first JobStart) and ApplicationEnd."""
    rel = str(path.relative_to(run_dir))
    out = {"log": rel, "app_id": None, "application_end": None, "executors_registered": None}
    added, first_job = [], None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for no, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # cut mid-line (a killed application): not read
            try:
                event = json.loads(line)
                name = event["Event"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise LogError(f"{rel} line {no}: not a Spark listener event (JSON with 'Event')") from None
            try:
                if name == "SparkListenerApplicationStart":
                    out["app_id"] = event["App ID"]
                elif name == "SparkListenerExecutorAdded":
                    added.append(int(event["Timestamp"]))
                elif name == "SparkListenerJobStart" and first_job is None:
                    first_job = int(event["Submission Time"])
                elif name == "SparkListenerApplicationEnd":
                    out["application_end"] = _from_ms(event["Timestamp"])
            except (KeyError, TypeError, ValueError):
                raise LogError(f"{rel} line {no}: {name} without its time stamp") from None
    if out["app_id"] is None:
        raise LogError(f"{rel}: no SparkListenerApplicationStart with the application's id")
    initial = [t for t in added if first_job is None or t <= first_job]
    if initial:
        out["executors_registered"] = _from_ms(max(initial))
    return out


def _rm_record(paths: list, app_id: str, run_dir: Path) -> dict:
    """The ResourceManager's record of the application the event log belongs to."""
    for path in paths:
        rel = str(path.relative_to(run_dir))
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise LogError(f"{rel}: not a ResourceManager application record: {exc}") from None
        if record.get("id") == app_id:
            if not record.get("startedTime"):
                raise LogError(f"{rel}: no startedTime (the application's submission)")
            return {**record, "_log": rel}
    raise LogError(f"yarn/ has no ResourceManager record of {app_id}, the application of the event log")


# ---------------------------------------------------------------- launcher

TRAIN = Path(__file__).resolve().parents[2] / "workloads" / "tensorflowonspark" / "train.py"
# The paper profile's workload (TFoS 1.0 on TensorFlow 1.x), its Python's setting and what that
# Python carries (the version set paper-tfos-bigdl of the playbooks' shared settings)
TRAIN_TF1 = TRAIN.with_name("train_tf1.py")
PAPER_TENSORFLOW, PAPER_TFOS = "1.4.0", "1.0.8"
PAPER_PYSPARK_PYTHON = "3.5 or 2.7"   # the newest Spark 2.1.0's PySpark runs on (SPARK-19019)
# The workload axis (or, without one, the spec's data set) -> the train.py model and the data
# set under $DLOBD_DATA_DIR. No registry carries CIFAR-10: its stand-in is labelled synthetic.
WORKLOADS = {"mnist": ("mnist_softmax", "mnist"), "cifar10": ("cifar10_cnn", "cifar10-synthetic")}
INPUT_MODES = {"InputMode.SPARK": "spark", "InputMode.TENSORFLOW": "tensorflow"}
HDFS_DATA = "/dlobd/data"
# One TF node per executor: one core each, one task at a time.
EXECUTOR_CORES = 1
# The executor JVM (heap) holds the cached training RDD, a few MB at local scale. Its Python
# processes (pyspark's daemon and worker, TFoS's node process and manager, with TF 2.15
# loaded) measured ~1 GB RSS together on a cifar10 point: YARN counts them as the container's
# overhead. Two executors and the AM take 4 of the 5.9 GB YARN has here.
EXECUTOR_MEMORY_MB = 512
EXECUTOR_OVERHEAD_MB = 1024
LOG_EVERY = 10


@dataclass(frozen=True)
class Placement:
    """Where a point's TF traffic goes: the network's transport (protocol), the TFoS
    reservation server's address, the TF nodes' address (None: TFoS picks each executor's
    own) and the Python of driver and executors."""

    transport: networks.Transport
    server_host: str | None
    node_host: str | None
    python: str
    # the paper profile's TFoS 1.0.8 on TensorFlow 1.x (train_tf1.py), not TFoS 2.x
    tf1: bool = False
    # TFoS 1.0.8 registers each executor at its default-route address and has no TFOS_SERVER_HOST:
    # train_tf1.py rewrites those (Ansible's default_ipv4 of each worker, else its Ethernet
    # address) to this network's (their cluster, IPoIB, addresses), so an IPoIB point's traffic
    # is not carried by the Ethernet
    address_map: tuple = ()
    # which setting's Python runs the point (label tf_build)
    tf_build: str = tf_cluster.STACKS_BUILD


def tf_nodes(point: dict, fixed: dict) -> int:
    """TF nodes = Spark executors. fig5b's `gpus` counts TensorFlow workers (one CPU worker
    process per GPU at local scale); fig9's `workers` are the TF workers. TFoS 2.x trains with
    MultiWorkerMirroredStrategy, whose collective all-reduce replaces the parameter servers:
    `parameter_servers` gets no executor (the spec's notes say so)."""
    for where, key in ((point, "gpus"), (fixed, "workers")):
        if key in where:
            n = int(where[key])
            if n < 1:
                raise ValueError(f"{key}={where[key]!r}: TFoS needs at least one TF node")
            return n
    raise ValueError("the point has no `gpus` and the scale's fixed parameters no `workers`: "
                     "how many TF nodes?")


def workload(ctx: runner.RunContext) -> tuple[str, str, str]:
    """(workload name, train.py model, data set directory name) of the point."""
    scale = ctx.spec.get("scales", {}).get(ctx.scale, {})
    name = str(ctx.point.get("workload") or scale.get("dataset") or ctx.spec.get("dataset"))
    if name not in WORKLOADS:
        raise ValueError(f"workload {name!r}: the TFoS launcher knows {', '.join(WORKLOADS)}")
    return (name, *WORKLOADS[name])


def input_mode(fixed: dict) -> str:
    mode = str(fixed.get("mode", "InputMode.SPARK"))
    if mode not in INPUT_MODES:
        raise NotRunnable(f"mode {mode!r}: the TFoS workload runs InputMode.SPARK or "
                               "InputMode.TENSORFLOW with MultiWorkerMirroredStrategy (TFoS 2.x); "
                               "TFoS 1.x's parameter-server mode is not in it")
    return INPUT_MODES[mode]


def per_workload(value, name: str):
    """A fixed parameter given once or per workload ({cifar10: 2048, mnist: 10000})."""
    return value.get(name) if isinstance(value, dict) else value


def placement(network: str, env: dict) -> Placement:
    """The point's network as TFoS settings (config/networks.yaml via dlobd.spec.networks).

    NotRunnable when the cluster lacks the network's path: RDMA is TF's grpc+verbs protocol,
    in no TF 2.x wheel (capability tf-rdma: a Python whose TensorFlow has the verbs channel,
    given as DLOBD_TF_RDMA_PYTHON; the driver and the executors then run it). On the paper
    profile (DLOBD_PROFILE=paper) the other points run that Python too where the site gives it,
    as native TF's do (tf_cluster.transport: the two sides of a comparison differ in transport
    only), else DLOBD_TFOS_PYTHON (tfos_python). Every paper-profile point runs
    train_tf1.py (tf1), whose nodes a non-Ethernet point moves from the workers'
    default-route (else Ethernet) addresses, where TFoS 1.0.8 registers them, to their cluster ones
    (address_map)."""
    transport = networks.resolve("tensorflowonspark", network)
    lacking = capabilities.network_missing("tensorflowonspark", network)
    if lacking:
        raise NotRunnable(f"network {network}: TensorFlow protocol {transport.settings['protocol']} "
                               f"({transport.transport}) needs what this cluster lacks: {'; '.join(lacking)}")
    tf1 = env.get("DLOBD_PROFILE") == "paper"
    if "tf-rdma" in transport.needs or tf1 and env.get("DLOBD_TF_RDMA_PYTHON"):
        python, build = env["DLOBD_TF_RDMA_PYTHON"], tf_cluster.RDMA_BUILD
    elif tf1:
        python, build = tfos_python(env), tf_cluster.TFOS_BUILD
    else:
        python, build = env["DLOBD_PYTHON"], Placement.tf_build
    workers = provenance.workers() or ["127.0.0.1"]
    if transport.address == "loopback":
        if not all(provenance.is_local_address(w) for w in workers):
            raise NotRunnable(f"network {network}: loopback needs every executor on this host; "
                              f"the cluster's workers are {hadoop.named(workers)}")
        return Placement(transport, "127.0.0.1", "127.0.0.1", python, tf1, tf_build=build)
    server = env.get("TFOS_SERVER_HOST") or env.get("DLOBD_CLUSTER_ADDRESS")
    address_map = ()
    if tf1 and transport.address != "ethernet":
        # where TFoS 1.0.8 registers each worker's executors: its default route's address, known
        # once provisioned, else (a dry run of an inventory) its Ethernet one
        registered = {**provenance.ethernet_addresses(), **provenance.default_route_addresses()}
        address_map = tuple(sorted((at, w) for w, at in registered.items() if w in workers and at != w))
    # one worker: every node on its address; several: TFoS takes each executor's own address
    return Placement(transport, server, workers[0] if len(workers) == 1 else None, python, tf1,
                     address_map, build)


def tfos_python(env: dict) -> str:
    """The paper profile's Python of TFoS's driver and executors (DLOBD_TFOS_PYTHON); NotRunnable
    where the cluster gives none: the stacks' Python 3.11 runs neither TensorFlow 1.x nor Spark
    2.1.0's PySpark."""
    python = env.get(provenance.TFOS_PYTHON)
    if not python:
        raise NotRunnable(
            f"the paper profile's TensorFlowOnSpark {PAPER_TFOS} runs TensorFlow {PAPER_TENSORFLOW} in a "
            f"Python {PAPER_PYSPARK_PYTHON} (Spark 2.1.0's PySpark fails on 3.6, SPARK-19019), not in the "
            f"stacks' Python: set {provenance.TFOS_PYTHON} in dlobd_stack_settings to such a Python with tensorflow "
            f"{PAPER_TENSORFLOW} and tensorflowonspark {PAPER_TFOS} (docs/new-cluster.md)")
    return python


def tf1_layout(ctx: runner.RunContext) -> dict:
    """The paper profile's settings of a point (train_tf1.py): TF workers, parameter servers,
    input mode, batch, epochs, GPUs per worker, and a label for each the launcher picks (at the paper
    scale the spec's `assumed` gives what the paper leaves unstated)."""
    labels = {}
    workers = tf_nodes(ctx.point, ctx.fixed)
    if "parameter_servers" in ctx.fixed:
        ps = int(ctx.fixed["parameter_servers"])
        if ps < 1:
            raise ValueError(f"parameter_servers={ctx.fixed['parameter_servers']!r}: TFoS 1.0's "
                             "between-graph replication needs one at least")
        labels["parameter_servers"] = str(ps)
    else:
        ps = 1
        labels["parameter_servers"] = f"1 ({runner.LAUNCHER_CHOICE})"
    mode = str(ctx.fixed.get("mode", "not stated"))
    if mode in INPUT_MODES:
        feed = INPUT_MODES[mode]
    elif mode in ("parameter server", "not stated"):
        feed = "spark"
        labels["input_mode"] = f"spark, TFoS's RDD feeding (the paper's mode: {mode}; {runner.LAUNCHER_CHOICE})"
    else:
        raise NotRunnable(f"mode {mode!r}: the TFoS 1.0 workload runs parameter servers fed by "
                               "InputMode.SPARK or InputMode.TENSORFLOW")
    for key, default in (("batch", 64), ("epochs", 1)):
        if key not in ctx.fixed:
            labels[key] = f"{default} ({runner.LAUNCHER_CHOICE})"
    gpus = 0 if str(ctx.fixed.get("device", "gpu")).startswith("cpu") else 1
    # a rehearsal's stand-in keeps the GPU layout (executors on the gpu group's workers) on CPU
    standin = capabilities.standing_in("gpu") if gpus else None
    if standin:
        labels["num_gpus"] = "0: a CPU process stands in for each TF worker's GPU (the rehearsal's stand-in)"
    return {"workers": workers, "ps": ps, "input_mode": feed, "batch": int(ctx.fixed.get("batch", 64)),
            "epochs": int(ctx.fixed.get("epochs", 1)), "gpus": gpus, "gpu_standin": standin, "labels": labels}


def container_overhead(ctx: runner.RunContext, per_node: int) -> str:
    """The overhead that lets at most `per_node` of TFoS's executors share a NodeManager
    (hadoop.spread_overhead: YARN's capacity scheduler places containers by memory alone)."""
    return hadoop.spread_overhead(per_node, EXECUTOR_MEMORY_MB, EXECUTOR_OVERHEAD_MB, ctx.dry_run)


def spread_executors(ctx: runner.RunContext, executors: int) -> str | None:
    """The overhead that spreads a CPU point's executors evenly over a cluster of several workers
    (hadoop.executors_per_node); None on one worker."""
    per_node = hadoop.executors_per_node(executors)
    return container_overhead(ctx, per_node) if per_node else None


def memory_conf(key: str, overhead: str | None) -> dict[str, str]:
    """The executors' memory overhead under Spark's `key` for it (MiB): a sized one with the
    ApplicationMaster's memory pinned (hadoop.sized_memory_conf), else the default."""
    if overhead is None:
        return {key: str(EXECUTOR_OVERHEAD_MB)}
    return hadoop.sized_memory_conf(key, overhead)


def gpu_executors(ctx: runner.RunContext, name: str, executors: int, standin: str | None) -> tuple[str, str | None, dict]:
    """The overhead, the library path and the placement settings of a GPU point's executors on
    YARN, which schedules no GPUs (Hadoop 2.7): each TF node's container sized so that at most
    the point's GPUs per node (fixed `gpus_per_node`, else DLOBD_GPUS_PER_NODE) share a
    NodeManager (container_overhead), where TFoS's gpu_info then finds each worker a free GPU;
    CUDA's libraries (DLOBD_CUDA_LIBRARY_PATH, from dlobd_cuda_home), which a YARN container does
    not inherit; on a cluster with some GPU workers, YARN's node label of theirs
    (hadoop.gpu_workers). NotRunnable where the GPU workers are too few for the executors at that
    many per node, YARN could place one on a worker without GPUs, or the libraries are unset;
    none are needed where a rehearsal's CPU processes stand in for the GPUs (`standin`)."""
    per_node = int(per_workload(ctx.fixed.get("gpus_per_node"), name)
                   or provenance.stack_setting("DLOBD_GPUS_PER_NODE") or 1)
    workers, placed = hadoop.gpu_workers("GPU TF nodes")
    nodes = -(-executors // per_node)
    if nodes > len(workers):
        raise NotRunnable(f"{executors} executors (TF workers and parameter servers), at most {per_node} "
                          f"per node (its GPUs): {nodes} nodes, and the cluster has {len(workers)} "
                          f"{hadoop.workers_phrase(gpu=True)}")
    libs = None if standin else provenance.stack_setting("DLOBD_CUDA_LIBRARY_PATH")
    if not libs and not standin:
        raise NotRunnable("GPU TF nodes need CUDA's libraries on the executors' library path: set "
                          "dlobd_cuda_library_path (by default dlobd_cuda_home's lib64; DLOBD_CUDA_LIBRARY_PATH)")
    return container_overhead(ctx, per_node), libs, placed


def spark_conf(ctx: runner.RunContext, where: Placement) -> dict:
    """The Spark settings every TFoS run gets, whatever its TFoS and Spark version."""
    return {
        "spark.dynamicAllocation.enabled": "false",
        "spark.executor.cores": EXECUTOR_CORES,
        "spark.task.cpus": EXECUTOR_CORES,
        # the driver waits for every executor before its first job, so the YARN phase ends when
        # the last one registers (docs/metrics.md); TFoS needs them all anyway
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{int(ctx.time_limit_s or 600)}s",
        # a lost TF node cannot rejoin its cluster, and a retried task would reserve a second
        # node: fail at once instead of retrying into a hang
        "spark.task.maxFailures": "1",
        "spark.yarn.maxAppAttempts": "1",
        "spark.pyspark.python": where.python,
        "spark.pyspark.driver.python": where.python,
        "spark.executorEnv.PYSPARK_PYTHON": where.python,
        # TFoS's log lines carry local time: UTC makes them comparable with YARN's and Spark's
        "spark.executorEnv.TZ": "UTC",
        "spark.executorEnv.TF_CPP_MIN_LOG_LEVEL": "1",
    }


def submit_argv(ctx: runner.RunContext, spark_submit: str, executors: int, conf: dict) -> list[str]:
    """spark-submit on YARN in client mode with `executors` executors, these settings and the
    run's own (event log, tags), up to the program."""
    command = [spark_submit, "--master", "yarn", "--deploy-mode", "client",
               "--num-executors", str(executors), "--executor-cores", str(EXECUTOR_CORES),
               "--executor-memory", f"{EXECUTOR_MEMORY_MB}m"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command + hadoop.spark_conf(ctx)


def subset_and_address(ctx: runner.RunContext, name: str, where: Placement, local_data: Path) -> list[str]:
    """The options both TFoS programs take alike: the first records to train on, the test set
    the chief scores after each epoch (fixed `evaluate: true`; from the local copy every host
    holds, and inside the training phase, so the figures' points leave it off), the address
    every TF node uses."""
    options = []
    images = per_workload(ctx.fixed.get("train_images"), name)
    if images:
        options += ["--train-images", str(int(images))]
    if ctx.fixed.get("evaluate"):
        options += ["--eval-dir", str(local_data)]
    if where.node_host:
        options += ["--node-host", where.node_host]
    return options


def build_command_tf1(ctx: runner.RunContext, spark_submit: str, data_uri: str, where: Placement,
                      local_data: Path) -> list[str]:
    """The paper profile's spark-submit of train_tf1.py: one executor per TF worker and per
    parameter server, Spark 2.1's settings, driver and executors on where.python."""
    name, model, _ = workload(ctx)
    lay = tf1_layout(ctx)
    executors = lay["workers"] + lay["ps"]
    overhead, libs, placed = gpu_executors(ctx, name, executors, lay["gpu_standin"]) if lay["gpus"] else \
        (spread_executors(ctx, executors), None, {})
    conf = {
        **spark_conf(ctx, where),
        **placed,
        # Spark 2.1's name; spark.executor.memoryOverhead is Spark 2.3's
        **memory_conf("spark.yarn.executor.memoryOverhead", overhead),
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": where.python,
    }
    if libs:
        conf["spark.executor.extraLibraryPath"] = libs
    command = submit_argv(ctx, spark_submit, executors, conf)
    command += [str(TRAIN_TF1), "--model", model, "--input-mode", lay["input_mode"],
                "--data-dir", data_uri, "--workers", str(lay["workers"]), "--ps", str(lay["ps"]),
                "--num-gpus", str(0 if lay["gpu_standin"] else lay["gpus"]), "--batch-size", str(lay["batch"]),
                "--epochs", str(lay["epochs"]), "--partitions", str(2 * lay["workers"]),
                "--log-every", str(LOG_EVERY), "--protocol", where.transport.settings["protocol"]]
    command += subset_and_address(ctx, name, where, local_data)
    if where.address_map:
        command += ["--address-map", ",".join(f"{a}={b}" for a, b in where.address_map)]
    return command


def build_command(ctx: runner.RunContext, spark_submit: str, data_uri: str, where: Placement,
                  local_data: Path) -> list[str]:
    """The spark-submit command line of one point: YARN, client mode, one TF node per executor."""
    if where.tf1:
        return build_command_tf1(ctx, spark_submit, data_uri, where, local_data)
    name, model, _ = workload(ctx)
    nodes = tf_nodes(ctx.point, ctx.fixed)
    conf = {**spark_conf(ctx, where), **memory_conf("spark.executor.memoryOverhead", spread_executors(ctx, nodes))}
    if where.server_host:
        conf["spark.executorEnv.TFOS_SERVER_HOST"] = where.server_host
    command = submit_argv(ctx, spark_submit, nodes, conf)
    command += [str(TRAIN), "--model", model, "--input-mode", input_mode(ctx.fixed),
                "--data-dir", data_uri, "--cluster-size", str(nodes),
                "--batch-size", str(int(ctx.fixed.get("batch", 64))),
                "--epochs", str(int(ctx.fixed.get("epochs", 1))), "--partitions", str(2 * nodes),
                "--log-every", str(LOG_EVERY), "--protocol", where.transport.settings["protocol"]]
    return command + subset_and_address(ctx, name, where, local_data)


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    env = hadoop.stack_env()
    where = placement(str(ctx.point.get("network", "loopback")), env)
    _, _, dataset = workload(ctx)
    # NotRunnable (from here or the command) before any staging
    lay = tf1_layout(ctx) if where.tf1 else {}
    if lay.get("gpus") and not lay["gpu_standin"]:
        tf_cluster.refuse_cpu_only(where.python, where.tf_build, env, ctx.dry_run)
    labels = lay.get("labels", {})
    local = Path(env["DLOBD_DATA_DIR"]) / dataset
    # the executors read the training set from HDFS (spark mode: sc.binaryFiles/binaryRecords)
    data_uri = hadoop.hdfs_uri(f"{HDFS_DATA}/{dataset}")
    command = build_command(ctx, str(Path(env["SPARK_HOME"]) / "bin" / "spark-submit"), data_uri, where, local)
    if not ctx.dry_run:
        with open(ctx.attempt_dir / "prepare.log", "x", encoding="utf-8") as log:
            log.write(f"{runner.now_iso()} staging {local} into HDFS {HDFS_DATA}/{dataset}\n")
            log.flush()
            log.write(f"{runner.now_iso()} staged: {hadoop.hdfs_stage(local, f'{HDFS_DATA}/{dataset}')}\n")
    env.update({"TZ": "UTC", "TF_CPP_MIN_LOG_LEVEL": "1",
                "PYSPARK_PYTHON": where.python, "PYSPARK_DRIVER_PYTHON": where.python})
    if where.server_host:
        env["TFOS_SERVER_HOST"] = where.server_host
    result = runner.run_command(ctx, command, env=env, cwd=str(ctx.attempt_dir),
                              yarn_tag=hadoop.app_tag(ctx))
    result.labels.update({"data": runner.data_label(dataset),
                          "protocol": where.transport.settings["protocol"], "tf_build": where.tf_build,
                          "tf_nodes": str(tf_nodes(ctx.point, ctx.fixed)), **labels})
    if where.tf1:
        # the run's provenance reads the stacks' Python, which carries neither
        result.versions = {"tensorflow": PAPER_TENSORFLOW, "tensorflowonspark": PAPER_TFOS,
                           "stack": f"tensorflowonspark {PAPER_TFOS} + tensorflow {PAPER_TENSORFLOW} "
                                    f"on {where.python} (the version set's; python_env checked them)"}
    result.hosts = hadoop.with_application_roles(provenance.cluster_hosts(),
                                                hadoop.application_roles(ctx.attempt_dir))
    return result
