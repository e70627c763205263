#!/usr/bin/env python3
"""Record the reference runs again (`make record-reference`): a fresh clone of this checkout's
commit runs `make reproduce` and `make reproduce-paper`; their raw logs replace data/reference and
data/reference-paper, each with a README written from what the runs themselves recorded.

The checkout must be clean: the runs name the commit they ran, and the report flags runs whose
experiment or stack has changed since. The clone's folder must not exist yet (nothing recorded
is overwritten; the runs replaced stay in git's history). Variables the targets read
(SOURCE_MIRROR, DLOBD_APPTAINER_TARBALL, DLOBD_PREFIX ...) pass through the environment.
"""

import argparse
import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2

from dlobd.results.report import widest_isa

ROOT = Path(__file__).resolve().parents[2]
# profile: (target, the clone's runs folder, the phase-timing report target, the folder it replaces)
PROFILES = {
    "local": ("reproduce", "data/runs", "bench-reproduce", "data/reference"),
    "paper": ("reproduce-paper", "data/runs-paper", "bench-paper-profile", "data/reference-paper"),
}

SOFTWARE = ("java", "hadoop", "spark", "python", "tensorflow", "tensorflowonspark", "bigdl", "mpi")


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def _minute(iso: str) -> str:
    return f"{iso[:10]} {iso[11:16]} UTC"


def summary(runs: Path) -> dict:
    """What the runs recorded: the commits, the span of their times, the machine, the statuses."""
    paths = sorted(runs.rglob("run.json"))
    records = [json.loads(p.read_text()) for p in paths]
    if not records:
        raise SystemExit(f"{runs}: no run.json: the run recorded nothing")
    system = records[0].get("system") or {}
    return {
        "commits": sorted({(r.get("git") or {}).get("commit") or "none" for r in records}),
        "dirty": any((r.get("git") or {}).get("dirty") for r in records),
        "first": _minute(min(r["start"] for r in records)), "last": _minute(max(r["end"] or r["start"] for r in records)),
        "machine": f"{system.get('cpu_model')}"
                   + (f" ({widest_isa(system['cpu_isa'])})" if system.get("cpu_isa") is not None else "")
                   + f", {system.get('cpus')} cores, "
                   f"{round((system.get('memory_mb') or 0) / 1024)} GiB, kernel {system.get('kernel')}",
        "attempts": len(records),
        "points": len({p.parent.parent for p in paths}),
        "statuses": dict(collections.Counter(r["status"] for r in records).most_common()),
        "experiments": sorted({r["experiment"] for r in records}),
        "software": {name: sorted({" ".join(str(v).split()) for r in records if (v := (r.get("versions") or {}).get(name))})
                     for name in SOFTWARE},
        "scales": sorted({r["scale"] for r in records}),
    }


def readme(profile: str, commit: str, phases: str, found: dict) -> str:
    template = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                  undefined=jinja2.StrictUndefined, keep_trailing_newline=True
                                  ).get_template("reference-README.md.j2")
    return template.render(profile=profile, target=PROFILES[profile][0], commit=commit, phases=phases.strip(), **found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clone", required=True, type=Path, help="where the fresh clone goes (must not exist)")
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    args = parser.parse_args()
    if git("status", "--porcelain", "--untracked-files=no"):
        sys.exit("the checkout has uncommitted changes: commit them first, the runs name the commit they ran")
    if args.clone.exists():
        sys.exit(f"{args.clone} exists: name a new folder (recorded runs are never overwritten)")
    commit = git("rev-parse", "HEAD")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(args.clone)], check=True)
    for profile in args.profiles:
        target, runs, bench, reference = PROFILES[profile]
        # the paper profile's runs are compared with the modern ones: those just recorded, else the checkout's
        modern = args.clone / "data/runs" if "local" in args.profiles else ROOT / PROFILES["local"][3]
        status = subprocess.call(["make", "-C", str(args.clone), target, f"MODERN_RUNS={modern}"])
        if status:
            sys.exit(f"`make {target}` in {args.clone} exited {status}: {reference} is left as it was")
        phases = subprocess.run(["make", "-s", "-C", str(args.clone), bench], capture_output=True, text=True).stdout
        found = summary(args.clone / runs)
        if found["commits"] != [commit]:
            sys.exit(f"{args.clone / runs}: runs of commits {found['commits']}, not only {commit}")
        dest = ROOT / reference
        shutil.rmtree(dest / "local", ignore_errors=True)
        shutil.copytree(args.clone / runs / "local", dest / "local")
        (dest / "README.md").write_text(readme(profile, commit, phases, found))
        print(f"{reference}: {found['attempts']} attempts of {found['points']} points, {found['statuses']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
