"""Raw run directories to the tidy results table (docs/runs-and-results.md).

Two steps, each one Snakemake rule:

- `parse_point`: the chosen attempt of one matrix point (newest `ok`, else newest) through
  its stack's parser, plus the harness's monitor samples, to tidy rows;
- `assemble`: the parsed points of one experiment into `data/results/<scale>/<id>.csv`,
  with the spec's axes as columns, and a summary of every run's run.json for the report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from dlobd import stacks
from dlobd.execution import runs
from dlobd.spec import metrics
from dlobd.stacks import runner

FIXED_COLUMNS = ["metric", "value", "unit", "step", "epoch"]
TAIL_COLUMNS = ["run_id", "status", "reason", "cluster", "scale", "data_label", "profile", "hosts",
                "processes", "layout"]
MONITOR_DIR = "monitor"
_NET_COLUMN = re.compile(r"^net_(.+)_(rx|tx)_bytes$")
_GPU_COLUMN = re.compile(r"^gpu(\d+)_(util_pct|mem_mib)$")
_MIB_PER_GB = 1e9 / 2**20


def parse_attempt(attempt: runs.Attempt, stack: str) -> tuple[list[dict], str, str | None]:
    """Rows, status and reason of one attempt.

    A run that did not end `ok` keeps its own status. An `ok` run whose logs the stack's
    parser cannot read becomes `unparseable` with the parser's reason: no number is invented. A
    rehearsal (its work cut) gives no values whatever its end: status `rehearsal`.
    """
    status = attempt.record["status"]
    if runs.is_rehearsal(attempt):
        cuts = runs.cuts_text(attempt.record["labels"]) or "no cut"
        return [], "rehearsal", f"a rehearsal ({cuts}; it ended {status}): not a measurement"
    if status != "ok":
        return [], status, attempt.record.get("reason")
    try:
        result = stacks.parse_run(stack, attempt.path)
    except KeyError as exc:  # a stack without a parser
        return [], "unparseable", str(exc.args[0] if exc.args else exc)
    if result.status != "ok":
        return [], "unparseable", result.reason
    if not result.finished:
        # the run says it ended well but its log stops short: a damaged log, not a result
        return [], "unparseable", f"log cut short although the run ended ok: {result.reason}"
    rows = [dict(r) for r in result.rows]
    if not rows:
        return [], "unparseable", f"{attempt.run_id}: the parser found no values"
    return rows + monitor_rows(attempt.path), "ok", None


def monitor_rows(attempt_dir: Path) -> list[dict]:
    """The psutil samples of monitor/<host>.csv as tidy rows of the metric vocabulary.

    Columns `cpu_util_pct` and `rss_mb` become cpu_util_pct and host_mem_mb; byte counters
    `net_<if>_<rx|tx>_bytes` become net_mb_per_s rates between samples; on GPU hosts,
    `gpu<i>_util_pct` and `gpu<i>_mem_mib` become gpu_util_pct and gpu_device_mem_gb of GPU i,
    and `gpu_job_mem_mib` gpu_mem_gb (empty cells, an nvidia-smi that stopped, give no row). Rows carry
    `log` = monitor/<host>.csv, which tells them apart from the stack's own rows.

    Two kinds of sample measure no job and give no row (the raw file keeps them): the first
    sample's CPU value (psutil's first `cpu_percent` spans the few milliseconds since the sampler
    started: anything from 0 to 100 %), and the samples after the last that saw the whole job on
    the host (`_job_samples`: those taken while its processes exited, and the sampler's closing
    sample, 0 MB).
    """
    out = []
    for path in sorted((attempt_dir / MONITOR_DIR).glob("*.csv")):
        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError):
            continue  # a monitor that died early is not a reason to lose the run
        if "time_s" not in frame.columns or frame.empty:
            continue
        frame = frame.sort_values("time_s", ignore_index=True)
        frame = frame.iloc[:_job_samples(frame)]
        t = pd.to_numeric(frame["time_s"], errors="coerce")
        host = str(frame["host"].iloc[0]) if "host" in frame.columns else path.stem
        base = {"host": host, "log": f"{MONITOR_DIR}/{path.name}"}
        series = []
        if "cpu_util_pct" in frame.columns:
            cpu = pd.to_numeric(frame["cpu_util_pct"], errors="coerce")
            series.append(("cpu_util_pct", {}, t.iloc[1:], cpu.iloc[1:]))
        if "rss_mb" in frame.columns:
            series.append(("host_mem_mb", {}, t, pd.to_numeric(frame["rss_mb"], errors="coerce")))
        if "gpu_job_mem_mib" in frame.columns:
            series.append(("gpu_mem_gb", {}, t,
                           pd.to_numeric(frame["gpu_job_mem_mib"], errors="coerce") / _MIB_PER_GB))
        for column in frame.columns:
            m = _NET_COLUMN.match(column)
            if m:
                counter = pd.to_numeric(frame[column], errors="coerce")
                rate = counter.diff() / t.diff() / 1e6
                series.append(("net_mb_per_s", {"interface": m.group(1), "direction": m.group(2)},
                               t, rate))
            m = _GPU_COLUMN.match(column)
            if m:
                values = pd.to_numeric(frame[column], errors="coerce")
                series.append(("gpu_util_pct", {"gpu": m.group(1)}, t, values) if m.group(2) == "util_pct"
                              else ("gpu_device_mem_gb", {"gpu": m.group(1)}, t, values / _MIB_PER_GB))
        for metric, dims, times, values in series:
            unit = metrics.get(metric).unit
            for ts, v in zip(times, values):
                if pd.notna(ts) and pd.notna(v):
                    out.append({"metric": metric, "value": float(v), "unit": unit,
                                "wall_clock_s": float(ts), **base, **dims})
    return out


def _job_samples(frame: pd.DataFrame) -> int:
    """How many of the time-ordered samples were taken while the job ran whole: up to the last
    one before its closing exits, judged from its processes' state (`exited`: processes gone or
    zombies at the sample), not from the values. The job's last samples, in which its processes
    exit one after another, each find one exited or none left; a process that exits mid-run
    (a Python worker Spark replaces) is followed by samples that find none. A file from before
    `exited` is cut after its last sample that saw job processes holding memory. A process that
    stays exited all run (a zombie its parent never reaps) counts in every
    sample: the closing exits are those above the run's usual count, the most
    common among the samples that saw the job. A `--match` sampler may see no process before
    YARN starts the containers: those samples stand. All of them when none saw the job."""
    live = pd.Series(True, index=frame.index)
    for column in ("rss_mb", "processes"):  # (a file from before `processes` lacks it)
        if column in frame.columns:
            live &= pd.to_numeric(frame[column], errors="coerce") > 0
    seen = live.to_numpy().nonzero()[0]
    if not len(seen):
        return len(frame)
    end = int(seen[-1]) + 1
    if "exited" in frame.columns:
        exited = pd.to_numeric(frame["exited"], errors="coerce").fillna(0)
        usual = exited[live].mode().min()
        whole = (exited <= usual) & live
        kept = whole.iloc[:end].to_numpy().nonzero()[0]
        end = int(kept[-1]) + 1 if len(kept) else end
    return end


# the processes a run.json's host roles name ('worker:0', 'executor:1'), in the order a layout
# says them
_ROLE_NOUNS = {"worker": "worker", "ps": "PS", "chief": "chief", "evaluator": "evaluator",
               "local": "process", "executor": "executor"}
# a count and what it counts in a layout text, plurals included ('2 executors', '1 PS')
LAYOUT_COUNT = re.compile(
    r"(\d+) (collective worker|worker|PS|chief|evaluator|process|executor|MPI rank|core|host)(?:e?s)?\b")


def count_text(n, noun: str) -> str:
    """'1 worker', '2 workers', '2 PS', '2 processes', '1/2 hosts'."""
    if str(n) == "1" or noun == "PS":
        return f"{n} {noun}"
    return f"{n} {noun}{'es' if noun.endswith('s') else 's'}"


def _flag(argv: list[str], name: str) -> int | None:
    """The number after `name` in a command line ('--executor-cores 2'), or None."""
    for arg, value in zip(argv, argv[1:]):
        if arg == name and value.isdigit():
            return int(value)
    return None


def _executors_text(executors: int, argv: list[str]) -> str:
    """Spark's executors with their cores (--executor-cores), and the TF nodes TensorFlowOnSpark
    runs in them: collective workers (train.py's --cluster-size) or workers and parameter servers
    (train_tf1.py's --workers and --ps)."""
    text = f"{count_text(executors, 'executor')} × {count_text(_flag(argv, '--executor-cores') or 1, 'core')}"
    nodes, workers, ps = _flag(argv, "--cluster-size"), _flag(argv, "--workers"), _flag(argv, "--ps")
    if nodes:
        return f"{count_text(nodes, 'collective worker')} in {text}"
    if workers:
        return f"{count_text(workers, 'worker')}{f' + {ps} PS' if ps else ''} in {text}"
    return text


def _jobs_by_host(hosts: list[dict]) -> dict[str, list[str]]:
    """Host -> the job of each process it ran, by its roles ('worker:0' -> 'worker'); hosts
    that ran none (a NameNode's, a ResourceManager's roles) are left out."""
    out = {}
    for host in hosts:
        jobs = [job for job, sep, _ in (str(r).partition(":") for r in host.get("roles") or [])
                if sep and job in _ROLE_NOUNS]
        if jobs:
            out[host.get("name")] = jobs
    return out


def run_layout(record: dict) -> dict:
    """Where a run's processes ran, from its run.json: `hosts` (how many ran them), `processes`
    and `layout`, e.g. '2 workers + 1 PS + 1 chief on 1 host', '2 executors × 1 core on 1 host',
    '8 MPI ranks on 1 host'. The processes are the roles the launcher gave its hosts (TensorFlow's
    and the gRPC benchmark's tasks, Spark's executors from the event log), or MPI's ranks (the
    command's -np); the cores of an executor and TensorFlowOnSpark's TF nodes come from the
    command. A run that started nothing (not runnable) has no layout."""
    argv = [str(a) for a in record.get("command") or []]
    hosts = record.get("hosts") or []
    ranks = _flag(argv, "-np") if argv and Path(argv[0]).name.startswith("mpirun") else None
    by_host = {} if ranks else _jobs_by_host(hosts)
    if ranks:
        # ranks placed by a host file run on the hosts named 'workers' or 'gpu x<n>'; else on this one
        placed = [h for h in hosts if any(r == "workers" or str(r).startswith("gpu") for r in h.get("roles") or [])]
        count, processes, what = max(len(placed), 1), ranks, count_text(ranks, "MPI rank")
    elif by_host:
        jobs = [job for names in by_host.values() for job in names]
        count, processes = len(by_host), len(jobs)
        collective = (record.get("labels") or {}).get("strategy") == "collective"
        what = _executors_text(jobs.count("executor"), argv) if "executor" in jobs else " + ".join(
            count_text(jobs.count(j), f"collective {noun}" if collective and j == "worker" else noun)
            for j, noun in _ROLE_NOUNS.items() if j in jobs)
    else:
        return {"hosts": None, "processes": None, "layout": None}
    text = f"{what} on {count_text(count, 'host')}"
    per_host = sorted({len(jobs) for jobs in by_host.values()})
    if count > 1 and per_host:  # processes a host: '2 a host', '1–2 a host'
        text += f", {'–'.join(str(n) for n in dict.fromkeys([per_host[0], per_host[-1]]))} a host"
    return {"hosts": count, "processes": processes, "layout": text}


def parse_point(point_dir, runs_dir, stack, as_point: dict | None = None) -> pd.DataFrame:
    """Tidy rows of one matrix point, from its chosen attempt.

    `stack` is the stack name, or a function of the point giving it (specs whose
    `stack_axis` names the stack per point). A run.json that breaks the contract makes
    the point `unparseable` with the reason, so one bad record cannot stop the pipeline.
    `as_point`: the point the rows stand for when the runs are another spec's (a scale's
    `runs_from`); by default the point the run recorded.
    """
    point_dir = Path(point_dir)
    found = []
    for a in runs.attempts(point_dir):
        try:
            found.append(runs.read_attempt(a, runs_dir))
        except runs.RunError as exc:
            rid = runs.run_id(a, runs_dir)
            cluster, scale = Path(rid).parts[:2]
            found.append(runs.Attempt(a, rid, int(a.name.split("-")[1]), {
                "cluster": cluster, "scale": scale, "point": {},
                "status": "unparseable", "reason": str(exc)}))
    if not found:
        raise runs.RunError(f"{point_dir}: no attempt-NNN directories")
    chosen = runs.select(found)[0]
    rec = chosen.record
    stack_name = stack(rec.get("point", {})) if callable(stack) else stack
    rows, status, reason = parse_attempt(chosen, stack_name)
    if not rows:
        rows = [{"metric": None, "value": None, "unit": None}]
    frame = pd.DataFrame(rows)
    for axis, value in (rec.get("point", {}) if as_point is None else as_point).items():
        frame[f"point.{axis}"] = value
    frame["run_id"] = chosen.run_id
    frame["status"] = status
    frame["reason"] = reason
    frame["cluster"] = rec["cluster"]
    frame["scale"] = rec["scale"]
    frame["data_label"] = (rec.get("labels") or {}).get("data") or runner.data_label(
        rec.get("dataset"))
    # runs recorded before the label have none (all of them ran the modern profile's software)
    frame["profile"] = (rec.get("labels") or {}).get("profile")
    for column, value in run_layout(rec).items():
        frame[column] = value
    frame["attempts"] = len(found)
    return frame


def columns_for(axes: list[str], frames: list[pd.DataFrame]) -> list[str]:
    dims = []
    for frame in frames:
        for col in frame.columns:
            if col.startswith("point.") or col in FIXED_COLUMNS or col in TAIL_COLUMNS:
                continue
            if col not in dims and col != "attempts":
                dims.append(col)
    return ["experiment", *axes, *FIXED_COLUMNS, *dims, *TAIL_COLUMNS]


def assemble(experiment: str, axes: list[str], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One experiment's tidy table from its points' rows (parse_point; empty table if none)."""
    extra_axes = []
    for frame in frames:
        for col in frame.columns:
            if col.startswith("point."):
                axis = col[len("point."):]
                if axis not in axes and axis not in extra_axes:
                    extra_axes.append(axis)
    all_axes = [*axes, *extra_axes]
    cols = columns_for(all_axes, frames)
    if not frames:
        return pd.DataFrame(columns=cols)
    renamed = []
    for frame in frames:
        frame = frame.rename(columns={f"point.{a}": a for a in all_axes})
        frame = frame.drop(columns=["attempts"], errors="ignore")
        frame["experiment"] = experiment
        renamed.append(frame)
    table = pd.concat(renamed, ignore_index=True)
    return table.reindex(columns=cols)


def run_summaries(runs_dir, scale: str, experiment: str, points=None) -> list[dict]:
    """Every attempt of an experiment (of only these point ids, if given), with the fields the
    report shows."""
    found = runs.experiment_attempts(runs_dir, scale, experiment, points)
    chosen = {a.run_id for a in runs.select(found)}
    out = []
    for a in found:
        rec = a.record
        out.append({
            "run_id": a.run_id,
            "used": a.run_id in chosen,
            "point": rec.get("point"),
            "status": rec.get("status"),
            "reason": rec.get("reason"),
            "start": rec.get("start"),
            "end": rec.get("end"),
            "exit_status": rec.get("exit_status"),
            "command": rec.get("command"),
            "cluster": rec.get("cluster"),
            "dataset": rec.get("dataset"),
            "labels": rec.get("labels"),
            "hosts": rec.get("hosts"),
            "versions": {k: v for k, v in (rec.get("versions") or {}).items() if v},
            "system": {k: v for k, v in (rec.get("system") or {}).items() if k != "nics"},
            "nics": [f"{n.get('name')} ({n.get('speed_mbps') or 'no rate'}"
                     f"{' Mb/s' if n.get('speed_mbps') else ''})"
                     for n in (rec.get("system") or {}).get("nics", [])],
            "git": rec.get("git"),
            "fabric": rec.get("fabric"),
            "calibration": rec.get("calibration"),
        })
    return out


def write_results(experiment: str, axes: list[str], points: list[pd.DataFrame], out_csv, runs_json=None,
                  runs_dir=None, scale=None, runs_of=None) -> pd.DataFrame:
    """The tidy table of an experiment and the summaries of its runs; `runs_of` is
    (experiment, point ids) when its runs at this scale are another spec's (`runs_from`)."""
    table = assemble(experiment, axes, points)
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_csv, index=False)
    if runs_json is not None:
        Path(runs_json).parent.mkdir(parents=True, exist_ok=True)
        owner, points = runs_of or (experiment, None)
        summaries = run_summaries(runs_dir, scale, owner, points) if runs_dir else []
        Path(runs_json).write_text(json.dumps(summaries, indent=1, default=str) + "\n")
    return table


def read_results(path) -> pd.DataFrame:
    """A results CSV as written by write_results (empty table stays empty)."""
    return pd.read_csv(path)


def ok_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[(table["status"] == "ok") & table["value"].notna()]


def is_monitor(table: pd.DataFrame) -> pd.Series:
    """Rows that come from the harness's monitor/<host>.csv samples."""
    if "log" not in table.columns:
        return pd.Series(False, index=table.index)
    return table["log"].astype(str).str.startswith(f"{MONITOR_DIR}/")


def not_run_reason(spec: dict, scale_name: str, scale: dict | None, table: pd.DataFrame,
                   runs_dir=None) -> str | None:
    """Why an experiment has no `ok` values at a scale, or None if it has some."""
    if not table.empty and not ok_rows(table).empty:
        return None
    if scale is None:
        return f"the spec has no {scale_name!r} scale"
    if not scale.get("runnable", True):
        return scale.get("reason") or f"not runnable at scale {scale_name}"
    if not table.empty:
        runs = table.drop_duplicates("run_id")
        first = runs.iloc[0]
        counts = ", ".join(f"{n} {s}" for s, n in runs["status"].value_counts().items())
        return f"no run ended ok ({counts}); e.g. {first['run_id']}: {first['reason']}"
    where = f" under {runs_dir}" if runs_dir else ""
    return f"no runs{where} at scale {scale_name}"
