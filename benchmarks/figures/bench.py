"""Time the pipeline from raw logs to figures, verdicts and report (`make bench-figures`).

cold: every output (results, figures, verdicts, report) built from nothing, into a fresh
temporary directory so the project's own outputs stay as they are; noop: the same command
again, when Snakemake's up-to-date checks find nothing to do; redraw_one: again after one
run attempt's files change (a copy of the runs, so the raw logs stay untouched): its point is
parsed again, its experiment's figure and verdicts redrawn, the report rewritten. Prints
`name: value` lines.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dlobd.execution.runs import all_attempts

ROOT = Path(__file__).resolve().parents[2]


def snakemake(out: Path, runs: str, paper: Path | None) -> float:
    cmd = [
        sys.executable, "-m", "snakemake", "--profile", "profiles/local", "--quiet",
        "all", "--config", f"runs_dir={runs}", f"results_dir={out}/results",
        f"figures_dir={out}/figures", f"report_dir={out}/report", f"state_dir={out}/state",
    ]
    if paper:
        cmd.append(f"paper_runs_dir={paper}")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"bench-figures: snakemake failed (exit {proc.returncode})")
    return elapsed


def count_runs(runs: Path) -> int:
    return len(all_attempts(runs))


def change_one_attempt(runs: Path) -> Path:
    """Change the run.json of the first run attempt (a blank line appended: the same record,
    other bytes); the attempt's path under `runs`: cluster/scale/experiment/point/attempt.
    A touch is no change: Snakemake reruns on a newer input only if its checksum differs."""
    attempt = all_attempts(runs)[0]
    with open(attempt / "run.json", "a") as record:
        record.write("\n")
    return attempt.relative_to(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="data/runs", help="raw run directories to read")
    args = parser.parse_args()
    runs = Path(args.runs) if Path(args.runs).is_absolute() else ROOT / args.runs
    if not runs.is_dir():
        parser.error(f"--runs {runs}: no such folder of runs (make reproduce writes data/runs; "
                     "RUNS=data/reference measures the reference runs)")
    # as make figures: the paper profile's runs beside them, where there are any
    paper = runs.with_name(f"{runs.name}-paper")
    paper = paper if paper.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="bench-figures-") as tmp:
        copy = Path(tmp, "runs")
        shutil.copytree(runs, copy)
        cold = snakemake(Path(tmp), str(copy), paper)
        noop = snakemake(Path(tmp), str(copy), paper)
        changed = change_one_attempt(copy)
        figure = Path(tmp, "figures", changed.parts[1], f"{changed.parts[2]}.png")
        drawn = figure.stat().st_mtime
        redraw = snakemake(Path(tmp), str(copy), paper)
        redrawn = figure.stat().st_mtime != drawn
        figures = len(list(Path(tmp, "figures").glob("*/*.png")))
    print(f"runs_dir: {runs}")
    print(f"paper_runs_dir: {paper or 'none'}")
    print(f"run_attempts: {count_runs(runs)}")
    print(f"figures: {figures}")
    print(f"cpus: {os.cpu_count()}")
    print(f"regenerate_cold_s: {cold:.2f}")
    print(f"regenerate_noop_s: {noop:.2f}")
    print(f"changed_attempt: {changed}")
    print(f"redraw_one_s: {redraw:.2f}")
    # without a redraw, redraw_one_s times only the up-to-date checks
    print(f"redraw_one_redrew_figure: {redrawn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
