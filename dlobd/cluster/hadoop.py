"""What launchers of YARN and HDFS jobs share: the stack's environment, the application
tag that ties a run to its YARN applications, their records and container logs, and data
staged into HDFS.

A run's YARN applications are found by tag, never by guessing from log text: every
`spark-submit` of a launcher carries `spark.yarn.tags=<app_tag(ctx)>` (`spark_conf`), so a
time limit can kill exactly the run's applications and the ResourceManager's own record
of them (submission, AM launch, end) lands in the attempt beside the logs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

from dlobd import NotRunnable, playbook_settings
from dlobd.cluster import capabilities, provenance
from dlobd.spec import networks

FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
REST_TIMEOUT_S = 10
# the overhead Spark 1.6 to 3.5 add to a JVM's heap in its YARN container: 10 %, at least this
# (spark_overhead_mb)
SPARK_LEAST_OVERHEAD_MB = 384
# Spark's client-mode ApplicationMaster as the launchers pin it (spark.yarn.am.memory)
AM_MEMORY_MB = 512
YARN_DEFAULT_MIN_ALLOCATION_MB = 1024


class HadoopError(Exception):
    """A Hadoop service or file that a launcher needs and cannot use."""


def stack_env() -> dict:
    """The environment of a stack command: this process's plus the prefix's dlobd-env.sh."""
    return {**os.environ, **provenance.prefix_env()}


def _setting(name: str) -> str:
    value = provenance.stack_setting(name)
    if not value:
        raise HadoopError(f"{name} is not set: is the stack provisioned under {provenance.prefix()}?")
    return value


def app_tag(ctx) -> str:
    """The YARN application tag of one attempt (YARN lower-cases tags, so this is lower case)."""
    digest = hashlib.sha1(str(Path(ctx.attempt_dir).resolve()).encode()).hexdigest()[:16]
    return f"dlobd-{digest}"


def spark_conf(ctx) -> list[str]:
    """`--conf` arguments for every spark-submit of a launcher: the run's tag, Spark's event
    log written into the attempt (`spark-events/`) where the parsers read it, and no web UI
    (nothing reads it; on YARN in client mode the AM's proxy filter, added while the UI still
    attaches its pages, can fail the SparkContext: "No filter named ...AmIpFilter", seen on
    a loaded machine)."""
    events = Path(ctx.attempt_dir).resolve() / "spark-events"
    if not ctx.dry_run:
        events.mkdir(exist_ok=True)
    return ["--conf", f"spark.yarn.tags={app_tag(ctx)}",
            "--conf", "spark.eventLog.enabled=true",
            "--conf", f"spark.eventLog.dir={events.as_uri()}",
            "--conf", "spark.ui.enabled=false"]


def line(version: str) -> str:
    """A version's major.minor (`1.6.2` -> `1.6`): what a build's Scala and API bind it to."""
    return ".".join(str(version).split(".")[:2])


def stack_spark_home(stack: str) -> str:
    """The Spark that submits `stack`'s paper build: a Spark of the line its own version set
    (dlobd_profile_versions' paper-<stack>) names, since a build for Spark 1.6 and Scala 2.10
    (CaffeOnSpark) or for Spark 2.2 (MMLSpark 0.10) fails on another line. The cluster's
    SPARK_HOME where SPARK_VERSION is of that line, else the site's Spark that
    <STACK>_SPARK_HOME names; NotRunnable naming both."""
    wanted = line(playbook_settings()["dlobd_profile_versions"][f"paper-{stack}"]["spark"])
    own = provenance.stack_setting("SPARK_VERSION") or ""
    if line(own) == wanted and provenance.stack_setting("SPARK_HOME"):
        return provenance.stack_setting("SPARK_HOME")
    setting = f"{stack.upper()}_SPARK_HOME"
    if provenance.stack_setting(setting):
        return provenance.stack_setting(setting)
    raise NotRunnable(
        f"{stack}'s paper build runs on Spark {wanted}, and the cluster's Spark is "
        f"{own or 'unknown (SPARK_VERSION unset)'}: provision dlobd_paper_env: {stack} (Spark {wanted}), or "
        f"give a Spark {wanted} install as {setting} in dlobd_stack_settings")


def spark_install(stack: str, network: str, env: dict, dry_run: bool = False) -> tuple[str, dict, str]:
    """spark-submit, its environment and the Spark flavour (vanilla or rdma-spark) that the
    `network` value selects for `stack` (config/networks.yaml). NotRunnable when the cluster
    lacks that path. A dry run names the cluster's paths without looking for them here."""
    lacking = capabilities.network_missing(stack, network)
    if lacking:
        raise NotRunnable(f"network {network}: " + "; ".join(lacking))
    flavour = networks.resolve(stack, network).settings["spark"]
    if flavour == "rdma-spark":
        setting = provenance.stack_setting("RDMA_SPARK_HOME")
        if not setting:
            raise NotRunnable("RDMA_SPARK_HOME is not set: OSU RDMA-Spark is a registered "
                                   "download (dlobd_stack_settings, docs/new-cluster.md)")
        home = Path(setting)
        if not dry_run and not provenance.present(home / "bin" / "spark-submit"):
            raise NotRunnable(f"RDMA_SPARK_HOME={home}: no bin/spark-submit of OSU RDMA-Spark")
        # RDMA-Spark is a Spark distribution of its own; the host's own conf folder stays, and
        # transport_conf switches its transport on
        env = {**env, "SPARK_HOME": str(home)}
    elif flavour != "vanilla":
        raise ValueError(f"config/networks.yaml: {stack} spark {flavour!r} is neither vanilla "
                         "nor rdma-spark")
    return str(Path(env["SPARK_HOME"]) / "bin" / "spark-submit"), env, flavour


def transport_conf(flavour: str) -> dict[str, str]:
    """The Spark settings that switch a submit to OSU RDMA-Spark (spark_install's flavour
    `rdma-spark`) over the host's own spark-defaults.conf, so that an RDMA point differs from its
    IPoIB twin in transport alone: RDMA-Spark's jars on YARN, its RDMA shuffle and block
    transfer over InfiniBand or RoCE (rdma_transport), on RDMA_SPARK_DEVICE_NUM HCAs, and its JNI
    libraries. {} for vanilla Spark."""
    if flavour != "rdma-spark":
        return {}
    home = provenance.stack_setting("RDMA_SPARK_HOME")
    native = provenance.stack_setting("RDMA_SPARK_NATIVE_DIR") or f"{home}/lib/native/Linux-amd64-64"
    roce = rdma_transport() == "roce"
    return {"spark.yarn.jars": f"local:{home}/jars/*",
            "spark.ib.enabled": str(not roce).lower(), "hadoop.ib.enabled": str(not roce).lower(),
            "spark.roce.enabled": str(roce).lower(),
            "spark.shuffle.rdma.device.num": provenance.stack_setting("RDMA_SPARK_DEVICE_NUM") or "1",
            "spark.driver.extraLibraryPath": native, "spark.executor.extraLibraryPath": native}


def rdma_transport() -> str:
    """`roce` or `ib`: what the workers' HCA ports carry, by the link layer each declares
    (provenance.link_layers); where none declares one, the launch host's record
    (RDMA_SPARK_TRANSPORT of role rdma_spark; ib without it). NotRunnable where the workers
    differ: one application switches on one transport for all its executors."""
    layers = provenance.link_layers()
    kinds = {"roce" if layer == "Ethernet" else "ib" for layer in layers.values()}
    if len(kinds) > 1:
        raise NotRunnable("RDMA-Spark switches on InfiniBand or RoCE for all of an application's "
                          "executors, and the workers' HCA ports differ: " + ", ".join(
                              f"{named([w])} {layer}" for w, layer in sorted(layers.items())))
    return kinds.pop() if kinds else provenance.stack_setting("RDMA_SPARK_TRANSPORT") or "ib"


def _rest(path: str, base_var: str = "DLOBD_RESOURCEMANAGER_HTTP"):
    url = _setting(base_var).rstrip("/") + path
    try:
        with urllib.request.urlopen(url, timeout=REST_TIMEOUT_S) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise HadoopError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise HadoopError(f"{url}: unreachable: {getattr(exc, 'reason', exc)}") from None


def applications(tag: str) -> list[dict]:
    """The ResourceManager's records of the applications carrying `tag`, oldest first."""
    found = _rest("/ws/v1/cluster/apps?" + urllib.parse.urlencode({"applicationTags": tag}))
    apps = ((found or {}).get("apps") or {}).get("app") or []
    return sorted(apps, key=lambda a: a["id"])


def kill_applications(tag: str) -> list[str]:
    """Kill every unfinished application carrying `tag`; returns the ids it killed."""
    killed = []
    for app in applications(tag):
        if app["state"] in FINAL_STATES:
            continue
        subprocess.run([str(provenance.prefix() / "bin" / "yarn"), "application", "-kill", app["id"]],
                       env=stack_env(), capture_output=True, timeout=60)
        killed.append(app["id"])
    return killed


def _wait_final(tag: str, timeout_s: float) -> list[dict]:
    """The tagged applications once all have reached a final state (or the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        apps = applications(tag)
        if all(a["state"] in FINAL_STATES for a in apps) or time.monotonic() >= deadline:
            return apps
        time.sleep(1)


def yarn_site(name: str) -> str | None:
    """A property of this host's yarn-site.xml; None where it does not set it."""
    site = Path(_setting("HADOOP_CONF_DIR")) / "yarn-site.xml"
    try:
        root = ET.parse(site).getroot()
    except (OSError, ET.ParseError) as exc:
        raise HadoopError(f"{site}: unreadable: {exc}") from None
    return next((prop.findtext("value") or "" for prop in root.iter("property")
                 if prop.findtext("name") == name), None)


def container_log_dirs() -> list[str]:
    """The NodeManagers' container log directories (yarn.nodemanager.log-dirs)."""
    dirs = yarn_site("yarn.nodemanager.log-dirs")
    if dirs is None:
        raise HadoopError(f"{_setting('HADOOP_CONF_DIR')}/yarn-site.xml: no yarn.nodemanager.log-dirs")
    return [d.strip() for d in dirs.split(",") if d.strip()]


def gpu_workers(what: str) -> tuple[list[str], dict[str, str]]:
    """(the workers a GPU point's executors may land on, the Spark settings that keep them
    there). Where every worker is a GPU host (DLOBD_GPU_WORKERS), all of them and no setting;
    where only some are, those, with YARN's node label that role yarn gives their NodeManagers
    (DLOBD_GPU_NODE_LABEL) as the executors' label expression (the ApplicationMaster runs
    anywhere). NotRunnable, naming `what`, without GPU hosts, or with some but no label: YARN
    would place an executor on any NodeManager."""
    gpu_hosts = provenance.workers(gpu=True)
    workers = provenance.workers()
    without = [w for w in workers if w not in gpu_hosts]
    if not gpu_hosts or not set(gpu_hosts) & set(workers):
        raise NotRunnable(f"{what}: the cluster has no GPU worker (no host of group workers is in group gpu)")
    if not without:
        return workers, {}
    label = provenance.stack_setting("DLOBD_GPU_NODE_LABEL")
    if not label:
        # provisioning labels them wherever only some workers are GPU hosts: this one is older
        raise NotRunnable(f"{what}: YARN may place an executor on any worker, worker(s) {named(without)} "
                          "are not in group gpu, and YARN has no node label for group gpu (provisioning gives "
                          "their NodeManagers dlobd_gpu_node_label: provision again; DLOBD_GPU_NODE_LABEL)")
    return [w for w in workers if w in gpu_hosts], {"spark.yarn.executor.nodeLabelExpression": label}


def executor_workers() -> list[str]:
    """The workers YARN places an executor that asks for no node label on: all of them, less the
    GPU workers where their label is exclusive (DLOBD_GPU_NODE_LABEL_EXCLUSIVE: Hadoop 2.7's only
    kind, whose labelled NodeManagers run labelled containers alone)."""
    workers = provenance.workers()
    if provenance.stack_setting("DLOBD_GPU_NODE_LABEL") and provenance.stack_setting("DLOBD_GPU_NODE_LABEL_EXCLUSIVE") == "true":
        gpu_hosts = provenance.workers(gpu=True)
        return [w for w in workers if w not in gpu_hosts]
    return workers


def named(addresses) -> str:
    """Hosts as the inventory names them (provenance.host_names), for a reason; `none` for none."""
    return ", ".join(provenance.host_names(addresses)) or "none"


def workers_phrase(gpu: bool = False) -> str:
    """The workers a point's executors may use, in the inventory's words, to follow their count in
    a reason ("the cluster has 4 " + this): a GPU point's, those of group gpu; a CPU point's,
    executor_workers, saying why the GPU workers are left out where YARN's label does that."""
    workers = provenance.workers()
    if gpu:
        gpu_hosts = provenance.workers(gpu=True)
        return f"GPU worker(s) (group gpu: {named([w for w in workers if w in gpu_hosts])})"
    kept = executor_workers()
    left = [w for w in workers if w not in kept]
    if not left:
        return f"worker(s) (group workers: {named(kept)})"
    version = re.match(r"\d+\.\d+", provenance.stack_setting("HADOOP_VERSION") or "")
    yarn = f"YARN {version[0]}" if version else "YARN"
    return (f"worker(s) outside group gpu ({named(kept)}; {yarn}'s node label "
            f"{provenance.stack_setting('DLOBD_GPU_NODE_LABEL')} is exclusive, so CPU executors do not run "
            f"on {named(left)})")


def nodemanager_memory_mb(dry_run: bool = False) -> int | None:
    """The memory (MiB) YARN offers on its smallest NodeManager: at launch the ResourceManager's
    own count over its RUNNING nodes, in a dry run DLOBD_YARN_MEMORY_MB (None where that is
    not known yet: an inventory's cluster before provisioning)."""
    if dry_run:
        return rendered_nodemanager_memory_mb()
    nodes = (((_rest("/ws/v1/cluster/nodes?states=RUNNING") or {}).get("nodes") or {}).get("node")) or []
    if not nodes:
        raise HadoopError("the ResourceManager has no RUNNING NodeManager")
    return min(int(n["availMemoryMB"]) + int(n["usedMemoryMB"]) for n in nodes)


def rendered_nodemanager_memory_mb() -> int | None:
    """The smallest NodeManager's memory (MiB) as provisioning rendered it into yarn-site.xml and
    dlobd-env.sh (DLOBD_YARN_MEMORY_MB); None where that is not known yet."""
    stated = provenance.stack_setting("DLOBD_YARN_MEMORY_MB") or ""
    return int(stated) if stated.isdigit() else None


def node_cores() -> tuple[int | None, str]:
    """(the cores one container may have, where that comes from): with an inventory the fewest
    its workers declare (dlobd_hardware.cores), on a provisioned cluster the vcores a NodeManager
    offers (DLOBD_YARN_VCORES, yarn.scheduler.maximum-allocation-vcores); None where unknown."""
    cluster = provenance.inventory()
    if cluster is not None:
        declared = {h.name: h.hardware.get("cores") for h in cluster.members("workers")}
        if not declared or any(not isinstance(c, int) or c < 1 for c in declared.values()):
            return None, "the inventory's workers declare no cores (dlobd_hardware.cores)"
        least = min(declared, key=declared.get)
        return declared[least], f"{least}'s {declared[least]} cores (dlobd_hardware.cores)"
    stated = provenance.stack_setting("DLOBD_YARN_VCORES") or ""
    if stated.isdigit():
        return int(stated), f"a NodeManager's {stated} vcores"
    return None, "the NodeManagers' vcores unknown (DLOBD_YARN_VCORES unset)"


def executors_per_node(executors: int) -> int | None:
    """How many of an application's executors a NodeManager may hold so that they spread evenly
    over a cluster of several workers: ceil(executors / workers), one per node where they are as
    many, as the papers ran them. Without a bound YARN may give one worker two and leave another
    idle, depending on whose heartbeat comes first. None on one worker, where they all share its
    NodeManager."""
    workers = executor_workers()
    return -(-executors // len(workers)) if len(workers) > 1 else None


def executor_container_mb(per_node: int, least_mb: int, dry_run: bool = False) -> int | None:
    """The container (MiB: executor heap + overhead) each executor of a Spark application on
    YARN asks for so that at most `per_node` of them share a NodeManager, and `per_node` fit
    even on the one that also runs the application's client-mode ApplicationMaster
    (spark.yarn.am.memory = AM_MEMORY_MB, which the launchers pin). The capacity scheduler's
    DefaultResourceCalculator places containers by memory alone, ignoring vcores, so memory is
    what pins executors to nodes (GPUs per node; one CaffeOnSpark executor per node): with s
    the share, k*s fits the NodeManager's memory less the AM's container, (k+1)*s exceeds all
    of it. YARN rounds every request up to yarn.scheduler.minimum-allocation-mb, so s is a
    multiple of it. NotRunnable where no such s of at least `least_mb` exists; None in a dry
    run that does not know the NodeManagers' memory."""
    memory = nodemanager_memory_mb(dry_run)
    if memory is None:
        return None
    step = allocation_step_mb()
    am = container_mb(AM_MEMORY_MB, step)
    share = (memory - am) // per_node // step * step
    if share < least_mb or share * (per_node + 1) <= memory:
        raise NotRunnable(
            f"{per_node} executor(s) per NodeManager of at least {least_mb} MiB each: YARN offers "
            f"{memory} MiB on its smallest NodeManager, and no container size in steps of {step} MiB "
            f"fits {per_node} beside the ApplicationMaster's {am} MiB while keeping out one more "
            "(dlobd_yarn_memory_fraction sets what YARN offers)")
    return share


def allocation_step_mb() -> int:
    """yarn.scheduler.minimum-allocation-mb, the step YARN rounds every container up to: the
    provisioned yarn-site.xml's, else what role yarn will render for the inventory in use, else
    YARN's default."""
    conf = provenance.stack_setting("HADOOP_CONF_DIR")
    if conf and (Path(conf) / "yarn-site.xml").is_file():
        return int(yarn_site("yarn.scheduler.minimum-allocation-mb") or YARN_DEFAULT_MIN_ALLOCATION_MB)
    cluster = provenance.inventory()
    return int((cluster.role_settings.get("dlobd_yarn_min_allocation_mb") if cluster is not None else None)
               or YARN_DEFAULT_MIN_ALLOCATION_MB)


def container_mb(heap_mb: int, step_mb: int, overhead_mb: int | None = None) -> int:
    """The container YARN gives a Spark JVM of `heap_mb` heap with `overhead_mb` beside it (Spark's
    default overhead where None), rounded up to YARN's step."""
    extra = spark_overhead_mb(heap_mb) if overhead_mb is None else overhead_mb
    return -(-(heap_mb + extra) // step_mb) * step_mb


def spark_overhead_mb(heap_mb: int) -> int:
    """The overhead (MiB) Spark adds by default to a JVM of `heap_mb` heap in its container."""
    return max(SPARK_LEAST_OVERHEAD_MB, heap_mb // 10)


def sized_memory_conf(key: str, overhead: str) -> dict[str, str]:
    """Spark settings of executors sized by spread_overhead: the overhead under Spark's `key` for
    it (spark.yarn.executor.memoryOverhead up to Spark 2.x), with the ApplicationMaster's memory
    pinned as executor_container_mb counts it."""
    return {key: overhead, "spark.yarn.am.memory": f"{AM_MEMORY_MB}m"}


def spread_overhead(per_node: int, heap_mb: int, least_overhead_mb: int, dry_run: bool = False) -> str:
    """The executors' memory overhead (MiB, as Spark takes it) that makes each container of
    `heap_mb` heap so large that at most `per_node` share a NodeManager (executor_container_mb);
    in a dry run that does not know the NodeManagers' memory, how the launch computes it."""
    share = executor_container_mb(per_node, heap_mb + least_overhead_mb, dry_run)
    return str(share - heap_mb) if share else (
        f"<at launch: (NodeManager memory - the ApplicationMaster's) / {per_node}, in YARN's steps, "
        f"less the heap's {heap_mb} MiB>")


def memory_mb(size: str) -> int:
    """MiB of a JVM memory size as spark-submit takes it (`8g`, `1024m`)."""
    found = re.fullmatch(r"(\d+)([mMgG])", str(size).strip())
    if not found:
        raise ValueError(f"executor_memory {size!r}: not a size like 8g or 1024m")
    return int(found[1]) * (1024 if found[2] in "gG" else 1)


def _copy_container_logs(app_id: str, dest: Path) -> None:
    """Copy `<log-dir>/<app_id>/<container>/...` from every worker into dest/<container>/ (each
    worker's log directory is in its own folder)."""
    dest.mkdir(exist_ok=True)
    for host in provenance.workers() or ["127.0.0.1"]:
        for log_dir in container_log_dirs():
            source = provenance.host_path(host, log_dir) / app_id
            if provenance.is_local_address(host):
                if source.is_dir():
                    for container in sorted(source.iterdir()):
                        shutil.copytree(container, dest / container.name, dirs_exist_ok=False)
            else:
                # a worker's container names are unique cluster-wide, so copies never collide
                subprocess.run(["scp", "-r", "-q", "-o", "BatchMode=yes",
                                f"{host}:{source}/.", str(dest)],
                               capture_output=True, timeout=300)


def save_applications(tag: str, attempt_dir, wait_s: float = 30) -> list[dict]:
    """Keep the run's YARN applications in the attempt: `yarn/<app_id>.json` (the RM's
    record plus its app attempts) and every container's logs under `containers/`."""
    attempt_dir = Path(attempt_dir)
    apps = _wait_final(tag, wait_s)
    if not apps:
        return []
    (attempt_dir / "yarn").mkdir(exist_ok=True)
    for app in apps:
        attempts = _rest(f"/ws/v1/cluster/apps/{app['id']}/appattempts")
        record = {**app, "appAttempts": ((attempts or {}).get("appAttempts") or {}).get("appAttempt", [])}
        with open(attempt_dir / "yarn" / f"{app['id']}.json", "x", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2)
        _copy_container_logs(app["id"], attempt_dir / "containers")
    return apps


def application_record(attempt_dir) -> dict | None:
    """The ResourceManager's record of the run's one YARN application (`yarn/*.json`, as
    save_applications keeps it), with `_log` naming the file; None when the run has none."""
    attempt_dir = Path(attempt_dir)
    paths = sorted(attempt_dir.glob("yarn/*.json"))
    if not paths:
        return None
    if len(paths) > 1:
        raise HadoopError(f"yarn/ holds {len(paths)} application records; this run is one application")
    rel = str(paths[0].relative_to(attempt_dir))
    try:
        record = json.loads(paths[0].read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HadoopError(f"{rel}: not a ResourceManager application record: {exc}") from None
    if not isinstance(record, dict) or not record.get("id"):
        raise HadoopError(f"{rel}: not a ResourceManager application record (no id)")
    return {**record, "_log": rel}


def application_seconds(record: dict) -> float:
    """Seconds from an application's submission (startedTime) to its end (finishedTime)."""
    try:
        start, end = int(record["startedTime"]), int(record["finishedTime"])
    except (KeyError, TypeError, ValueError):
        raise HadoopError(f"{record.get('_log', 'the record')}: no startedTime/finishedTime") from None
    if start <= 0 or end < start:
        raise HadoopError(f"{record.get('_log', 'the record')}: finishedTime {end} before startedTime {start}")
    return (end - start) / 1000


def application_roles(attempt_dir) -> dict[str, list[str]]:
    """Host name -> what the run's YARN application ran there: `application-master` (the RM's
    records in yarn/) and `executor:<id>` (Spark's event logs in spark-events/)."""
    attempt_dir = Path(attempt_dir)
    roles: dict[str, list[str]] = {}
    for path in sorted(attempt_dir.glob("yarn/*.json")):
        try:
            attempts = json.loads(path.read_text(encoding="utf-8")).get("appAttempts") or []
        except (OSError, json.JSONDecodeError, AttributeError):
            continue  # the parsers name a damaged record; provenance takes what it can read
        for attempt in attempts:
            node = str(attempt.get("nodeId") or "").rpartition(":")[0]
            if node:
                roles.setdefault(node, []).append("application-master")
    for path in sorted(attempt_dir.glob("spark-events/*")):
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    event = json.loads(line)
                    if event.get("Event") == "SparkListenerExecutorAdded":
                        host = event["Executor Info"]["Host"]
                        roles.setdefault(host, []).append(f"executor:{event['Executor ID']}")
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                    continue
    return roles


def with_application_roles(hosts: list[dict], roles: dict[str, list[str]],
                           resolve=socket.gethostbyname) -> list[dict]:
    """The cluster's hosts with the roles the application had on each, matched by address
    (YARN and Spark name hosts, run.json lists addresses); a host not in the list is added."""
    out = [dict(h, roles=list(h["roles"])) for h in hosts]
    for name, extra in roles.items():
        try:
            address = resolve(name)
        except OSError:
            address = name
        match = next((h for h in out if address in (h["address"], h["name"]) or name == h["name"]), None)
        if match is None:
            match = {"name": name, "address": address, "roles": []}
            out.append(match)
        match["roles"].extend(extra)
    return out


def _hdfs(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(provenance.prefix() / "bin" / "hdfs"), "dfs", *args],
                          env=stack_env(), capture_output=True, text=True, timeout=timeout)


def _hdfs_size(hdfs_path: str) -> int | None:
    """Bytes under an HDFS path (WebHDFS, no JVM start), None when absent."""
    summary = _rest(f"/webhdfs/v1{hdfs_path}?op=GETCONTENTSUMMARY", "DLOBD_NAMENODE_HTTP")
    return None if summary is None else summary["ContentSummary"]["length"]


def _local_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def hdfs_uri(hdfs_path: str) -> str:
    """The hdfs:// URI of an absolute path in the cluster's HDFS."""
    if not hdfs_path.startswith("/"):
        raise HadoopError(f"{hdfs_path}: the HDFS path must be absolute")
    return _setting("DLOBD_HDFS_URI").rstrip("/") + hdfs_path


def hdfs_remove(hdfs_path: str) -> bool:
    """Remove an HDFS path (not into the trash); whether there was one."""
    if _hdfs_size(hdfs_path) is None:
        return False
    done = _hdfs("-rm", "-r", "-f", "-skipTrash", hdfs_path)
    if done.returncode != 0:
        raise HadoopError(f"removing {hdfs_uri(hdfs_path)}: hdfs dfs -rm failed: {done.stderr.strip()[-500:]}")
    return True


def hdfs_stage(local_path, hdfs_path: str) -> str:
    """Upload a file or directory to an absolute HDFS path unless the same number of bytes
    is there already; returns the hdfs:// URI. A partial upload never takes the final name."""
    local_path = Path(local_path)
    if not local_path.exists():
        raise HadoopError(f"{local_path}: data set not found (is the datasets role provisioned?)")
    uri = hdfs_uri(hdfs_path)
    size = _local_size(local_path)
    present = _hdfs_size(hdfs_path)
    if present == size:
        return uri
    partial = f"{hdfs_path}.staging-{os.getpid()}"
    parent = str(Path(hdfs_path).parent)
    steps = [("-mkdir", "-p", parent), ("-put", str(local_path), partial)]
    if present is not None:
        steps.append(("-rm", "-r", "-f", "-skipTrash", hdfs_path))
    steps.append(("-mv", partial, hdfs_path))
    for step in steps:
        done = _hdfs(*step)
        if done.returncode != 0:
            _hdfs("-rm", "-r", "-f", "-skipTrash", partial)
            raise HadoopError(f"staging {local_path} to {uri}: hdfs dfs {' '.join(step)} failed: "
                              f"{done.stderr.strip()[-500:]}")
    return uri
