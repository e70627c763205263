"""The rules `dlobd dry-run --check` holds each command of a point to, against the inventory's
cluster (dlobd.cluster.inventory): what YARN will accept and place, the hosts a GPU point may use,
the interfaces and settings each host has. A rehearsal (runs.launch with a site) launches only
the points whose commands break none, so that every point it runs is one `--check` accepts."""

from __future__ import annotations

import re

from dlobd.cluster import capabilities, hadoop, inventory, remote
from dlobd.stacks import runner

# an executor's size as spark-submit reads it: MiB, or with a unit
SIZE = re.compile(r"\d+[mMgG]?")


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def _confs(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv[:-1]) if a == "--conf" and "=" in argv[i + 1])


def _step_mb(cluster) -> int:
    """YARN's allocation step on the inventory's cluster, as role yarn renders it."""
    return int(cluster.role_settings.get("dlobd_yarn_min_allocation_mb") or 0) or 1


def executor_container(argv: list[str], step_mb: int) -> tuple[int, str] | None:
    """(the executor container's MiB, how it adds up) of a spark-submit: the heap plus the
    overhead, Spark's default where the command sets none, rounded up to YARN's step (`step_mb`,
    1 MiB or more: _step_mb); None without a numeric --executor-memory."""
    heap = _option(argv, "--executor-memory")
    overhead = next((v for k, v in _confs(argv).items() if k.endswith("executor.memoryOverhead")), None)
    if not heap or not SIZE.fullmatch(heap) or (overhead is not None and not SIZE.fullmatch(overhead)):
        return None
    heap_mb = hadoop.memory_mb(heap)
    # Spark reads a bare overhead as MiB
    extra = (hadoop.memory_mb(overhead) if overhead[-1] in "mMgG" else int(overhead)) if overhead \
        else hadoop.spark_overhead_mb(heap_mb)
    added = "memoryOverhead" if overhead else "Spark's default overhead"
    return (hadoop.container_mb(heap_mb, step_mb, extra),
            f"--executor-memory {heap} + {added} {extra} MiB, in YARN's {step_mb}-MiB steps")


def container_errors(argv: list[str], node: dict) -> list[str]:
    """A spark-submit's executor container against the smallest NodeManager (`node`: `vcores`,
    `memory_mb`, `step_mb`, what roles yarn and stack_env render for the inventory's declared
    workers): executor_container. YARN refuses a container above its maximum allocation, which the
    ResourceManager takes from the largest NodeManager, and never places one larger than a
    NodeManager. A size that is not a number (a dlobd-env.sh variable of a worker whose size the
    inventory does not declare) cannot be checked, and says so."""
    if not any(a.endswith("spark-submit") for a in argv[:1]):
        return []
    out = []
    cores, heap = _option(argv, "--executor-cores"), _option(argv, "--executor-memory")
    overhead = next((v for k, v in _confs(argv).items() if k.endswith("executor.memoryOverhead")), None)
    unknown = [f"{name} {value}" for name, value in (("--executor-cores", cores), ("--executor-memory", heap),
                                                     ("memoryOverhead", overhead))
               if value is not None and not SIZE.fullmatch(value)]
    if unknown:
        return [f"{'; '.join(unknown)}: not a size before provisioning; declare every worker's "
                "dlobd_hardware.cores and memory_gb so that the check knows its NodeManager"]
    if cores and node.get("vcores") and int(cores) > node["vcores"]:
        out.append(f"--executor-cores {cores} is more than the smallest NodeManager's {node['vcores']} vcores")
    container = executor_container(argv, node.get("step_mb") or 1)
    if container and node.get("memory_mb") and container[0] > node["memory_mb"]:
        out.append(f"an executor container of {container[0]} MiB ({container[1]}) is more than the smallest "
                   f"NodeManager's {node['memory_mb']} MB")
    return out


def placement_errors(argv: list[str], cluster) -> list[str]:
    """A spark-submit's executors against the NodeManagers YARN may give them: those of group gpu
    where the command asks for YARN's label gpu, the other workers where it asks for none (the
    label is exclusive; on a cluster whose every worker is in group gpu, any). YARN's capacity
    scheduler places containers by memory alone, so a NodeManager holds as many executor
    containers as its memory does, less, on one NodeManager outside the label, the client-mode
    ApplicationMaster's container. Spark runs with the executors it got once its wait for the rest
    ends, so too many is a smaller layout, not an error, unless this check says so. A command
    without numeric sizes, or workers that declare none, is not judged here (container_errors
    says so)."""
    if not any(a.endswith("spark-submit") for a in argv[:1]) or "yarn" not in (_option(argv, "--master") or ""):
        return []
    executors = _option(argv, "--num-executors")
    step = _step_mb(cluster)
    container = executor_container(argv, step)
    if not (executors and executors.isdigit() and container):
        return []
    workers = cluster.members("workers")
    gpu = {h.name for h in cluster.members("gpu")}
    labelled = _confs(argv).get("spark.yarn.executor.nodeLabelExpression") == "gpu"
    every_worker = {h.name for h in workers} <= gpu
    eligible = [h for h in workers if every_worker or (h.name in gpu) == labelled]
    managers = {h.name: inventory.nodemanager(h, cluster.role_settings)["memory_mb"] for h in eligible}
    if not managers or any(m is None for m in managers.values()):
        return []
    am = hadoop.container_mb(hadoop.memory_mb(_confs(argv).get("spark.yarn.am.memory", f"{hadoop.AM_MEMORY_MB}m")), step)
    # the ApplicationMaster's container goes outside the label: on the largest of these where they are
    beside_am = max(managers, key=managers.get) if not labelled or every_worker else None
    held = sum(max((memory - (am if name == beside_am else 0)) // container[0], 0) for name, memory in managers.items())
    if int(executors) <= held:
        return []
    where = "in group gpu (YARN's label gpu)" if labelled and not every_worker else \
        "outside group gpu (YARN's label gpu is exclusive)" if gpu and not every_worker else "of the cluster"
    return [f"--num-executors {executors} containers of {container[0]} MiB ({container[1]}): the "
            f"{len(managers)} NodeManager(s) {where}, {', '.join(f'{n} {managers[n]} MB' for n in sorted(managers))}, "
            f"hold {held} beside the ApplicationMaster's {am} MiB"]


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


def point_errors(result: runner.LaunchResult, point: dict, scale: dict, stack: str, cluster) -> dict[str, list[str]]:
    """Rule -> how the dry run's command of one point (`result`) breaks it on the inventory's
    cluster (an empty list where it holds)."""
    node = inventory.smallest_nodemanager(cluster.members("workers"), cluster.role_settings)
    node["step_mb"] = _step_mb(cluster)
    hosts = list(cluster.hosts.values())
    argv = [str(a) for a in result.command or []]
    rules = {"container within a node": container_errors(argv, node),
             "executors within their NodeManagers": placement_errors(argv, cluster),
             "executors x cores": total_errors(argv, point),
             "GPU hosts only": gpu_errors(result, point, scale, cluster, stack),
             "interfaces on their hosts": interface_errors(result, cluster),
             "settings the shell expands": variable_errors(result, cluster)}
    for process in result.extra.get("processes", []):
        rules.setdefault("each host's own address", []).extend(remote.identity_errors(process, hosts))
        rules.setdefault("ports chosen on their host", []).extend(remote.port_errors(process))
    return rules


def broken(rules: dict[str, list[str]]) -> list[str]:
    """'<rule>: <what>' for each way a point_errors result breaks a rule."""
    return [f"{rule}: {error}" for rule, errors in rules.items() for error in errors]
