# Shared state and input functions of the pipeline: the specs, where raw runs are, and
# which matrix points each experiment has.

import concurrent.futures
import functools
import json
import multiprocessing
import os
import re
import sys
import threading
import time
from pathlib import Path

from dlobd.cluster import inventory as dinventory, provenance as dprovenance
from dlobd.execution import runs as druns
from dlobd.results import drawing as ddrawing
from dlobd import spec as dspec

RUNS = config["runs_dir"]
RESULTS = config["results_dir"]
FIGURES = config["figures_dir"]
REPORT = config["report_dir"]
STATE = config["state_dir"]
SCALES = config["scales"]
# the paper profile's runs the report sets beside RUNS' ("": none)
PAPER_RUNS = config["paper_runs_dir"]

SPECS_ROOT = Path(workflow.basedir, config["specs_root"])
SPECS = dspec.load_all(SPECS_ROOT)
CLAIM_FILES = {p.stem: data for p, data in dspec.claims_files(SPECS_ROOT).items()}

_unknown = sorted(set(config["experiments"]) - set(SPECS))
if _unknown:
    raise ValueError(f"config experiments: no spec for {', '.join(_unknown)} in experiments/")
IDS = sorted(config["experiments"] or SPECS)
# experiments whose own runs hold the data (slide charts with `data_from` reuse them)
DATA_IDS = sorted({SPECS[e].source_spec.id for e in IDS})
# ASSUME='cores=96': a value of each launched experiment's own in place of one its scale assumes
# where the paper states none, checked before anything runs and recorded in run.json's labels
ASSUME_WHERE = "the command line (make experiment ASSUME=..., config assume)"
ASSUME = dspec.parse_overrides(config.get("assume", ""), ASSUME_WHERE)
for _id in DATA_IDS if ASSUME else ():
    for _scale in set(SCALES) & set(SPECS[_id].data.get("scales") or {}):
        dspec.check_overrides(SPECS[_id].data, _scale, ASSUME, ASSUME_WHERE)
# ... and the inventory's own values (dlobd_assume), checked before anything runs too
dspec.check_site_overrides(dspec.site_overrides(dprovenance.stack_setting(dspec.SITE_ASSUME)),
                           {i: s.data for i, s in SPECS.items()})
# the cluster new runs are recorded under: config cluster, else the inventory's dlobd_cluster_name
CLUSTER = config["cluster"] or dprovenance.cluster_name()
# a rehearsal's cluster, whose `dlobd dry-run --check` each point's command passes before it runs
REHEARSAL_SITE = dinventory.load(config["inventory"]) if config["rehearse"] and config["inventory"] else None
# claims-only files are checked only when the whole set of experiments is built
VERDICT_IDS = IDS + (sorted(CLAIM_FILES) if not config["experiments"] else [])


wildcard_constraints:
    scale=r"[a-z][a-z0-9_-]*",
    experiment=r"[a-z][a-z0-9-]*",
    cluster=r"[^/]+",
    point=r"[^/]+",


def data_id(experiment):
    return SPECS[experiment].source_spec.id


def merged_spec(experiment):
    """The spec dict with the axes and scales of the spec that owns its data."""
    spec = SPECS[experiment]
    src = spec.source_spec.data
    return {**spec.data, "axes": src.get("axes", {}), "scales": src.get("scales", {}),
            "dimensions": spec.dimensions()}


def scale_of(experiment, scale):
    try:
        return SPECS[experiment].scale(scale)
    except KeyError:
        return None


@functools.cache
def shared_points(scale, experiment):
    """Point id -> the equal point id of the scale's `runs_from` spec (empty without one)."""
    return SPECS[experiment].shared_points(scale) if scale_of(experiment, scale) else {}


def runs_owner(scale, experiment, point):
    """(experiment, point id) whose attempts under RUNS hold a point's runs: its own, or with
    the scale's `runs_from`, the equal point of that spec (launched and kept once)."""
    shared = shared_points(scale, experiment)
    return (SPECS[experiment].runs_from(scale), shared[point]) if point in shared else (experiment, point)


def found_points(scale, experiment):
    """(cluster, point) of every point directory with attempts under RUNS (for a scale with
    `runs_from`, every point whose equal point there has attempts or is launched)."""
    shared = shared_points(scale, experiment)
    if shared:
        owner = SPECS[experiment].runs_from(scale)
        have = set(found_points(scale, owner)) | set(launch_points(scale, owner))
        return [(c, pid) for c, opid in sorted(have) for pid, theirs in shared.items() if theirs == opid]
    out = []
    root = Path(RUNS)
    if not root.is_dir():
        return out
    for cluster_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        exp_dir = cluster_dir / scale / experiment
        if exp_dir.is_dir():
            out.extend((cluster_dir.name, p.name) for p in sorted(exp_dir.iterdir())
                       if druns.attempts(p))
    return out


def launch_points(scale, experiment):
    """(cluster, point) the `run` rule launches when config `launch` is on."""
    if not config["launch"] or SPECS[experiment].data.get("data_from"):
        return []
    if scale_of(experiment, scale) is None or SPECS[experiment].runs_from(scale):
        return []
    # points of a scale marked not runnable are launched too: they get a `not runnable` record;
    # a rehearsal runs each point once
    return [(CLUSTER, pid) for pid, point in SPECS[experiment].points(scale)
            if not config["rehearse"] or druns.rehearsed_point(point)]


def reconsider_not_runnable():
    """Forget the markers of points recorded `not runnable`: the cluster may provide them now
    (a launcher or a capability arrived), so `run` asks again. Asking again is cheap: an
    unchanged reason reuses the point's record (runs.record_not_runnable)."""
    root = Path(STATE, "launched")
    if not root.is_dir():
        return
    for marker in root.rglob("*.json"):
        try:
            status = json.loads(marker.read_text()).get("status")
        except (OSError, json.JSONDecodeError):
            status = None  # unreadable marker: launch the point again too
        if status in (None, "not runnable"):
            marker.unlink()


if config["launch"]:
    reconsider_not_runnable()


def all_points(scale, experiment):
    return sorted(set(found_points(scale, experiment)) | set(launch_points(scale, experiment)))


def launched_marker(cluster, scale, experiment, point):
    return f"{STATE}/launched/{cluster}/{scale}/{experiment}/{point}.json"


def results_csv(scale, experiment):
    return f"{RESULTS}/{scale}/{data_id(experiment)}.csv"


def runs_json(scale, experiment):
    return f"{RESULTS}/{scale}/runs/{data_id(experiment)}.json"


def profiles_csv(scale, experiment):
    return f"{RESULTS}/{scale}/profiles/{experiment}.csv"


def paper_records():
    """The records of the paper profile's attempts by (scale, experiment), of the experiments this
    pipeline builds: those the rule profiles compares. An attempt whose launcher was killed has no
    record yet: nothing to compare."""
    found = {}
    for attempt in druns.all_attempts(PAPER_RUNS) if PAPER_RUNS else []:
        _cluster, scale, experiment = attempt.relative_to(PAPER_RUNS).parts[:3]
        if (attempt / druns.RUN_JSON).is_file() and scale in SCALES and experiment in DATA_IDS:
            found.setdefault((scale, experiment), []).append(str(attempt / druns.RUN_JSON))
    return found


PAPER_RECORDS = paper_records()


def report_html():
    """What the pipeline asks of the report: its index, and per scale the folder of the figures it
    holds (rule report_figures), so that the report folder travels alone."""
    return [f"{REPORT}/index.html", *(f"{REPORT}/figures/{scale}" for scale in SCALES)]


def stack_for(experiment, point, scale):
    return SPECS[experiment].point_stack(scale, point)


def launched_markers(wildcards):
    """The launch markers of an experiment's points: every `run` of its points is planned at once
    (and a point launched again is parsed again)."""
    markers = []
    for cluster, pid in all_points(wildcards.scale, wildcards.experiment):
        owner, point = runs_owner(wildcards.scale, wildcards.experiment, pid)
        if (cluster, point) in launch_points(wildcards.scale, owner):
            markers.append(launched_marker(cluster, wildcards.scale, owner, point))
    return markers


def raw_inputs(wildcards):
    """Every raw file of the attempts of an experiment's points: the results step parses them all,
    so one job per experiment, not per point."""
    files = []
    for cluster, pid in all_points(wildcards.scale, wildcards.experiment):
        owner, point = runs_owner(wildcards.scale, wildcards.experiment, pid)
        if (cluster, point) in launch_points(wildcards.scale, owner):
            # `run` is a checkpoint: a launched point's files are listed once it has written them
            checkpoints.run.get(cluster=cluster, scale=wildcards.scale, experiment=owner, point=point)
        for attempt in druns.attempts(Path(RUNS, cluster, wildcards.scale, owner, point)):
            for parent, _, names in os.walk(attempt):
                files.extend(os.path.join(parent, n) for n in sorted(names))
    return files


_OTHER = re.compile(r"@([a-z][a-z0-9-]*[a-z0-9])")


def claim_sources(experiment):
    """The experiment ids whose results the checks of `experiment` read (`y@<id>[...]`)."""
    data = SPECS[experiment].data if experiment in SPECS else CLAIM_FILES[experiment]
    found = set()
    for claim in data.get("claims", []):
        for key in ("check", "check_alt"):
            found.update(_OTHER.findall(claim.get(key) or ""))
    unknown = sorted(found - set(SPECS))
    if unknown:
        raise ValueError(f"claims of {experiment} name unknown experiments: {', '.join(unknown)}")
    return sorted(found)


def _log(path, text):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text.rstrip("\n") + "\n")


# ---------------------------------------------------------------- the steps' work
# Each rule's `run:` calls one of these, in the Snakemake process (profile
# force-use-threads): pandas is imported once for all jobs; the figures are drawn in worker
# processes (figure_pool), the only ones that import matplotlib.


def step_run(wildcards, output, log):
    started = time.monotonic()
    points = dict(SPECS[wildcards.experiment].points(wildcards.scale))
    if wildcards.point not in points:
        raise ValueError(f"{wildcards.experiment}: no point {wildcards.point!r} at scale {wildcards.scale}")
    attempt = druns.launch(merged_spec(wildcards.experiment), wildcards.scale,
                           points[wildcards.point], RUNS, cluster=wildcards.cluster,
                           overrides=ASSUME, where=ASSUME_WHERE, rehearse=config["rehearse"], site=REHEARSAL_SITE)
    record = druns.read_attempt(attempt, RUNS).record
    # step_s: the step's wall time, against which `make bench-reproduce` sets the job's own
    summary = {"attempt": str(attempt), "status": record["status"], "reason": record.get("reason"),
               "step_s": round(time.monotonic() - started, 3)}
    Path(output.marker).write_text(json.dumps(summary) + "\n")
    _log(log[0], f"{attempt}: {record['status']}" + (f" ({record['reason']})" if record.get("reason") else ""))


def step_results(wildcards, input, output, log):
    from dlobd.results import tidy as dresults

    exp, scale = wildcards.experiment, wildcards.scale
    parsed, lines = [], []
    for cluster, pid in all_points(scale, exp):
        owner, point = runs_owner(scale, exp, pid)
        # another spec's run stands for this point: its rows carry this spec's point
        as_point = dict(SPECS[exp].points(scale))[pid] if owner != exp else None
        frame = dresults.parse_point(Path(RUNS, cluster, scale, owner, point), RUNS,
                                     lambda p: stack_for(exp, p, scale), as_point)
        parsed.append(frame)
        row = frame.iloc[0]
        lines.append(f"{row['run_id']}: {row['status']}, {int(frame['value'].notna().sum())} values"
                     + (f" ({row['reason']})" if isinstance(row["reason"], str) else ""))
    shared = shared_points(scale, exp)
    table = dresults.write_results(
        exp, list(SPECS[exp].axes()), parsed, output.csv, output.runs, RUNS, scale,
        runs_of=(SPECS[exp].runs_from(scale), set(shared.values())) if shared else None)
    _log(log[0], "\n".join([*lines, f"{len(parsed)} point(s), {len(table)} row(s)"]))


_FIGURE_POOL = None


def drawing_workers():
    """One drawing worker per core Snakemake uses on this host: --cores, or under a batch
    system's executor, which leaves --cores unset, the host's own (--local-cores)."""
    return workflow.resource_settings.cores or workflow.resource_settings.local_cores


def figure_pool():
    """Worker processes for drawing, forked from a server that has matplotlib imported:
    matplotlib holds the GIL while it renders, so threads alone would use one core."""
    global _FIGURE_POOL
    if _FIGURE_POOL is None:
        context = multiprocessing.get_context("forkserver")
        # each worker runs the script that started Snakemake again (multiprocessing's __mp_main__),
        # which imports snakemake.cli: imported once in the server, that is instant in the workers.
        # Started as `python -m snakemake` (the Makefile's way) they import nothing: the server
        # then skips that import and is ready half a second sooner.
        preload = [ddrawing.SERVER]
        if getattr(sys.modules["__main__"], "__spec__", None) is None:
            preload.append("snakemake.cli")
        context.set_forkserver_preload(preload)
        _FIGURE_POOL = concurrent.futures.ProcessPoolExecutor(drawing_workers(), mp_context=context,
                                                              initializer=ddrawing.start_worker)
    return _FIGURE_POOL


def start_figure_pool():
    """Start the drawing processes now, in the background: they import matplotlib while
    Snakemake builds the DAG and parses the results instead of on the way of the first figure.
    Called before any job runs, so no job thread creates a second pool. One task per worker: the
    pool starts a worker only for a task that finds none idle."""
    pool = figure_pool()
    threading.Thread(target=lambda: [pool.submit(int) for _ in range(drawing_workers())],
                     daemon=True).start()


def step_figure(wildcards, input, output, log):
    reason = figure_pool().submit(
        ddrawing.call, "render", merged_spec(wildcards.experiment), wildcards.scale,
        scale_of(wildcards.experiment, wildcards.scale), input.csv, output[0], RUNS,
    ).result()
    _log(log[0], f"not run: {reason}" if reason else "drawn from its results")


def step_utilisation(wildcards, input, output, log):
    drawn = figure_pool().submit(
        ddrawing.call, "render_utilisation", merged_spec(wildcards.experiment), wildcards.scale, input.csv,
        output.png).result()
    _log(log[0], "drawn from the monitor samples" if drawn else "no monitor samples")


def step_claims(wildcards, input, output, log):
    import pandas as pd
    from dlobd.results import claims as dclaims
    from dlobd.results import verdicts as dverdicts
    from dlobd.results import tidy as dresults
    from dlobd.spec import substitutions as dsubs

    exp = wildcards.experiment
    if exp in SPECS:
        data, own = merged_spec(exp), dresults.read_results(input.own[0])
    else:
        data, own = {"id": f"claims/{exp}", **CLAIM_FILES[exp]}, pd.DataFrame()
    verdicts = dclaims.evaluate_spec(
        data, own, wildcards.scale,
        lambda other: dresults.read_results(results_csv(wildcards.scale, other)),
        merged_spec, dsubs.run_cores(json.loads(Path(input.runs[0]).read_text()))
        if input.runs else None,
    )
    frame = dverdicts.verdicts_frame(verdicts)
    frame.to_csv(output[0], index=False)
    _log(log[0], ", ".join(f"{n} {v}" for v, n in frame["verdict"].value_counts().items())
         or "no claims")


def step_profiles(wildcards, output, log):
    from dlobd.results import compareprofiles as dprofiles, comparepaths as dpaths

    rows = dpaths.compare(Path(RUNS), Path(PAPER_RUNS), only=(wildcards.scale, wildcards.experiment))
    found = dprofiles.points(rows, Path(RUNS), Path(PAPER_RUNS), SPECS)
    dprofiles.frame(found).to_csv(output[0], index=False)
    _log(log[0], f"{len(found)} points, {sum(1 for p in found if p.values)} compared")


def step_report(input, output, params, log):
    from dlobd.results import report as dreport

    dreport.write_report(
        output.html, specs={e: merged_spec(e) for e in IDS}, scales=SCALES,
        figures_dir=f"{REPORT}/figures", results_dir=RESULTS, verdict_ids=VERDICT_IDS,
        data_ids={e: data_id(e) for e in IDS}, runs_dir=RUNS,
        profiles=(input.profiles, PAPER_RUNS) if PAPER_RUNS else None, pdfs=params.pdfs,
    )
    _log(log[0], f"{Path(output.html).resolve()}: {len(IDS)} experiments")


def code(*modules):
    """Package files a step runs: a change to them rebuilds what the step made."""
    return [str(Path(workflow.basedir, "dlobd", m)) for m in modules]


def spec_file(experiment):
    """The spec (or claims-only file) an experiment's step reads."""
    if experiment in SPECS:
        return [str(SPECS[experiment].path), str(SPECS[experiment].source_spec.path)]
    return [str(SPECS_ROOT / "claims" / f"{experiment}.yaml")]


def parser_code(wildcards):
    """The results step's code: its own, and the parsers of the stacks its points name with what
    the stacks share (dlobd/stacks/shared/)."""
    spec = SPECS[wildcards.experiment]
    if scale_of(wildcards.experiment, wildcards.scale) is None:
        return code("results/tidy.py")
    axis = spec.data.get("stack_axis")
    names = {spec.stack(wildcards.scale)} | (
        {str(v) for v in spec.scale(wildcards.scale).get("matrix", {}).get(axis, [])}
        if axis else set())
    shared = sorted(p.relative_to(Path(workflow.basedir, "dlobd")).as_posix()
                    for p in Path(workflow.basedir, "dlobd", "stacks", "shared").glob("*.py"))
    files = code("results/tidy.py", "execution/runs.py", "stacks/__init__.py", "stacks/runner.py", *shared)
    return files + [f for f in code(*(f"stacks/{n}.py" for n in sorted(names))) if Path(f).is_file()]
