"""`make bench-reproduce` (benchmarks/reproduce/phases.py): phases timed around real commands,
each experiment's time from the `run` steps' markers, and the harness overhead against run.json."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = [sys.executable, str(ROOT / "benchmarks/reproduce/phases.py")]


def phases(state, *args):
    return subprocess.run([*PHASES, "--state", str(state), *args], capture_output=True, text=True)


def launched(state, runs, experiment, point, step_s, job=None, old=False):
    attempt = runs / experiment / point / "attempt-001"
    attempt.mkdir(parents=True)
    record = {"status": "ok" if job else "not runnable"}
    if job:
        record.update(job_start=f"2026-11-26T10:00:{job[0]:06.3f}Z", job_end=f"2026-11-26T10:00:{job[1]:06.3f}Z")
    (attempt / "run.json").write_text(json.dumps(record))
    marker = state / "launched" / "local" / "local" / experiment / f"{point}.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"attempt": str(attempt), "status": record["status"], "step_s": step_s}))
    if old:  # a marker of an earlier reproduce, which this one resumed past
        os.utime(marker, (1, 1))


def test_report_sums_steps_per_experiment_and_sets_jobs_against_them(tmp_path):
    state, runs = tmp_path / "state", tmp_path / "runs"
    assert phases(state, "begin").returncode == 0
    assert phases(state, "run", "setup", "--", "true").returncode == 0
    assert phases(state, "run", "experiments", "--", "sh", "-c", "exit 3").returncode == 3
    launched(state, runs, "dlobd-fig4a", "nodes-1", 12.5, job=(1.0, 12.0))
    launched(state, runs, "dlobd-fig4a", "nodes-2", 20.0, job=(1.0, 20.0))
    launched(state, runs, "dlobd-fig6b", "network-rdma", 0.25)
    launched(state, runs, "dlobd-fig5a", "nodes-1", 99.0, job=(1.0, 2.0), old=True)

    done = phases(state, "report")
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["phase_experiments_exit_status"] == "3"
    assert lines["experiment_dlobd-fig4a_s"] == "32.5" and lines["experiment_dlobd-fig6b_s"] == "0.2"
    assert "experiment_dlobd-fig5a_s" not in lines
    assert lines["points_launched"] == "3" and lines["runs_with_a_job"] == "2"
    assert lines["harness_overhead_per_run_s"] == "1.25"  # the median of 1.5 and 1.0


def test_a_marker_without_the_step_time_is_named(tmp_path):
    state, runs = tmp_path / "state", tmp_path / "runs"
    phases(state, "begin")
    phases(state, "run", "experiments", "--", "true")
    launched(state, runs, "dlobd-fig4a", "nodes-1", 1.0, job=(1.0, 2.0))
    marker = next((state / "launched").rglob("*.json"))
    marker.write_text(json.dumps({"attempt": "x", "status": "ok"}))
    done = phases(state, "report")
    assert done.returncode != 0 and f"{marker}: no step_s" in done.stderr


def test_report_before_any_reproduce_says_so(tmp_path):
    done = phases(tmp_path / "state", "report")
    assert done.returncode != 0 and "no timing of a `make reproduce` yet" in done.stderr


def test_make_test_s_phases_are_timed_apart_from_reproduce_s(tmp_path):
    state = tmp_path / "state"
    assert phases(state, "--kind", "test", "begin").returncode == 0
    assert phases(state, "--kind", "test", "run", "lint", "--", "true").returncode == 0
    assert phases(state, "--kind", "test", "run", "test-unit", "--", "sh", "-c", "sleep 0.2; exit 1").returncode == 1
    out = phases(state, "--kind", "test", "report")
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines())
    assert out.returncode == 0 and set(lines) == {"test_log", "phase_lint_s", "phase_test_unit_s",
                                                  "phase_test_unit_exit_status", "test_total_s"}, out.stdout
    assert float(lines["phase_test_unit_s"]) >= 0.2 and lines["phase_test_unit_exit_status"] == "1"
    assert float(lines["test_total_s"]) >= float(lines["phase_test_unit_s"])
    # a reproduce's timing is its own
    assert "no timing of a `make reproduce` yet" in phases(state, "report").stderr


def test_the_reference_readme_is_written_from_what_the_runs_recorded():
    import importlib.util
    spec = importlib.util.spec_from_file_location("record_reference", ROOT / "benchmarks/reproduce/record_reference.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    runs = ROOT / "data/reference/local"
    found = record.summary(runs)
    records = [json.loads(p.read_text()) for p in runs.rglob("run.json")]
    assert found["attempts"] == len(records) and sum(found["statuses"].values()) == len(records)
    assert found["statuses"]["ok"] == sum(r["status"] == "ok" for r in records)
    commit = found["commits"][0]
    text = record.readme("local", commit, "reproduce_total_s: 1.0\n", found)
    assert f"commit {commit[:7]} (`{commit}`)" in text and "one `make reproduce`" in text
    assert f"{found['attempts']} attempts of {found['points']} points at the local scale" in text
    assert "reproduce_total_s: 1.0" in text and "- hadoop: " in text and "{" not in text
