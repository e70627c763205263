"""Run directories, attempts and run.json (docs/runs-and-results.md).

A run is one matrix point of one experiment at one scale on one cluster. Its raw logs
live in `<runs>/<cluster>/<scale>/<experiment>/<point>/attempt-<NNN>/`; a rerun is a new
attempt, so nothing a run wrote is ever overwritten. `run.json` is written once, when
the run ends; an attempt without it was interrupted and reads as `failed`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from dlobd import NotRunnable, stacks
from dlobd import spec as dspec
from dlobd.cluster import capabilities, provenance
from dlobd.execution import checks, slurmenv
from dlobd.spec import point_id  # one definition of the point directory name
from dlobd.stacks.runner import RUN_JSON, LaunchResult, RunContext, data_label, now_iso

SCHEMA_VERSION = 1
STATUSES = ("ok", "failed", "hung", "not runnable", "unparseable")
# a rehearsal's time limit: its work is cut to seconds, the rest is the cluster's start-up
REHEARSAL_LIMIT_S = 900
_ATTEMPT_RE = re.compile(r"^attempt-(\d{3,})$")


class RunError(Exception):
    """A run directory or run.json that breaks the layout contract."""


def point_dir(runs_dir, cluster: str, scale: str, experiment: str, point: dict) -> Path:
    return Path(runs_dir) / cluster / scale / experiment / point_id(point)


def attempts(pdir) -> list[Path]:
    """The attempt directories of one point, oldest first."""
    pdir = Path(pdir)
    if not pdir.is_dir():
        return []
    found = []
    for child in pdir.iterdir():
        m = _ATTEMPT_RE.match(child.name)
        if m and child.is_dir():
            found.append((int(m.group(1)), child))
    return [p for _, p in sorted(found)]


def _next_number(pdir: Path) -> int:
    existing = attempts(pdir)
    return int(_ATTEMPT_RE.match(existing[-1].name).group(1)) + 1 if existing else 1


def next_attempt(runs_dir, cluster: str, scale: str, experiment: str, point: dict) -> Path:
    """The directory the next attempt of a point would get, not created (a dry run names it)."""
    pdir = point_dir(runs_dir, cluster, scale, experiment, point)
    return pdir / f"attempt-{_next_number(pdir):03d}"


def new_attempt(runs_dir, cluster: str, scale: str, experiment: str, point: dict) -> Path:
    """Create the next `attempt-NNN` directory; never reuses an existing one."""
    pdir = point_dir(runs_dir, cluster, scale, experiment, point)
    pdir.mkdir(parents=True, exist_ok=True)
    n = _next_number(pdir)
    while True:
        candidate = pdir / f"attempt-{n:03d}"
        try:
            candidate.mkdir()  # atomic: two concurrent launchers cannot share an attempt
            return candidate
        except FileExistsError:
            n += 1


def run_id(attempt_dir, runs_dir) -> str:
    return Path(attempt_dir).relative_to(Path(runs_dir)).as_posix()


def validate_record(record: dict, where: str = "run.json") -> None:
    """Check the fields every reader relies on; raise RunError naming the problem."""
    for key in ("experiment", "scale", "cluster", "point", "status"):
        if key not in record:
            raise RunError(f"{where}: missing field '{key}'")
    if record["status"] not in STATUSES:
        raise RunError(
            f"{where}: status {record['status']!r} is not one of {', '.join(STATUSES)}"
        )
    if record["status"] != "ok" and not record.get("reason"):
        raise RunError(f"{where}: status {record['status']!r} needs a reason")
    if not isinstance(record["point"], dict):
        raise RunError(f"{where}: 'point' must be a mapping of axis to value")


def write_run_json(attempt_dir, record: dict) -> Path:
    """Write run.json of an attempt, once: an existing run.json is never replaced."""
    path = Path(attempt_dir) / RUN_JSON
    validate_record(record, str(path))
    body = {"schema": SCHEMA_VERSION, **record}
    try:
        with open(path, "x", encoding="utf-8") as fh:
            json.dump(body, fh, indent=2, sort_keys=False, default=str)
            fh.write("\n")
    except FileExistsError:
        raise RunError(f"{path}: already written; a rerun is a new attempt") from None
    return path


@dataclass
class Attempt:
    """One attempt directory with its (possibly synthesised) record."""

    path: Path
    run_id: str
    number: int
    record: dict


def read_attempt(attempt_dir, runs_dir) -> Attempt:
    attempt_dir = Path(attempt_dir)
    rid = run_id(attempt_dir, runs_dir)
    number = int(_ATTEMPT_RE.match(attempt_dir.name).group(1))
    path = attempt_dir / RUN_JSON
    parts = Path(rid).parts  # cluster, scale, experiment, point, attempt
    if not path.exists():
        record = {
            "cluster": parts[0], "scale": parts[1], "experiment": parts[2], "point": {},
            "status": "failed",
            "reason": "no run.json: the run was interrupted before it finished",
        }
    else:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RunError(f"{path}: unreadable: {exc}") from None
        if not isinstance(record, dict):
            raise RunError(f"{path}: not a JSON object")
        validate_record(record, str(path))
    record.setdefault("run_id", rid)
    return Attempt(attempt_dir, rid, number, record)


def all_attempts(runs_dir) -> list[Path]:
    """Every attempt directory under a runs directory (cluster/scale/experiment/point/attempt-N),
    in path order."""
    return sorted(a for a in Path(runs_dir).glob("*/*/*/*/attempt-*") if _ATTEMPT_RE.match(a.name) and a.is_dir())


def experiment_attempts(runs_dir, scale: str, experiment: str, points=None) -> list[Attempt]:
    """Every attempt of one experiment at one scale (of only these point ids, if given), on every
    cluster, oldest first per point."""
    runs_dir = Path(runs_dir)
    out = []
    if not runs_dir.is_dir():
        return out
    for cluster_dir in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        exp_dir = cluster_dir / scale / experiment
        if not exp_dir.is_dir():
            continue
        for pdir in sorted(p for p in exp_dir.iterdir() if p.is_dir() and (points is None or p.name in points)):
            out.extend(read_attempt(a, runs_dir) for a in attempts(pdir))
    return out


def is_rehearsal(attempt: Attempt) -> bool:
    """A run whose work a rehearsal cut (run.json's label `rehearsal`): it shows that the point
    runs, and measures nothing."""
    return "rehearsal" in (attempt.record.get("labels") or {})


def rehearsed_point(point: dict) -> bool:
    """Whether a rehearsal launches this point: each point once, its first repeat."""
    return int(point.get("repeat", 1)) == 1


def cuts_text(labels: dict) -> str:
    """A run's rehearsal cut as text ('epochs 18 -> 1, train_images ...'); '' for none."""
    return ", ".join(f"{k} {v}" for k, v in (labels.get("rehearsal") or {}).items())


def standins_text(labels: dict) -> str:
    """What stood in for a capability in a rehearsal, as text ('infiniband: ib0 is a veth ...');
    '' for nothing."""
    return "; ".join(f"{k}: {v}" for k, v in (labels.get("standin") or {}).items())


def select(attempt_list: list[Attempt]) -> list[Attempt]:
    """Per (cluster, point): the newest `ok` attempt, else the newest attempt; a rehearsal only
    where the point has nothing else."""
    groups: dict[tuple, list[Attempt]] = {}
    for a in attempt_list:
        key = tuple(Path(a.run_id).parts[:4])  # cluster, scale, experiment, point
        groups.setdefault(key, []).append(a)
    chosen = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda a: a.number)
        group = [a for a in group if not is_rehearsal(a)] or group
        ok = [a for a in group if a.record["status"] == "ok"]
        chosen.append(ok[-1] if ok else group[-1])
    return chosen


# ---------------------------------------------------------------- writing runs


def _base_record(spec_data: dict, scale: str, cluster: str, point: dict) -> dict:
    scale_data = spec_data.get("scales", {}).get(scale, {})
    return {
        "experiment": spec_data["id"],
        "scale": scale,
        "cluster": cluster,
        "point": dict(point),
        "stack": spec_data.get("stack"),
        "dataset": scale_data.get("dataset", spec_data.get("dataset")),
    }


def record_not_runnable(runs_dir, cluster: str, scale: str, spec_data: dict, point: dict,
                        reason: str, labels: dict | None = None) -> Path:
    """Record that this cluster cannot provide a point, with `labels` beside the common ones (the
    settings assumed or overridden). Returns the attempt directory.

    Writing the same reason again for the same point reuses the newest record instead of
    piling up identical attempts; a different reason (the cluster changed) is a new attempt.
    """
    if not reason:
        raise RunError("record_not_runnable needs a reason")
    pdir = point_dir(runs_dir, cluster, scale, spec_data["id"], point)
    existing = attempts(pdir)
    if existing:
        last = read_attempt(existing[-1], runs_dir)
        if last.record["status"] == "not runnable" and last.record.get("reason") == reason:
            return last.path
    attempt_dir = new_attempt(runs_dir, cluster, scale, spec_data["id"], point)

    stamp = now_iso()
    record = {
        "run_id": run_id(attempt_dir, runs_dir),
        **_base_record(spec_data, scale, cluster, point),
        "command": None, "cwd": None, "start": stamp, "end": stamp, "exit_status": None,
        "status": "not runnable", "reason": reason,
        **provenance.collect(slurmenv.execution(), stack=spec_data.get("stack")),
        "labels": {**_labels(spec_data, scale, point), **(labels or {})},
    }
    write_run_json(attempt_dir, record)
    return attempt_dir


def _launcher(spec_data: dict, scale: str, point: dict):
    """(stack name, stack module, None) of a point, or (stack name, None, why the cluster cannot
    provide it): a scale marked not runnable, a missing capability or data set, a stack without
    a launcher."""

    scale_data = spec_data.get("scales", {}).get(scale)
    if scale_data is None:
        raise RunError(f"{spec_data['id']}: no scale {scale!r} in the spec")
    # a scale may run another stack than the paper did (e.g. native TF for tf_cnn_benchmarks)
    stack_name = dspec.stack_of_point(spec_data, scale_data, point)
    if not scale_data.get("runnable", True):
        return stack_name, None, scale_data.get("reason") or f"scale {scale} not runnable"
    try:
        lacking = capabilities.point_missing(dspec.filled(scale_data), point)
    except NotRunnable as exc:  # a site's stand-ins that cannot be read
        return stack_name, None, str(exc)
    if why := capabilities.dataset_missing(scale_data.get("dataset", spec_data.get("dataset"))):
        lacking.append(why)
    if lacking:
        return stack_name, None, "; ".join(lacking)
    try:
        module = stacks.get(stack_name)
    except (KeyError, ImportError, ValueError) as exc:
        return stack_name, None, f"stack {stack_name!r} is not available: {exc}"
    if not hasattr(module, "launch"):
        return stack_name, None, f"stack {stack_name!r} has no launcher yet"
    return stack_name, module, None


def _call(module, ctx: RunContext) -> LaunchResult:
    try:
        return module.launch(ctx)
    except NotRunnable as exc:
        return LaunchResult(None, "not runnable", str(exc))
    except Exception as exc:  # the record must exist whatever the launcher did
        return LaunchResult(None, "failed", f"launcher error: {type(exc).__name__}: {exc}")


def launch(spec_data: dict, scale: str, point: dict, runs_dir, cluster: str = "local",
           dry_run: bool = False, overrides: dict | None = None, where: str = "the command line",
           rehearse: bool = False, site=None):
    """_launch; a rehearsal counts the site's stand-ins (capabilities.rehearsing), and with `site`
    (the inventory's cluster, dlobd.cluster.inventory) launches only what `dlobd dry-run --check`
    accepts there (checks)."""
    if not rehearse:
        return _launch(spec_data, scale, point, runs_dir, cluster, dry_run, overrides, where, None)
    stack = dspec.stack_of_point(spec_data, spec_data.get("scales", {}).get(scale) or {}, point)
    with capabilities.rehearsing(stack) as standins:
        return _launch(spec_data, scale, point, runs_dir, cluster, dry_run, overrides, where, standins, site)


def _launch(spec_data: dict, scale: str, point: dict, runs_dir, cluster: str,
            dry_run: bool, overrides: dict | None, where: str, standins: dict | None, site=None):
    """Run one matrix point through its stack's launcher and write run.json.

    The launcher gets the scale's `fixed` with the values the scale assumes where its paper
    states none, then the inventory's own values of those (site_settings), then `overrides`
    (given at `where`); run.json's labels `assumed` and
    `overridden` say which (spec.settings). An override of a setting the scale does not assume
    raises spec.SettingError before anything is recorded.

    Returns the attempt directory. Points the cluster cannot provide (scale marked not
    runnable, stack without a launcher, launcher raising NotRunnable) get a
    `not runnable` record instead of a run.

    With `dry_run` nothing is run or written (no attempt directory, no run.json): returns the
    LaunchResult, status `dry run` with the exact command, `not runnable` with the reason, or
    `failed` with the launcher's error.

    With `standins` (a rehearsal's: what stood in for capabilities the cluster lacks, filled as
    its checks count them; run.json's label `standin`) the point runs as the scale lays it out
    with its work cut to the scale's `rehearsal` values, its data set to their synthetic twin
    where they name one (run.json's label `rehearsal` says each cut): a check that it runs, never
    a result (select passes it over). A scale without a rehearsal cut is not runnable so. With
    `site` as well, the point's command is first made as a dry run and held to the rules of
    `dlobd dry-run --check` on that inventory (checks); one that breaks any is not runnable, with
    the rules in its reason, and is not launched.
    """
    rehearse = standins is not None
    cut = dspec.rehearsal(spec_data["scales"][scale]) if rehearse else {}
    cut_labels = {}
    if dspec.REHEARSAL_DATASET in cut:  # the synthetic twin of the scale's data set (spec.synthetic_twin)
        twin = cut.pop(dspec.REHEARSAL_DATASET)
        cut_labels["dataset"] = f"{_base_record(spec_data, scale, cluster, point)['dataset']} -> {twin}"
        spec_data = {**spec_data, "scales": {**spec_data["scales"], scale: {**spec_data["scales"][scale], "dataset": twin}}}
    stack_name, module, reason = _launcher(spec_data, scale, point)
    given, wheres = site_settings(spec_data, scale)
    given.update(overrides or {})
    wheres.update({name: where for name in overrides or {}})
    fixed, setting_labels = dspec.settings(spec_data, scale, given, wheres)
    scale_data = spec_data["scales"][scale]
    time_limit_s = scale_data.get("time_limit_s")
    if rehearse:
        if "rehearsal" not in scale_data:
            reason = reason or (f"no rehearsal cut: scales.{scale}.rehearsal of experiments/{spec_data['id']}.yaml "
                                "gives none, and the point's whole work would run")
        cut_labels.update({k: f"{fixed.get(k, 'the launcher default')} -> {v}" for k, v in cut.items()})
        setting_labels["rehearsal"] = cut_labels
        fixed.update(cut)
        time_limit_s = min(time_limit_s or REHEARSAL_LIMIT_S, REHEARSAL_LIMIT_S)

    def context(attempt_dir: Path) -> RunContext:
        return RunContext(spec=spec_data, scale=scale, cluster=cluster, point=dict(point),
                          attempt_dir=attempt_dir, runs_dir=Path(runs_dir),
                          fixed=dict(fixed), time_limit_s=time_limit_s,
                          dry_run=dry_run, overridden=wheres)

    if dry_run:
        if reason:
            return LaunchResult(None, "not runnable", reason)
        result = _call(module, context(next_attempt(runs_dir, cluster, scale, spec_data["id"], point)))
        result.labels.update(_settings_labels({**setting_labels, **_standin_label(standins)}, result.labels))
        return result
    if not reason and site is not None:
        planned = _call(module, replace(context(next_attempt(runs_dir, cluster, scale, spec_data["id"], point)),
                                        dry_run=True))
        broken = checks.broken(checks.point_errors(planned, point, scale_data, stack_name, site)) \
            if planned.status == "dry run" else []
        if broken:
            reason = f"dlobd dry-run --check refuses its command: {'; '.join(broken)}"
    if reason:
        return record_not_runnable(runs_dir, cluster, scale, spec_data, point, reason, setting_labels)
    attempt_dir = new_attempt(runs_dir, cluster, scale, spec_data["id"], point)
    start = now_iso()
    result = _call(module, context(attempt_dir))
    end = now_iso()
    if result.status in ("failed", "hung"):
        # a run its Slurm job's end cut short says so, whatever its command's exit looked like
        ended = slurmenv.interruption(
            wait_s=slurmenv.INTERRUPT_WAIT_S if slurmenv.ended_by_signal(result.exit_status) else 0.0)
        if ended is not None:
            result.status, result.reason = ended[0], f"{ended[1]} ({result.reason})"
    prov = provenance.collect(slurmenv.execution(), stack=stack_name)
    if result.hosts is not None:
        prov["hosts"] = result.hosts
    prov["hosts"] = provenance.with_link(prov["hosts"])
    prov["versions"].update(result.versions)
    record = {
        "run_id": run_id(attempt_dir, runs_dir),
        **_base_record(spec_data, scale, cluster, point),
        "command": result.command, "cwd": result.cwd,
        "start": start, "end": end, "exit_status": result.exit_status,
        "status": result.status, "reason": result.reason,
        **prov,
        "labels": {**_labels(spec_data, scale, point), **result.labels,
                   **_settings_labels({**setting_labels, **_standin_label(standins)}, result.labels)},
        **result.extra,
    }
    write_run_json(attempt_dir, record)
    return attempt_dir


def site_settings(spec_data: dict, scale: str) -> tuple[dict, dict]:
    """(the cluster's own values in place of those the scale assumes, where each was set): the
    inventory's dlobd_assume for this experiment (dlobd-env.sh's DLOBD_ASSUME), checked against it."""
    site = dspec.site_overrides(provenance.stack_setting(dspec.SITE_ASSUME))
    mine = {spec_data["id"]: site[spec_data["id"]]} if spec_data["id"] in site else {}
    dspec.check_site_overrides(mine, {spec_data["id"]: spec_data})
    values = dspec.site_overrides_at(mine, spec_data, scale)
    return values, {name: dspec.SITE_WHERE for name in values}


def _settings_labels(supervisor: dict, launcher: dict) -> dict:
    """The `assumed`, `overridden`, `rehearsal` and `standin` labels: the supervisor's, with what the
    launcher chose over them (an assumed count cut to the cluster)."""
    return {key: {**supervisor.get(key, {}), **launcher.get(key, {})}
            for key in ("assumed", "overridden", "rehearsal", "standin") if key in supervisor or key in launcher}


def _standin_label(standins: dict | None) -> dict:
    """The `standin` label of a rehearsal whose checks counted a stand-in; {} otherwise."""
    return {"standin": dict(standins)} if standins else {}


def _labels(spec_data: dict, scale: str, point: dict) -> dict:
    dataset = spec_data.get("scales", {}).get(scale, {}).get("dataset", spec_data.get("dataset"))
    # which software ran: the papers' releases (the paper profile) or today's, for every number drawn
    labels = {"data": data_label(dataset), "profile": provenance.stack_setting("DLOBD_PROFILE") or "modern"}
    if "network" in point:
        labels["network"] = str(point["network"])
    return labels
