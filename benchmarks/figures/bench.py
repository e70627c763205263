"""Time the pipeline from raw logs to figures, verdicts and report (`make bench-figures`).

cold: every output (results, figures, verdicts, report) built from nothing, into a fresh
temporary directory so the project's own outputs stay as they are; noop: the same command
again, when Snakemake's up-to-date checks find nothing to do. Prints `name: value` lines.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def snakemake(out: Path, runs: str) -> float:
    cmd = [
        str(Path(sys.executable).with_name("snakemake")), "--profile", "profiles/local", "--quiet",
        "all", "--config", f"runs_dir={runs}", f"results_dir={out}/results",
        f"figures_dir={out}/figures", f"report_dir={out}/report", f"state_dir={out}/state",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"bench-figures: snakemake failed (exit {proc.returncode})")
    return elapsed


def count_runs(runs: Path) -> int:
    return sum(1 for _ in runs.glob("*/*/*/*/attempt-*")) if runs.is_dir() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="data/runs", help="raw run directories to read")
    args = parser.parse_args()
    runs = Path(args.runs) if Path(args.runs).is_absolute() else ROOT / args.runs
    with tempfile.TemporaryDirectory(prefix="bench-figures-") as tmp:
        cold = snakemake(Path(tmp), str(runs))
        noop = snakemake(Path(tmp), str(runs))
        figures = len(list(Path(tmp, "figures").glob("*/*.png")))
    print(f"runs_dir: {runs}")
    print(f"run_attempts: {count_runs(runs)}")
    print(f"figures: {figures}")
    print(f"cpus: {os.cpu_count()}")
    print(f"regenerate_cold_s: {cold:.2f}")
    print(f"regenerate_noop_s: {noop:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
