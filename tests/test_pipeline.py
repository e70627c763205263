"""The Snakemake pipeline, run for real: raw runs -> results -> figures -> verdicts -> report."""

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dlobd import spec
from dlobd.execution import runs
from rundirs import make_run, real_logs

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = [str(Path(sys.executable).with_name("snakemake"))]
# as the Makefile starts it; its drawing workers' server imports no Snakemake (common.smk)
SNAKEMAKE_MODULE = [sys.executable, "-m", "snakemake"]
SPECS = spec.load_all(ROOT)
# BigDL experiments (real BigDL logs exist), one that reads another's results
# (dlobd-fig7a's claims read dlobd-fig6c), and one with no local form
SUBSET = ["dlobd-fig6c", "dlobd-fig7a", "dlobd-fig7b", "dlobd-fig4c"]


def snakemake(tmp_path, *extra, config=(), env=None, launcher=SNAKEMAKE, profile="profiles/local"):
    cmd = [*launcher, "--profile", profile, "--nolock", *extra, "--config",
           f"runs_dir={tmp_path / 'runs'}", f"results_dir={tmp_path / 'results'}",
           f"figures_dir={tmp_path / 'figures'}", f"report_dir={tmp_path / 'report'}",
           f"state_dir={tmp_path / 'state'}", *config]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


def tree_digest(root: Path) -> dict:
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipeline")
    log = real_logs("bigdl", min_rows=5)[0]
    runs_dir = tmp / "runs"
    data = {e: SPECS[e].data for e in SUBSET}
    make_run(runs_dir, data["dlobd-fig6c"], "local", {"network": "loopback"}, {"stderr.log": log})
    make_run(runs_dir, data["dlobd-fig7a"], "local", {"network": "loopback"}, {"stderr.log": log})
    make_run(runs_dir, data["dlobd-fig7b"], "local", {"network": "loopback", "cores": 1},
             {"stderr.log": log})
    make_run(runs_dir, data["dlobd-fig7b"], "local", {"network": "loopback", "cores": 2},
             {"stderr.log": log}, status="hung", reason="killed after the time limit of 900 s")
    before = tree_digest(runs_dir)
    config = [f"experiments={json.dumps(SUBSET)}"]
    first = snakemake(tmp, config=config)
    return {"tmp": tmp, "before": before, "first": first, "config": config, "log": log}


def test_every_experiment_gets_figures_verdicts_and_a_report(built):
    tmp = built["tmp"]
    for e in SUBSET:
        assert (tmp / "figures" / "local" / f"{e}.png").stat().st_size > 5000
        verdicts = pd.read_csv(tmp / "results" / "local" / "verdicts" / f"{e}.csv")
        assert sorted(verdicts["claim_id"]) == sorted(c["id"] for c in SPECS[e].claims)
        assert set(verdicts["verdict"]) <= {"holds", "differs", "not run", "not checkable"}
    assert (tmp / "report" / "index.html").is_file()


def test_results_follow_the_raw_runs(built):
    tmp = built["tmp"]
    table = pd.read_csv(tmp / "results" / "local" / "dlobd-fig7b.csv")
    ok = table[table["status"] == "ok"]
    assert set(ok["cores"]) == {1} and len(ok) > 5
    hung = table[table["status"] == "hung"]
    assert len(hung) == 1 and hung.iloc[0]["cores"] == 2
    assert hung.iloc[0]["reason"] == "killed after the time limit of 900 s"
    # dlobd-fig4c has no local form: an empty table, and no run was invented
    assert pd.read_csv(tmp / "results" / "local" / "dlobd-fig4c.csv").empty


def test_raw_logs_are_only_read(built):
    assert tree_digest(built["tmp"] / "runs") == built["before"]


def test_report_names_not_run_experiments_with_their_reason(built):
    pages = built["tmp"] / "report" / "experiments"
    reason = SPECS["dlobd-fig4c"].scale("local")["reason"]
    assert f"not run</b>: {reason}" in html.unescape((pages / "dlobd-fig4c-local.html").read_text())
    ran = (pages / "dlobd-fig7b-local.html").read_text()
    assert "runs used:" in ran and "1 hung" in ran


def test_report_links_the_figures_and_is_not_written_again_for_one(built):
    tmp = built["tmp"]
    # a figure drawn again leaves the report as it is: it links the figures and reads none, so it
    # is written beside their drawing, not after it
    (tmp / "figures" / "local" / "dlobd-fig7a.png").unlink()
    planned = job_counts(snakemake(tmp, "--dry-run", "--quiet", "rules", config=built["config"]))
    # and the report's own link to the figure is made again (report/figures/, hard links)
    assert planned == {"figure": "1", "report_figures": "1", "all": "1", "total": "3"}
    snakemake(tmp, config=built["config"])
    # once the pipeline is done, every image a page shows is there
    pages = [tmp / "report" / "index.html", *(tmp / "report" / "experiments").glob("*.html")]
    shown = [(page, src) for page in pages for src in re.findall(r'<img src="([^"]+)"', page.read_text())]
    assert len(shown) >= 2 * len(SUBSET)
    assert [(p.name, src) for p, src in shown if not (p.parent / src).is_file()] == []


def test_second_run_has_nothing_to_do_and_new_logs_rebuild(built):
    tmp = built["tmp"]
    assert "Nothing to be done" in snakemake(tmp, config=built["config"])
    # a new attempt of one point rebuilds what depends on it, and nothing else
    make_run(tmp / "runs", SPECS["dlobd-fig7b"].data, "local", {"network": "loopback", "cores": 2},
             {"stderr.log": built["log"]})
    planned = job_counts(snakemake(tmp, "--dry-run", "--quiet", "rules", config=built["config"]))
    assert planned == {"results": "1", "figure": "1", "utilisation": "1", "claims": "1",
                       "report": "1", "report_figures": "1", "all": "1", "total": "7"}
    snakemake(tmp, config=built["config"])
    table = pd.read_csv(tmp / "results" / "local" / "dlobd-fig7b.csv")
    assert set(table["status"]) == {"ok"} and set(table["cores"]) == {1, 2}


def test_pdfs_are_drawn_when_asked_for_and_then_linked(built):
    tmp = built["tmp"]
    page = tmp / "report" / "experiments" / "dlobd-fig7a-local.html"
    assert not list((tmp / "figures").rglob("*.pdf"))
    assert "make figures-pdf" in page.read_text()
    pngs = {p: p.stat().st_mtime_ns for p in (tmp / "figures").rglob("*.png")}
    snakemake(tmp, config=[*built["config"], "pdf=True"], launcher=SNAKEMAKE_MODULE)
    for e in SUBSET:
        assert (tmp / "figures" / "local" / f"{e}.pdf").read_bytes()[:5] == b"%PDF-"
    # linked in the report's own folder, where the report step holds it too
    assert 'href="../figures/local/dlobd-fig7a.pdf"' in page.read_text()
    assert (tmp / "report" / "figures" / "local" / "dlobd-fig7a.pdf").read_bytes()[:5] == b"%PDF-"
    # the PDFs are drawn beside the PNGs, which stay as they were
    assert {p: p.stat().st_mtime_ns for p in pngs} == pngs


def test_launch_records_not_runnable_points_once_and_asks_again(tmp_path):
    # with an empty software prefix no stack is provisioned, so no real job starts: every
    # point gets a `not runnable` record with the reason. A rerun asks again (the cluster may
    # provide the point now) but adds no record while the reason is the same; a changed
    # cluster (another prefix) gives a new attempt. A scale without local points
    # (dlobd-fig4c) launches nothing: its figure says why.
    config = ['experiments=["dlobd-fig7b", "dlobd-fig4c"]', "launch=True"]
    env = {"DLOBD_PREFIX": str(tmp_path / "no-prefix")}
    snakemake(tmp_path, config=config, env=env)
    records = sorted((tmp_path / "runs").rglob("run.json"))
    got = {runs.run_id(p.parent, tmp_path / "runs"): json.loads(p.read_text()) for p in records}
    assert set(got) == {
        f"local/local/dlobd-fig7b/cores-{c}_network-{n}/attempt-001"
        for c in (1, 2) for n in ("loopback", "rdma")
    }
    assert {r["status"] for r in got.values()} == {"not runnable"}
    assert all(r["reason"].startswith("needs hadoop: ") for r in got.values())
    again = snakemake(tmp_path, config=config, env=env)
    assert "rule run:" in again or "checkpoint run:" in again, again
    assert len(list((tmp_path / "runs").rglob("run.json"))) == 4
    snakemake(tmp_path, config=config, env={"DLOBD_PREFIX": str(tmp_path / "other-prefix")})
    newest = sorted((tmp_path / "runs").rglob("attempt-002/run.json"))
    assert len(newest) == 4
    assert all("other-prefix" in json.loads(p.read_text())["reason"] for p in newest)


def test_a_scale_with_runs_from_reads_the_other_specs_runs(tmp_path):
    # slides-inception3-8nodes takes its local runs from slides-inception3-4nodes: launching
    # it runs that spec's three points once, and its rows are those runs, with its own point
    config = ['experiments=["slides-inception3-8nodes"]']
    planned = snakemake(tmp_path, "--dry-run", config=[*config, "launch=True"])
    launched = {line.split("experiment=")[1].split(",")[0] for line in planned.splitlines()
                if "wildcards:" in line and "point=" in line and "experiment=" in line}
    assert job_counts(snakemake(tmp_path, "--dry-run", "--quiet", "rules", config=[*config, "launch=True"]))["run"] == "3"
    assert "slides-inception3-4nodes" in launched
    # the reference set's real runs of the 4-node chart, as a cluster would have left them
    source = ROOT / "data" / "reference" / "local" / "local" / "slides-inception3-4nodes"
    shutil.copytree(source, tmp_path / "runs" / "local" / "local" / "slides-inception3-4nodes")
    snakemake(tmp_path, config=config)
    table = pd.read_csv(tmp_path / "results" / "local" / "slides-inception3-8nodes.csv")
    ok = table[(table["status"] == "ok") & table["value"].notna()]
    assert set(ok["experiment"]) == {"slides-inception3-8nodes"} and set(ok["repeat"]) == {1, 2, 3}
    assert {r.split("/")[2] for r in ok["run_id"]} == {"slides-inception3-4nodes"}
    assert set(ok["batch"]) == {4} and set(ok["network"]) == {"loopback"}
    summaries = json.loads((tmp_path / "results" / "local" / "runs" / "slides-inception3-8nodes.json").read_text())
    assert sorted(r["run_id"] for r in summaries) == sorted(set(table["run_id"]))
    assert not (tmp_path / "runs" / "local" / "local" / "slides-inception3-8nodes").exists()
    verdicts = pd.read_csv(tmp_path / "results" / "local" / "verdicts" / "slides-inception3-8nodes.csv")
    assert list(verdicts["claim_id"]) == ["slides-c32"]


def job_counts(out: str) -> dict:
    """The job table of `snakemake --dry-run --quiet rules`: rule -> count."""
    return dict(line.split() for line in out.splitlines()
                if len(line.split()) == 2 and line.split()[1].isdigit())


def test_full_workflow_plans_all_experiments(tmp_path):
    counts = job_counts(snakemake(tmp_path, "--dry-run", "--quiet", "rules"))
    owners = sum(1 for s in SPECS.values() if not s.data.get("data_from"))
    assert counts["figure"] == str(len(SPECS)) == "55"
    assert counts["results"] == str(owners)
    assert counts["claims"] == str(len(SPECS) + len(spec.claims_files(ROOT)))
    assert counts["report"] == "1"


def test_snakemake_lint_is_clean():
    proc = subprocess.run([*SNAKEMAKE, "--lint"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_snakemake_report_collects_the_figures(built):
    tmp = built["tmp"]
    out = tmp / "report" / "snakemake.html"
    snakemake(tmp, "--report", str(out), config=built["config"])
    page = out.read_text()
    for e in SUBSET:
        assert f"{e}.png" in page


def test_the_snakemake_process_leaves_matplotlib_to_the_drawing_workers():
    """The modules the steps import in the Snakemake process (workflow/rules/common.smk) pull in
    no matplotlib: its import would hold that process's interpreter lock from the other jobs for
    most of a second, and only figure_pool's workers draw."""
    steps = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    modules = sorted(f"{package}.{name.split()[0]}" for package, names in
                     re.findall(r"^\s*from (dlobd[\w.]*) import (.+)$", steps, re.M)
                     for name in names.split(","))
    assert {"dlobd.results.drawing", "dlobd.results.report", "dlobd.results.tidy"} <= set(modules)
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", modules


def test_the_slurm_profile_draws_on_the_host_snakemake_runs_on(built, tmp_path):
    """Under a batch system's executor the figures are local rules: drawn in the figure pool of the
    submitting host, sized by its cores (--cores is unset there; it used to fail on that)."""
    shutil.copytree(built["tmp"] / "runs", tmp_path / "runs")
    target = tmp_path / "figures" / "local" / "dlobd-fig7b.png"
    # no job goes to Slurm: the plugin's first status check need not wait its default 40 s
    snakemake(tmp_path, "--slurm-init-seconds-before-status-checks", "1", str(target),
              config=built["config"], profile="profiles/slurm")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_drawing_server_leaves_when_snakemake_is_gone(tmp_path):
    """The pool's server may still be importing when Snakemake exits (a run with nothing to
    draw); it must not keep Snakemake's output open after that. Here a parent starts a process
    that imports the server's module and would then sleep for ten minutes, with the parent's
    stdout; once it has imported, the parent exits: its stdout reaches its end when that process
    has left as well."""
    server = ("import sys, time, dlobd.results.drawingserver; print('imported', file=sys.stderr, "
              "flush=True); time.sleep(600)")
    parent = ("import subprocess, sys; "
              f"p = subprocess.Popen({_child(server)!r}, stderr=subprocess.PIPE, text=True); "
              "print(p.pid, flush=True); p.stderr.readline()")
    proc = subprocess.Popen(_child(parent), cwd=ROOT, stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    try:
        # the end of the output: every holder of the pipe, the orphaned process too, has exited
        assert proc.communicate(timeout=120)[0] == ""
    except subprocess.TimeoutExpired:
        os.kill(pid, 9)
        raise


def test_the_drawing_server_exits_without_tearing_down_its_modules(tmp_path):
    """Its exit skips the interpreter's teardown (0.13 s with matplotlib and pandas loaded): an
    exit handler registered before its import never runs, and the exit status is still 0."""
    marker = tmp_path / "torn-down"
    code = (f"import atexit, pathlib; atexit.register(pathlib.Path({str(marker)!r}).touch); "
            "import dlobd.results.drawingserver")
    assert subprocess.run(_child(code), cwd=ROOT, timeout=120).returncode == 0
    assert not marker.exists()


def test_a_rehearsal_launches_each_point_once(tmp_path):
    # slides-inception3-4nodes runs each of its local points 3 times; a rehearsal runs them once
    config = ['experiments=["slides-inception3-4nodes"]', "launch=True"]
    counts = [job_counts(snakemake(tmp_path, "--dry-run", "--quiet", "rules", config=[*config, *more]))["run"]
              for more in ([], ["rehearse=True"])]
    assert counts == ["3", "1"]
