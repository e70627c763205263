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
from dlobd.cluster import capabilities, hadoop, inventory, provenance, remote
from dlobd.execution import runs
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

def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def _confs(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv[:-1]) if a == "--conf" and "=" in argv[i + 1])


def container_errors(argv: list[str], node: dict) -> list[str]:
    """A spark-submit's executor container against the smallest NodeManager (`node`: `vcores`,
    `memory_mb`, `step_mb`, what roles yarn and stack_env render for the inventory's declared
    workers). Its memory is the heap plus the overhead, Spark's default where the command sets
    none, rounded up to YARN's step: YARN refuses a container above its maximum allocation, which
    the ResourceManager takes from the largest NodeManager, and never places one larger than a
    NodeManager. A size that is not a number (a dlobd-env.sh variable of a worker whose size the
    inventory does not declare) cannot be checked, and says so."""
    if not any(a.endswith("spark-submit") for a in argv[:1]):
        return []
    out = []
    cores, heap = _option(argv, "--executor-cores"), _option(argv, "--executor-memory")
    overhead = next((v for k, v in _confs(argv).items() if k.endswith("executor.memoryOverhead")), None)
    unknown = [f"{name} {value}" for name, value in (("--executor-cores", cores), ("--executor-memory", heap),
                                                     ("memoryOverhead", overhead))
               if value is not None and not re.fullmatch(r"\d+[mMgG]?", value)]
    if unknown:
        return [f"{'; '.join(unknown)}: not a size before provisioning; declare every worker's "
                "dlobd_hardware.cores and memory_gb so that the check knows its NodeManager"]
    if cores and node.get("vcores") and int(cores) > node["vcores"]:
        out.append(f"--executor-cores {cores} is more than the smallest NodeManager's {node['vcores']} vcores")
    if heap and node.get("memory_mb"):
        heap_mb = hadoop.memory_mb(heap)
        # Spark reads a bare overhead as MiB
        extra = (hadoop.memory_mb(overhead) if overhead[-1] in "mMgG" else int(overhead)) if overhead \
            else hadoop.spark_overhead_mb(heap_mb)
        step = node.get("step_mb") or 1
        total = -(-(heap_mb + extra) // step) * step
        added = "memoryOverhead" if overhead else "Spark's default overhead"
        if total > node["memory_mb"]:
            out.append(f"an executor container of {total} MiB (--executor-memory {heap} + {added} {extra} MiB, in YARN's "
                       f"{step}-MiB steps) is more than the smallest NodeManager's {node['memory_mb']} MB")
    return out


def total_errors(argv: list[str], point: dict) -> list[str]:
    """A spark-submit's executors x cores against the point's stated total cores."""
    executors, cores = _option(argv, "--num-executors"), _option(argv, "--executor-cores")
    stated = point.get("cores")
    if not (isinstance(stated, int) and executors and cores and executors.isdigit() and cores.isdigit()):
        return []
    if int(executors) * int(cores) != stated:
        return [f"--num-executors {executors} x --executor-cores {cores} is not the point's {stated} cores"]
    return []


# The stacks whose Spark executors train on the GPUs; MMLSpark's CNTK learner trains on the GPU
# hosts over ssh and MPI from the driver, and its executors only feed it
GPU_EXECUTOR_STACKS = ("caffeonspark", "tensorflowonspark")


def gpu_errors(result: runner.LaunchResult, point: dict, scale: dict, cluster, stack: str) -> list[str]:
    """A GPU point's processes only on hosts of group gpu; the Spark executors of a stack of
    GPU_EXECUTOR_STACKS, on a cluster where not every worker is one, only where YARN's node label
    for them is (a spark-submit without spark.yarn.executor.nodeLabelExpression may get any worker)."""
    if not capabilities.point_size(scale, point)["per_node"] and "gpu" not in str(point.get("device", "")):
        return []
    gpu = {h.address for h in cluster.members("gpu")} | {h.name for h in cluster.members("gpu")}
    out = [f"process {p['name']} of a GPU point on {p['host']}, which is not in group gpu"
           for p in result.extra.get("processes", []) if p["host"] not in gpu]
    every_worker = {h.name for h in cluster.members("workers")} <= {h.name for h in cluster.members("gpu")}
    argv = result.command or []
    if stack in GPU_EXECUTOR_STACKS and argv and argv[0].endswith("spark-submit") and not every_worker \
            and "spark.yarn.executor.nodeLabelExpression" not in _confs(argv):
        out.append("a GPU point's spark-submit without spark.yarn.executor.nodeLabelExpression on a cluster "
                   "where not every worker is in group gpu")
    return out


def interface_errors(result: runner.LaunchResult, cluster) -> list[str]:
    """An MPI run's TCP interfaces (btl_tcp_if_include: names or networks) against each of its
    hosts: one mpirun hands the same names to every host, and a host whose cluster interface has
    another name (ib1 on the GPU hosts beside ib0) has no such interface. A network (CIDR) holds
    on every host; a value only provisioning finds is not judged here."""
    env = result.extra.get("remote_env") or {}
    given = env.get("DLOBD_MMLSPARK_TCP_IF", "")
    names = [] if given.startswith("<") else [n for n in given.split(",") if n and "/" not in n]
    by_address = {h.address: h for h in cluster.hosts.values()}
    out = []
    for address in env.get("DLOBD_MMLSPARK_HOSTS", "").split():
        host = by_address.get(address)
        for name in names:
            if host is not None and host.interface and host.interface != name:
                out.append(f"btl_tcp_if_include {name} on {host.name}, whose cluster interface is {host.interface} "
                           "(mmlspark_tcp_if_include: give the network, e.g. 192.168.100.0/24, which every host has)")
    return out


# A setting a command names for its shell to expand ($SPARK_HOME, ${LD_LIBRARY_PATH:-}); the
# lower-case names are the supervisor's own shell variables ($task), set where they are used
NAMED_SETTING = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)")
# what every login shell has, whether dlobd-env.sh sets it or not, and bash's own (an MPI rank's
# exit status through its output filter)
SHELL_OWN = frozenset({"PATH", "HOME", "USER", "LD_LIBRARY_PATH", "TMPDIR", "PIPESTATUS"})


def variable_errors(result: runner.LaunchResult, cluster) -> list[str]:
    """Every setting a command, its processes and their environments name for the shell to
    expand, against what dlobd-env.sh sets on the launch host (the hosts' files set the same
    names) and what the command's own environment adds: one the shell would expand to nothing."""
    env = result.extra.get("env") or {}
    given = set(cluster.settings) | set(env) | SHELL_OWN
    processes = result.extra.get("processes", [])
    texts = [*map(str, result.command or []), *map(str, env.values()),
             *(str(v) for p in processes for v in [*p["command"], *(p.get("env") or {}).values()]),
             *map(str, (result.extra.get("remote_env") or {}).values())]
    unset = sorted({name for text in texts for name in NAMED_SETTING.findall(text)} - given)
    return [f"${name}, which dlobd-env.sh on {cluster.launch_host} does not set" for name in unset]


def check(done: list, specs: dict, scale: str, cluster) -> list[str]:
    """Every way the commands of a dry run break a rule of the inventory's cluster, as
    '<experiment> <point>: <rule>: <what>' lines (empty: every command passes)."""
    node = inventory.smallest_nodemanager(cluster.members("workers"), cluster.role_settings)
    node["step_mb"] = int(cluster.role_settings.get("dlobd_yarn_min_allocation_mb") or 1)
    hosts = list(cluster.hosts.values())
    out = []
    for eid, pid, result in done:
        if result.status != "dry run":
            continue
        point = dict(specs[eid].points(scale))[pid]
        argv = [str(a) for a in result.command or []]
        rules = {"container within a node": container_errors(argv, node),
                 "executors x cores": total_errors(argv, point),
                 "GPU hosts only": gpu_errors(result, point, specs[eid].scale(scale), cluster,
                                              specs[eid].scale(scale).get("stack", specs[eid].data["stack"])),
                 "interfaces on their hosts": interface_errors(result, cluster),
                 "settings the shell expands": variable_errors(result, cluster)}
        for process in result.extra.get("processes", []):
            rules.setdefault("each host's own address", []).extend(remote.identity_errors(process, hosts))
            rules.setdefault("ports chosen on their host", []).extend(remote.port_errors(process))
        out += [f"{eid} {pid}: {rule}: {error}" for rule, errors in rules.items() for error in errors]
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
