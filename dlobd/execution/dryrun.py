"""`dlobd dry-run`: the exact command of every point of a scale, running nothing.

Each point goes through runs.launch with dry_run on: its launcher computes the command a real
launch would run and returns it without a side effect (no attempt directory, no run.json,
nothing staged or built). With `--inventory` the cluster is the inventory's (dlobd.cluster.inventory):
its workers' cluster addresses (their Ethernet addresses for the points of an Ethernet network),
its launch host's prefix and settings, its declared hardware; without, this machine's
provisioned prefix. A point the cluster cannot provide prints its reason.

The commands print as a shell reads them after sourcing the hosts' dlobd-env.sh: a `$VAR` of a
setting that only the hosts know stays expandable. With `--write DIR` each point's attempt folder
under DIR gets the files its command names (a TF cluster's tasks.json, prototxts, hostfiles) and
`command.sh`, which sources dlobd-env.sh, exports the command's own environment and runs it there;
a command holding a value only the launch can know (a port a host chooses) gets none, saying why.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from pathlib import Path

from dlobd import ROOT
from dlobd import spec as dspec
from dlobd.cluster import inventory, provenance
from dlobd.execution import checks, runs
from dlobd.stacks import runner


ASSUME_WHERE = "the command line (dlobd dry-run --assume)"


def dry_runs(specs: dict, scale: str, runs_dir, cluster: str | None = None, experiments=None,
             overrides: dict | None = None, rehearse: bool = False) -> list[tuple[str, str, runner.LaunchResult]]:
    """(experiment, point id, LaunchResult) of every point the pipeline would launch at
    `scale` (specs whose data come from another spec's runs launch nothing: that spec's
    points are launched instead), with `overrides` in place of values the scale assumes and
    under `cluster` (default: the inventory's dlobd_cluster_name); `rehearse`: as a rehearsal
    launches them (the work cut, each point once)."""
    dspec.check_site_overrides(dspec.site_overrides(provenance.stack_setting(dspec.SITE_ASSUME)),
                               {i: s.data for i, s in specs.items()})
    cluster = cluster or provenance.cluster_name()
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
        if overrides:
            dspec.check_overrides(spec.data, scale, overrides, ASSUME_WHERE)
        for pid, point in points:
            if rehearse and not runs.rehearsed_point(point):
                continue
            out.append((eid, pid, runs.launch(spec.data, scale, point, runs_dir, cluster=cluster, dry_run=True,
                                              overrides=overrides, where=ASSUME_WHERE, rehearse=rehearse)))
    return out


# ---------------------------------------------------------------- --check: each command against the cluster

def check(done: list, specs: dict, scale: str, cluster) -> list[str]:
    """Every way the commands of a dry run break a rule of the inventory's cluster (checks), as
    '<experiment> <point>: <rule>: <what>' lines (empty: every command passes)."""
    out = []
    for eid, pid, result in done:
        if result.status != "dry run":
            continue
        point = dict(specs[eid].points(scale))[pid]
        stack = dspec.stack_of_point(specs[eid].data, specs[eid].scale(scale), point)
        out += [f"{eid} {pid}: {line}" for line in
                checks.broken(checks.point_errors(result, point, specs[eid].scale(scale), stack, cluster))]
    return out


# A `$NAME` (a setting of dlobd-env.sh) that the shell must expand, and a value only the launch knows
SHELL_VARIABLE = re.compile(r"\$\{?[A-Za-z_]")
LAUNCH_VALUE = re.compile(r"<[a-z][^<>]* [^<>]*>")


def shell_word(arg) -> str:
    """`arg` quoted for a POSIX shell, a `$VAR` in it left for the shell to expand."""
    text = str(arg)
    if not SHELL_VARIABLE.search(text):
        return shlex.quote(text)
    return '"' + re.sub(r'(["\\`])', r"\\\1", text) + '"'


def shell_line(argv) -> str:
    return " ".join(shell_word(a) for a in argv)


def exports(env: dict) -> str:
    return " ".join(shell_word(f"{k}={v}") for k, v in sorted(env.items()))


def describe(result: runner.LaunchResult) -> list[str]:
    """The lines a dry run prints for one point."""
    if result.status != "dry run":
        return [f"  {result.status}: {result.reason}"]
    lines = [f"  $ {('cd ' + shell_word(result.cwd) + ' && ') if result.cwd else ''}"
             f"{shell_line(result.command)}"]
    if runs.cuts_text(result.labels):
        lines.append(f"    rehearsal, the work cut: {runs.cuts_text(result.labels)}")
    if runs.standins_text(result.labels):
        lines.append(f"    standing in: {runs.standins_text(result.labels)}")
    if result.extra.get("env"):
        lines.append(f"    environment of the command: {exports(result.extra['env'])}")
    for proc in result.extra.get("processes", []):
        env = exports(proc.get("env") or {})
        ports = ", ".join(f"{what} {port}" for what, port in (proc.get("ports") or {}).items())
        chosen = f" (port {ports}, chosen {proc['ports_chosen']})" if ports else ""
        lines.append(f"    {proc['name']} on {proc['host']}{chosen}: {env + ' ' if env else ''}"
                     f"{shell_line(proc['command'])}")
    if result.extra.get("remote_env"):
        lines.append(f"    environment on the MPI hosts: {exports(result.extra['remote_env'])}")
    if result.extra.get("mpirun"):
        lines.append(f"    the supervisor starts them as the ranks of one mpirun: {result.extra['mpirun']}")
    for name, text in result.extra.get("files", {}).items():
        lines.append(f"    file {name}: " + " | ".join(text.splitlines()))
    lines += [f"    ({note})" for note in result.extra.get("notes", [])]
    return lines


def launch_values(result: runner.LaunchResult) -> list[str]:
    """The values in a point's command, its processes and files that only its launch can know."""
    texts = [*map(str, result.command or []), *map(str, result.extra.get("env", {}).values()),
             *(str(a) for p in result.extra.get("processes", []) for a in p["command"]),
             *result.extra.get("files", {}).values()]
    return sorted({m for text in texts for m in LAUNCH_VALUE.findall(text)})


def command_script(result: runner.LaunchResult, env_file: Path, title: str) -> str:
    """command.sh of a point: its command after the hosts' dlobd-env.sh, in its own folder."""
    lines = ["#!/bin/sh", f"# {title}: written by dlobd dry-run --write, run on the launch host", "set -e",
             f". {shell_word(env_file)}"]
    if result.extra.get("env"):
        lines.append(f"export {exports(result.extra['env'])}")
    if result.cwd:
        lines.append('cd "$(dirname "$0")"')
    return "\n".join([*lines, f"exec {shell_line(result.command)}"]) + "\n"


def write_points(done: list, specs: dict, scale: str, runs_dir: Path, cluster: str, env_file: Path) -> list[str]:
    """Each point's files and command.sh in its attempt folder under `runs_dir`, as its launch
    would name them; lines saying what was written, or why a point got no command.sh."""
    out = []
    for eid, pid, result in done:
        if result.status != "dry run":
            continue
        adir = runs.next_attempt(runs_dir, cluster, scale, eid, dict(specs[eid].points(scale))[pid])
        if result.cwd and Path(result.cwd) != adir.resolve():
            out.append(f"{eid} {pid}: no command.sh: its command runs in {result.cwd}, not its attempt folder")
            continue
        unknown = launch_values(result)
        if unknown:
            out.append(f"{eid} {pid}: no command.sh: {', '.join(unknown)} (known at launch only; "
                       "dlobd_worker_ports gives the ports a range the dry run can name)")
            continue
        adir.mkdir(parents=True)
        for name, text in {**result.extra.get("files", {}),
                           "command.sh": command_script(result, env_file, f"{eid} {pid} at scale {scale}")}.items():
            (adir / name).parent.mkdir(parents=True, exist_ok=True)
            with open(adir / name, "x", encoding="utf-8") as fh:
                fh.write(text)
        (adir / "command.sh").chmod(0o755)
        out.append(f"{eid} {pid}: {adir / 'command.sh'}")
    return out


def register(parser) -> None:
    parser.add_argument("--scale", default="local", help="scale to dry-run (default: local)")
    parser.add_argument("--inventory", type=Path,
                        help="Ansible inventory of the cluster (default: this machine's provisioned prefix)")
    parser.add_argument("--prefix", help="every host's dlobd_prefix, as `make provision DLOBD_PREFIX=` sets it")
    parser.add_argument("--experiment", action="append", dest="experiments", metavar="ID",
                        help="only this experiment (repeatable; default: all)")
    parser.add_argument("--runs", default=str(ROOT / "data" / "runs"),
                        help="the runs directory the attempts would go to (read, never written)")
    parser.add_argument("--write", type=Path, metavar="DIR",
                        help="an empty or new folder: each point's attempt folder there gets the files its "
                             "command names and command.sh (sources dlobd-env.sh, runs the command); "
                             "the commands name those folders (in place of --runs)")
    parser.add_argument("--cluster", help="the cluster name runs are recorded under (default: the "
                                          "inventory's dlobd_cluster_name, else local)")
    parser.add_argument("--assume", default="", metavar="NAME=VALUE ...",
                        help="values in place of those the experiments assume where their paper states "
                             "none, e.g. 'batch=384' (as make experiment ASSUME=)")
    parser.add_argument("--rehearse", action="store_true",
                        help="the commands of a rehearsal (make experiments REHEARSE=1): each point once, "
                             "its work cut to the scale's `rehearsal` values")
    parser.add_argument("--root", default=str(ROOT), help="project root holding experiments/")
    parser.add_argument("--check", action="store_true",
                        help="with --inventory: test every command against its cluster (containers within a "
                             "node, executors x cores, each host's own address, ports chosen on their host, "
                             "GPU points on GPU hosts, MPI interfaces on their hosts); exit status 1 naming each command and rule broken")


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
    if args.write and args.write.exists() and any(args.write.iterdir()):
        print(f"dlobd dry-run: --write {args.write}: not empty (the folder gets new attempt folders "
              "only, and overwrites nothing)", file=sys.stderr)
        return 2
    runs_dir = args.write.resolve() if args.write else args.runs
    try:
        overrides = dspec.parse_overrides(args.assume, ASSUME_WHERE)
        with using(args):
            done = dry_runs(specs, args.scale, runs_dir, args.cluster, args.experiments, overrides, args.rehearse)
            written = write_points(done, specs, args.scale, runs_dir, args.cluster or provenance.cluster_name(),
                                   provenance.prefix() / "etc" / "dlobd-env.sh") if args.write else []
    except (inventory.InventoryError, dspec.SettingError) as exc:
        print(f"dlobd dry-run: {exc}", file=sys.stderr)
        return 2
    where = f"inventory {args.inventory}" if args.inventory else f"prefix {provenance.prefix()}"
    print(f"dry run at scale {args.scale} for {where}: nothing is run"
          + (f"; each point's files and command.sh written under {args.write}" if args.write else " or written"))
    if args.inventory:
        print("where each host keeps the runs' state (dlobd_local_dir):")
        print("\n".join(f"  {line}" for line in inventory.state_places(inventory.load(args.inventory, args.prefix))))
    for eid, pid, result in done:
        print(f"{eid} {pid}:")
        print("\n".join(describe(result)))
    for eid in sorted(args.experiments or specs):
        if specs[eid].runs_from(args.scale):
            print(f"{eid}: its points are those of {specs[eid].runs_from(args.scale)} (runs_from), run once")
    counts = {s: sum(1 for *_, r in done if r.status == s) for s in ("dry run", "not runnable", "failed")}
    print(f"{len(done)} points: {counts['dry run']} with a command, {counts['not runnable']} not "
          f"runnable, {counts['failed']} launcher errors")
    if args.write:
        print(f"written under {args.write}:")
        print("\n".join(f"  {line}" for line in written))
    if not args.check:
        return 1 if counts["failed"] else 0
    if not args.inventory:
        print("dlobd dry-run: --check needs --inventory (the cluster to check the commands against)", file=sys.stderr)
        return 2
    broken = check(done, specs, args.scale, inventory.load(args.inventory, args.prefix))
    print("\n".join(["check: every command passes" if not broken else f"check: {len(broken)} broken rule(s):",
                      *(f"  {line}" for line in broken)]))
    return 1 if counts["failed"] or broken else 0
