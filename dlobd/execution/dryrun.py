"""`dlobd dry-run`: the exact command of every point of a scale, running nothing.

Each point goes through runs.launch with dry_run on: its launcher computes the command a real
launch would run and returns it without a side effect (no attempt directory, no run.json,
nothing staged or built). With `--inventory` the cluster is the inventory's (dlobd.cluster.inventory):
its workers' cluster addresses (their Ethernet addresses for the points of an Ethernet network),
its launch host's prefix and settings, its declared hardware; without, this machine's
provisioned prefix. A point the cluster cannot provide prints its reason.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path

from dlobd import ROOT
from dlobd import spec as dspec
from dlobd.cluster import inventory, provenance
from dlobd.execution import runs
from dlobd.stacks import runner


def dry_runs(specs: dict, scale: str, runs_dir, cluster: str = "local",
             experiments=None) -> list[tuple[str, str, runner.LaunchResult]]:
    """(experiment, point id, LaunchResult) of every point the pipeline would launch at
    `scale` (specs whose data come from another spec's runs launch nothing: that spec's
    points are launched instead)."""
    chosen = set(experiments or specs)
    chosen |= {specs[e].runs_from(scale) for e in chosen if specs[e].runs_from(scale)}
    out = []
    for eid in sorted(chosen):
        spec = specs[eid]
        if spec.data.get("data_from") or spec.runs_from(scale):
            continue
        try:
            points = spec.points(scale)
        except KeyError:
            continue  # no such scale in this spec
        for pid, point in points:
            out.append((eid, pid, runs.launch(spec.data, scale, point, runs_dir, cluster=cluster,
                                              dry_run=True)))
    return out


def describe(result: runner.LaunchResult) -> list[str]:
    """The lines a dry run prints for one point."""
    if result.status != "dry run":
        return [f"  {result.status}: {result.reason}"]
    lines = [f"  $ {('cd ' + shlex.quote(result.cwd) + ' && ') if result.cwd else ''}"
             f"{shlex.join(result.command)}"]
    for proc in result.extra.get("processes", []):
        env = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted((proc.get("env") or {}).items()))
        lines.append(f"    {proc['name']} on {proc['host']}: {env + ' ' if env else ''}"
                     f"{shlex.join(proc['command'])}")
    for name, text in result.extra.get("files", {}).items():
        lines.append(f"    file {name}: " + " | ".join(text.splitlines()))
    lines += [f"    ({note})" for note in result.extra.get("notes", [])]
    return lines


def register(parser) -> None:
    parser.add_argument("--scale", default="local", help="scale to dry-run (default: local)")
    parser.add_argument("--inventory", type=Path,
                        help="Ansible inventory of the cluster (default: this machine's provisioned prefix)")
    parser.add_argument("--prefix", help="every host's dlobd_prefix, as `make provision DLOBD_PREFIX=` sets it")
    parser.add_argument("--experiment", action="append", dest="experiments", metavar="ID",
                        help="only this experiment (repeatable; default: all)")
    parser.add_argument("--runs", default=str(ROOT / "data" / "runs"),
                        help="the runs directory the attempts would go to (read, never written)")
    parser.add_argument("--cluster", default="local", help="the cluster name runs are recorded under")
    parser.add_argument("--root", default=str(ROOT), help="project root holding experiments/")


def using(args):
    """The context every command of an `--inventory` runs in (no inventory: this machine)."""
    if not args.inventory:
        return contextlib.nullcontext()
    return provenance.inventory_in_use(inventory.load(args.inventory, args.prefix))


def run(args) -> int:

    specs = dspec.load_all(args.root)
    unknown = sorted(set(args.experiments or []) - set(specs))
    if unknown:
        print(f"dlobd dry-run: no spec for {', '.join(unknown)} in {args.root}/experiments", file=sys.stderr)
        return 2
    try:
        with using(args):
            done = dry_runs(specs, args.scale, args.runs, args.cluster, args.experiments)
    except inventory.InventoryError as exc:
        print(f"dlobd dry-run: {exc}", file=sys.stderr)
        return 2
    where = f"inventory {args.inventory}" if args.inventory else f"prefix {provenance.prefix()}"
    print(f"dry run at scale {args.scale} for {where}: nothing is run or written")
    for eid, pid, result in done:
        print(f"{eid} {pid}:")
        print("\n".join(describe(result)))
    for eid in sorted(args.experiments or specs):
        if specs[eid].runs_from(args.scale):
            print(f"{eid}: its points are those of {specs[eid].runs_from(args.scale)} (runs_from), run once")
    counts = {s: sum(1 for *_, r in done if r.status == s) for s in ("dry run", "not runnable", "failed")}
    print(f"{len(done)} points: {counts['dry run']} with a command, {counts['not runnable']} not "
          f"runnable, {counts['failed']} launcher errors")
    return 1 if counts["failed"] else 0
