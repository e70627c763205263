"""`dlobd plan`: which experiments this cluster can run at a scale, and why not the others.

The cluster's capabilities are detected, not assumed: InfiniBand from /sys/class/infiniband,
GPUs from /dev/nvidia* and nvidia-smi, the provisioned software from the prefix
($DLOBD_PREFIX, default ~/dlobd-stack), MPI and the C++ gRPC toolchain from PATH and
pkg-config. A spec's scale says what it `needs` (and which points need more); a scale
marked not runnable carries its own reason.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from pathlib import Path

import yaml

from dlobd import NOT_OBTAINABLE, ROOT, NotRunnable, stacks
from dlobd import spec as dspec
from dlobd.cluster import capabilities, inventory, provenance
from dlobd.execution import dryrun, runs
from dlobd.spec import point_id
from dlobd.stacks import runner


def launcher_missing(stack_name: str) -> list[str]:
    """Why the project cannot launch this stack yet; empty if its module has a launcher."""
    try:
        module = stacks.get(stack_name)
    except (KeyError, ImportError, ValueError) as exc:
        return [f"stack {stack_name!r} is not available: {exc}"]
    return [] if hasattr(module, "launch") else [f"stack {stack_name!r} has no launcher yet"]


# A setting a launcher names: an upper-case name such as CNTK_HOME_CPU_MKL; of two named as
# alternatives ("A or B") the plan asks for the second, the one the site installs itself
SETTING_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
ALTERNATIVES = re.compile(r"\b([A-Z][A-Z0-9_]+) or [A-Z][A-Z0-9_]+\b")
# How often the plan supplies the settings a launcher names and asks it again: each stack checks
# a handful of settings one after another
LAUNCHER_ROUNDS = 8


def _launch_dry(spec, scale_name: str, scale: dict, point: dict, runs_dir) -> runner.LaunchResult:
    """The point's launcher in a dry run, asked whatever the cluster lacks (runs.launch would stop
    at the first missing capability, and the plan wants every unmet need)."""
    axis = spec.data.get("stack_axis")
    module = stacks.get(str(point[axis]) if axis and axis in point else spec.stack(scale_name))
    ctx = runner.RunContext(spec=spec.data, scale=scale_name, cluster="plan", point=dict(point),
                            attempt_dir=runs.next_attempt(runs_dir, "plan", scale_name, spec.data["id"], point),
                            runs_dir=Path(runs_dir), fixed=dict(scale.get("fixed", {})),
                            time_limit_s=scale.get("time_limit_s"), dry_run=True)
    try:
        return module.launch(ctx)
    except NotRunnable as exc:
        return runner.LaunchResult(None, "not runnable", str(exc))
    except Exception as exc:  # a launcher that cannot cope with what the cluster lacks
        return runner.LaunchResult(None, "failed", f"launcher error: {type(exc).__name__}: {exc}")


def _merge(asks: dict, more: dict) -> None:
    """Add inventory settings to `asks`: mappings merged entry by entry, lists joined."""
    for variable, value in more.items():
        have = asks.get(variable)
        if isinstance(value, dict) and isinstance(have, dict):
            _merge(have, value)
        elif isinstance(value, list) and isinstance(have, list):
            asks[variable] = list(dict.fromkeys([*have, *value]))
        else:
            asks[variable] = copy.deepcopy(value)


# Per-host settings a reason names, asked of every worker that lacks them: the variable (a field
# of dlobd_hardware, or the host's own variable) -> the placeholder's words. A node's cores and
# memory go together: the plan and the dry run lay executors out in both.
HOST_SETTINGS = {
    "dlobd_hardware.cores": "logical CPUs of {host}, as YARN counts them",
    "dlobd_hardware.memory_gb": "GB of memory of {host}",
    "dlobd_hardware.lustre": "a folder of {host} on Lustre",
    "dlobd_ethernet_address": "the Ethernet address of {host}",
}
TOGETHER = {"dlobd_hardware.cores": "dlobd_hardware.memory_gb", "dlobd_hardware.memory_gb": "dlobd_hardware.cores"}


def host_asks(reasons: list[str], cluster) -> dict:
    """{'hosts': {worker: settings}} for the per-host settings `reasons` name (HOST_SETTINGS),
    for each worker that lacks them."""
    named = {n for n in HOST_SETTINGS if any(n in r for r in reasons)}
    named |= {TOGETHER[n] for n in named if n in TOGETHER}
    hosts = {}
    for host in cluster.members("workers"):
        for name in sorted(named):
            variable, _, item = name.partition(".")
            have = host.hardware.get(item) if item else host.ethernet_address
            if have in (None, ""):
                value = inventory.placeholder(HOST_SETTINGS[name].format(host=host.name))
                _merge(hosts.setdefault(host.name, {}), {variable: {item: value} if item else value})
    return {"hosts": hosts} if hosts else {}


def point_needs(spec, scale_name: str, scale: dict, point: dict, runs_dir) -> tuple[list[str], dict]:
    """(every unmet need of one point of an inventory's cluster, the inventory settings that give
    those that a setting gives, as {'vars': ..., 'hosts': {host: ...}}): the capabilities and sizes
    it lacks, then what its launcher lacks. The launcher is asked as if the cluster had the
    capabilities it lacks (Lustre, then the file lists on it), and each setting it names is
    supplied (a placeholder) and the launcher asked again, so no unmet need hides the next."""
    cluster = provenance.inventory()
    reasons, asks = [], {}
    lacking = capabilities.unmet(scale, point)
    for capability, why in lacking:
        reasons.append(why)
        if capability:
            _merge(asks, {"vars": capabilities.settings_for(capability, cluster)})
    dataset = scale.get("dataset", spec.data.get("dataset"))
    if why := capabilities.dataset_missing(dataset):
        reasons.append(why)
        _merge(asks, {"vars": capabilities.dataset_settings(dataset, cluster)})
    axis = spec.data.get("stack_axis")
    no_launcher = launcher_missing(str(point[axis]) if axis and axis in point else spec.stack(scale_name))
    if no_launcher:
        return reasons + no_launcher, _with_hosts(asks, reasons, cluster)
    assumed = cluster.assumed | {capability for capability, _ in lacking if capability}
    supplied = {}
    for _ in range(LAUNCHER_ROUNDS):
        asked = dataclasses.replace(cluster, settings={**cluster.settings, **supplied}, assumed=frozenset(assumed))
        with provenance.inventory_in_use(asked):
            result = _launch_dry(spec, scale_name, scale, point, runs_dir)
        if result.status == "dry run" or (result.status == "failed" and reasons):
            break
        second = {m[1] for m in ALTERNATIVES.finditer(result.reason)}
        # a setting a role records once the inventory runs it is supplied too, asking nothing
        named = {n for n in SETTING_NAME.findall(result.reason) if n not in second and n not in supplied
                 and not cluster.settings.get(n) and NOT_OBTAINABLE not in result.reason
                 and (n in cluster.role_records or inventory.settings_giving(n, cluster))}
        # launchers name dlobd-env.sh's variables: the reason also names the inventory's
        given = {variable for n in named for variable in inventory.settings_giving(n, cluster)
                 if not re.search(rf"\b{variable}\b", result.reason)}
        reasons.append(result.reason + (f" (in the inventory: {', '.join(sorted(given))})" if given else ""))
        if not named:
            break
        for name in sorted(named):
            supplied[name] = inventory.placeholder(name)
            _merge(asks, {"vars": inventory.settings_giving(name, cluster)})
    reasons = list(dict.fromkeys(reasons))
    return reasons, _with_hosts(asks, reasons, cluster)


def _with_hosts(asks: dict, reasons: list[str], cluster) -> dict:
    """`asks` with the per-host settings the point's reasons name (host_asks)."""
    _merge(asks, host_asks(reasons, cluster))
    return asks


def plan_spec(spec, scale_name: str, runs_dir=None) -> dict:
    """{'runnable': n points, 'blocked': {point_id: reasons}, 'reason': whole-scale reason,
    'settings': the inventory settings that give what a setting gives}.

    With `runs_dir` (an inventory in use) each point is also dry-run through its launcher
    (nothing run or written), so what the launcher itself lacks, or a parameter it cannot use,
    blocks it too, every unmet need of a point at once (point_needs)."""
    try:
        scale = spec.scale(scale_name)
    except KeyError as exc:
        return {"runnable": 0, "points": 0, "blocked": {}, "reason": str(exc), "settings": {}}
    if not scale.get("runnable", True):
        return {"runnable": 0, "points": 0, "blocked": {}, "settings": {},
                "reason": scale.get("reason", "marked not runnable")}
    whole = capabilities.missing(scale.get("needs"))
    points = spec.points(scale_name)
    if runs_dir is not None:
        blocked, asks = {}, {}
        for pid, p in points:
            reasons, more = point_needs(spec, scale_name, scale, p, runs_dir)
            if reasons:
                blocked[pid] = reasons
            _merge(asks, more)
        return {"runnable": len(points) - len(blocked), "points": len(points), "blocked": blocked,
                "reason": "; ".join(whole) if len(blocked) == len(points) and whole else None,
                "settings": asks}
    axis = spec.data.get("stack_axis")
    data = [why] if (why := capabilities.dataset_missing(scale.get("dataset", spec.data.get("dataset")))) else []
    blocked = {pid: capabilities.point_missing(scale, p) + data + launcher_missing(
                   str(p[axis]) if axis and axis in p else spec.stack(scale_name))
               for pid, p in points}
    blocked = {k: v for k, v in blocked.items() if v}
    if whole:
        return {"runnable": 0, "points": len(points), "blocked": blocked, "reason": "; ".join(whole),
                "settings": {}}
    return {"runnable": len(points) - len(blocked), "points": len(points), "blocked": blocked,
            "reason": None, "settings": {}}


# ---------------------------------------------------------------- node-hour estimates

# Metrics that are a run's whole time, so a number the paper states for them is the time of
# its point.
RUN_TIMES = ("end_to_end_s", "train_time_s", "wall_clock_s")


def _stated_time(spec, scale: dict, point: dict) -> tuple[float | None, str]:
    """(seconds one run of the point takes, where that comes from) or (None, why unknown)."""
    def at_point(at: dict) -> bool:
        return all(point_id({k: point[k]}) == point_id({k: v}) for k, v in at.items() if k in point)

    metric = spec.data["metric"]["name"]
    for pv in scale.get("paper_values") or []:
        if pv.get("as") or pv.get("bound") or not at_point(pv["at"]):
            continue
        if "wall_clock_s" in pv["at"] and "wall_clock_s" not in point:
            # a value reached at a stated time (e.g. 70% accuracy at 2,132 s): the run is no shorter
            return float(pv["at"]["wall_clock_s"]), f"stated time to the value ({pv['where']}), a lower bound"
        if pv.get("metric", metric) in RUN_TIMES and not (set(pv["at"]) - set(point)):
            return float(pv["value"]), f"stated ({pv['where']})"
    fixed = scale.get("fixed") or {}
    if capabilities.whole_count(fixed.get("duration_s")) and capabilities.whole_count(fixed.get("repeats")):
        seconds = (float(fixed.get("warmup_s") or 0) + float(fixed["duration_s"])) * int(fixed["repeats"])
        return seconds, "the benchmark's own (warm-up + duration) x repeats"
    return None, "the paper states no time for this point (only ratios, rates or sizes)"


def _point_nodes(spec, scale: dict, point: dict) -> int | None:
    """The hosts one run of the point occupies, as the spec gives them."""
    params = {**(scale.get("fixed") or {}), **point}
    for key in ("nodes", "worker_nodes"):
        if capabilities.whole_count(params.get(key)):
            return capabilities.whole_count(params[key])
    if spec.data.get("stack") == "grpcbench":
        return 2  # the benchmark's servers on one host, its workers on another
    if capabilities.whole_count(params.get("workers")):
        return capabilities.whole_count(params["workers"]) + (capabilities.whole_count(params.get("parameter_servers")) or 0)
    return capabilities.point_size(scale, point)["nodes"]


def node_hours(spec, scale_name: str = "paper") -> dict:
    """An estimate of the node-hours one run of every point of a scale takes: the stated or
    benchmark-given time of each point x the nodes it occupies (epochs are inside the stated
    whole-run times). {'node_hours': sum over the points with both known, 'known': n,
    'points': n, 'unknown': sorted reasons for the others}."""
    try:
        scale = spec.scale(scale_name)
    except KeyError:
        return {"node_hours": 0.0, "known": 0, "points": 0, "unknown": [f"no {scale_name} scale"]}
    if not scale.get("runnable", True):
        return {"node_hours": 0.0, "known": 0, "points": 0,
                "unknown": [scale.get("reason", "marked not runnable")]}
    total, known, unknown = 0.0, 0, set()
    points = spec.points(scale_name)
    for _, point in points:
        seconds, why = _stated_time(spec, scale, point)
        nodes = _point_nodes(spec, scale, point)
        if seconds is None:
            unknown.add(why)
        elif nodes is None:
            unknown.add("the spec gives no node count for the point")
        else:
            total += seconds * nodes / 3600
            known += 1
    return {"node_hours": total, "known": known, "points": len(points), "unknown": sorted(unknown)}


def describe_node_hours(estimate: dict) -> str:
    if not estimate["known"]:
        return "estimate: unknown (" + "; ".join(estimate["unknown"]) + ")"
    text = (f"estimate: {estimate['node_hours']:.2f} node-hours for {estimate['known']} of "
            f"{estimate['points']} points")
    if estimate["unknown"]:
        text += "; the others unknown: " + "; ".join(estimate["unknown"])
    return text


def register(parser) -> None:
    parser.add_argument("--scale", default="local", help="scale to plan (default: local)")
    parser.add_argument("--root", default=str(ROOT),
                        help="project root holding experiments/")
    parser.add_argument("--quiet", action="store_true", help="only the per-experiment lines")
    parser.add_argument("--inventory", help="judge the cluster of this Ansible inventory (its "
                        "declared hardware and software paths) instead of this machine")
    parser.add_argument("--prefix", help="with --inventory: every host's dlobd_prefix")


def run(args) -> int:

    specs = dspec.load_all(args.root)
    if not specs:
        print(f"no experiment specs under {args.root}/experiments")
        return 1
    try:
        with dryrun.using(args):
            dspec.check_site_overrides(dspec.site_overrides(provenance.stack_setting(dspec.SITE_ASSUME)),
                                       {i: s.data for i, s in specs.items()})
            return _report(args, specs)
    except (inventory.InventoryError, dspec.SettingError) as exc:
        print(f"dlobd plan: {exc}", file=sys.stderr)
        return 2


def _report(args, specs) -> int:
    cluster = provenance.inventory()
    where = (f"inventory {cluster.source}, launch host {cluster.launch_host}, prefix {cluster.prefix}"
             if cluster else f"prefix {provenance.prefix()}")
    if not args.quiet and cluster:
        print(f"settings in effect on {cluster.launch_host}:")
        for name, (value, origin) in cluster.in_effect.items():
            print(f"  {name} = {json.dumps(value)}  <- {origin or 'default (role dlobd)'}")
        print()
    if not args.quiet and cluster:
        print("what YARN gives each worker's NodeManager (role yarn):")
        for host in cluster.members("workers"):
            print(f"  {host.name}: {inventory.nodemanager(host, cluster.role_settings)['why']}")
        print("where each host keeps the runs' state (dlobd_local_dir):")
        print("\n".join(f"  {line}" for line in inventory.state_places(cluster)))
        print()
    if not args.quiet:
        print(f"capabilities of this cluster ({where}):")
        for name, (present, why) in capabilities.capabilities().items():
            print(f"  {'yes' if present else 'no ':3}  {name:18} {why}")
        print()
    # with an inventory every point goes through its launcher too (a dry run: nothing is written)
    runs_dir = ROOT / "data" / "runs" if cluster else None
    n_ok = 0
    lines, asks = [], {}
    for eid, spec in sorted(specs.items()):
        if spec.data.get("data_from"):
            lines.append(f"  {'(same data)':13} {eid}: drawn from the runs of {spec.data['data_from']}")
            continue
        p = plan_spec(spec, args.scale, runs_dir)
        _merge(asks, p["settings"])
        reasons = "; ".join(sorted({r for rs in p["blocked"].values() for r in rs}))
        if p["reason"] or p["runnable"] == 0:
            lines.append(f"  {'not runnable':13} {eid}: {reasons or p['reason']}")
        elif p["blocked"]:
            n_ok += 1
            lines.append(f"  {'partly':13} {eid}: {p['runnable']} of {p['points']} points; "
                         f"the others: {reasons}")
        else:
            n_ok += 1
            lines.append(f"  {'runnable':13} {eid}: {p['points']} point(s)")
        if spec.runs_from(args.scale):
            lines.append(f"  {'(same runs)':13} {eid}: its points are those of {spec.runs_from(args.scale)}, run once")
        if args.scale == "paper":
            lines.append(f"  {'':13} node-hours {describe_node_hours(node_hours(spec, 'paper'))}")
    owners = sum(1 for s in specs.values() if not s.data.get("data_from"))
    print(f"scale {args.scale}: {n_ok} of {owners} experiments with runs of their own can run here")
    stated = sum(1 for s in specs.values() if s.paper_values())
    print(f"paper values: {stated} of {len(specs)} specs carry numbers their paper states "
          "(slide charts through the paper figure they repeat)")
    print("\n".join(lines))
    if cluster:
        print()
        print(describe_settings(asks))
    return 0


SUMMARY_HEAD = "settings to add to the inventory"

# What a setting of the summary makes provisioning do at length: variable -> (the entries that
# cost it, or None for any value; the cost in words).
COSTS = {
    "caffeonspark_builds": (lambda builds: [b for b in builds if b.startswith("gpu")],
                            "the hosts of group gpu and the launch host build the CUDA devices listed, here "
                            "{entries}, and need the CUDA toolkit and cuDNN (caffeonspark_cuda_build_hosts "
                            "names other hosts); every host builds the others; each build takes tens of minutes"),
    "hibench_enabled": (None, "the hibench role builds HiBench with Maven on every host (minutes each)"),
}


def costs(asks: dict) -> list[str]:
    """What the summary's settings will cost at provisioning, said before it is paid."""
    out = []
    for variable, (entries, words) in COSTS.items():
        value = asks.get("vars", {}).get(variable)
        if value and (entries is None or entries(value)):
            out.append(f"{variable}: " + words.format(entries=", ".join(entries(value)) if entries else ""))
    return out


def describe_settings(asks: dict) -> str:
    """The plan's closing summary: the settings its needs name, once each, as inventory YAML to
    add: the cluster's under `all: vars:`, a host's under `all: hosts: <host>:`. Only what is new
    is given; a mapping or list the inventory already sets gets only the new entries, to merge."""
    if not asks:
        return f"{SUMMARY_HEAD}: none"
    body = {"all": {key: asks[key] for key in ("vars", "hosts") if asks.get(key)}}
    said = costs(asks)
    return (f"{SUMMARY_HEAD} (add them where the inventory keeps its settings: entries of a mapping or "
            "list the inventory already sets are merged into it; replace every <...> with the site's value):\n"
            + yaml.safe_dump(body, sort_keys=True, default_flow_style=False).rstrip()
            + "".join(f"\n# cost of {line}" for line in said))
