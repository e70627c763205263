#!/usr/bin/env python3
"""Time the phases of `make reproduce` (`make bench-reproduce`) or of `make test` and print them.

  begin                    start a new timing file, data/state/<kind>/phases-<UTC>.tsv
  run NAME -- COMMAND...   run COMMAND and append NAME, start, end, exit status to it
  report                   print the newest timing's phases as `name: value` lines; for a
                           reproduce also each experiment's run time and the harness overhead
                           per run

--kind (reproduce, the default, or test) names the timed target.

Standard library only: the first phase (setup) runs before the project's venv exists.
The experiment times come from what the pipeline itself kept: the marker of each `run` step
(`step_s`, its wall time) and each run's run.json (`job_start`/`job_end`: the span of the
stack's own command). The harness overhead of a run is the step's wall time minus that
span: preparation, data staging, samplers, collecting YARN records and logs, run.json.
"""

import argparse
import csv
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _iso(value: str) -> float:
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


def begin(state: Path, kind: str) -> int:
    folder = state / kind
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    with open(folder / f"phases-{stamp}.tsv", "x") as fh:
        fh.write("phase\tstart\tend\texit_status\n")
    return 0


def newest(state: Path, kind: str) -> Path:
    found = sorted((state / kind).glob("phases-*.tsv"))
    if not found:
        sys.exit(f"{state / kind}: no timing of a `make {kind}` yet (run it first)")
    return found[-1]


def run(state: Path, kind: str, name: str, command: list[str]) -> int:
    timing = newest(state, kind)
    start = time.time()
    code = subprocess.call(command)
    with open(timing, "a") as fh:
        fh.write(f"{name}\t{start:.3f}\t{time.time():.3f}\t{code}\n")
    return code


def report(state: Path, kind: str) -> int:
    timing = newest(state, kind)
    phases = list(csv.DictReader(open(timing), delimiter="\t"))
    if not phases:
        sys.exit(f"{timing}: no phase finished yet")
    began = float(phases[0]["start"])
    print(f"{kind}_log: {timing}")
    for p in phases:
        print(f"phase_{p['phase'].replace('-', '_')}_s: {float(p['end']) - float(p['start']):.1f}")
        if p["exit_status"] != "0":
            print(f"phase_{p['phase'].replace('-', '_')}_exit_status: {p['exit_status']}")
    print(f"{kind}_total_s: {float(phases[-1]['end']) - began:.1f}")
    return experiments(state, phases, began) if kind == "reproduce" else 0


def experiments(state: Path, phases: list[dict], began: float) -> int:
    """Each experiment's run time and the harness overhead per run of the reproduce timed in
    `phases`, from the pipeline's markers and run.json files."""
    per_experiment: dict[str, float] = {}
    overheads = []
    launched = 0
    for marker in sorted((state / "launched").rglob("*.json")):
        if marker.stat().st_mtime < began:
            continue  # launched by an earlier reproduce (this one resumed past it)
        step = json.loads(marker.read_text())
        if "step_s" not in step:
            sys.exit(f"{marker}: no step_s (written by a pipeline older than this script)")
        wall = float(step["step_s"])
        launched += 1
        experiment = marker.parent.name
        per_experiment[experiment] = per_experiment.get(experiment, 0.0) + wall
        record = json.loads((Path(step["attempt"]) / "run.json").read_text())
        if record.get("job_start") and record.get("job_end"):
            overheads.append(wall - (_iso(record["job_end"]) - _iso(record["job_start"])))
    for experiment, seconds in sorted(per_experiment.items()):
        print(f"experiment_{experiment}_s: {seconds:.1f}")
    experiments_phase = next((p for p in phases if p["phase"] == "experiments"), None)
    if experiments_phase:
        span = float(experiments_phase["end"]) - float(experiments_phase["start"])
        print(f"figures_verdicts_report_s: {span - sum(per_experiment.values()):.1f}")
    print(f"points_launched: {launched}")
    print(f"runs_with_a_job: {len(overheads)}")
    if overheads:
        print(f"harness_overhead_per_run_s: {statistics.median(overheads):.2f}")
    else:
        print("harness_overhead_per_run_s: n/a (no run launched a job in the last reproduce)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, default=Path("data/state"))
    parser.add_argument("--kind", choices=("reproduce", "test"), default="reproduce")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("begin")
    r = sub.add_parser("run")
    r.add_argument("name")
    r.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("report")
    args = parser.parse_args()
    if args.what == "begin":
        return begin(args.state, args.kind)
    if args.what == "run":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("run: no command after the phase name")
        return run(args.state, args.kind, args.name, command)
    return report(args.state, args.kind)


if __name__ == "__main__":
    sys.exit(main())
