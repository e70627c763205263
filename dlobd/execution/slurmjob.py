"""The Hadoop/YARN cluster inside one Slurm allocation (slurm/dlobd.sbatch runs these steps).

The allocation's first node is the master (NameNode, ResourceManager), the others are the
workers (a DataNode and a NodeManager each); an allocation of one node is master and worker at
once. Every node gets a job directory on node-local scratch with the same path everywhere
(`<scratch>/dlobd-slurm-<job id>`): a prefix of its own whose etc/, bin/ and sbin/ are rendered
from the playbooks' own templates (roles hadoop, hdfs, yarn, spark, stack_env) for this job's
hosts and ports, and whose other entries link to the provisioned prefix. Ports come from the
job id, so two jobs sharing nodes never bind the same port.

    python -m dlobd.execution.slurmjob plan --prefix P --scratch S --shared D   (the batch script, first)
    python -m dlobd.execution.slurmjob node JOB_JSON       (one task per node, for the job's whole life)
    python -m dlobd.execution.slurmjob ready JOB_JSON      (wait until every worker is live)
    python -m dlobd.execution.slurmjob launch --runs R EXPERIMENT=POINT_JSON   (a point outside a matrix)
    python -m dlobd.execution.slurmjob interrupt JOB_JSON --signal USR1|TERM   (the batch script's trap)
"""

from __future__ import annotations

import argparse
import functools
import getpass
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import yaml

from dlobd import ROOT, playbook_settings, spec
from dlobd.cluster import provenance
from dlobd.execution import runs
from dlobd.execution.slurmenv import (
    INTERRUPT_FILE,
    INTERRUPTIONS,
    JobError,
    JobPlan,
    execution,
    expand_nodelist,
    interrupted_outcome,
    prefix_image,
)
from dlobd.stacks import runner

PLAYBOOKS = ROOT / "playbooks"
# Ports of a job: a block of PORT_STRIDE ports per job id in [PORT_LOW, PORT_HIGH), above the
# provisioned cluster's fixed ports (18xxx, 19xxx) and below Linux's ephemeral range (32768+
# is where launchers' free_ports land, so stay under it).
PORT_LOW, PORT_HIGH, PORT_STRIDE = 20000, 32000, 24
PORT_SLOTS = (PORT_HIGH - PORT_LOW) // PORT_STRIDE
# The playbook templates rendered into a job directory: (role, template, destination, mode).
TEMPLATES = (
    ("hadoop", "core-site.xml.j2", "etc/hadoop/core-site.xml", 0o644),
    ("hadoop", "log4j.properties.j2", "etc/hadoop/log4j.properties", 0o644),
    ("hdfs", "hdfs-site.xml.j2", "etc/hadoop/hdfs-site.xml", 0o644),
    ("yarn", "yarn-site.xml.j2", "etc/hadoop/yarn-site.xml", 0o644),
    ("yarn", "capacity-scheduler.xml.j2", "etc/hadoop/capacity-scheduler.xml", 0o644),
    ("spark", "spark-defaults.conf.j2", "etc/spark/spark-defaults.conf", 0o600),
    ("spark", "spark-env.sh.j2", "etc/spark/spark-env.sh", 0o755),
    ("spark", "log4j2.properties.j2", "etc/spark/log4j2.properties", 0o644),
    ("hadoop", "dlobd-daemon.j2", "sbin/dlobd-daemon", 0o755),
    ("stack_env", "hdfs.j2", "bin/hdfs", 0o755),
    ("stack_env", "yarn.j2", "bin/yarn", 0o755),
    ("stack_env", "dlobd-env.j2", "bin/dlobd-env", 0o755),
)
ROLES = ("hadoop", "hdfs", "yarn", "spark", "stack_env")
# What the job directory owns; every other entry of the provisioned prefix is linked.
OWN_ENTRIES = ("etc", "bin", "sbin", "var")
STOP_FILE = "stop"
READY_POLL_S = 2.0
# How long each daemon gets to stop after SIGTERM in a job: a cancelled job's processes get Slurm's
# KillWait (30 s by default) before SIGKILL, and the agent still copies the logs after the stop. The
# NodeManager idles once it has unregistered and stopped its containers (the dlobd role's defaults).
DAEMON_STOP_TIMEOUT_S = {"namenode": 10, "datanode": 10, "resourcemanager": 10, "nodemanager": 6}


class LaunchInterrupted(Exception):
    """The job ends while a point runs (the launcher records the run, with the trap's reason)."""


# ------------------------------------------------------------------ hosts and ports (pure)

def cluster_roles(hostnames: list[str]) -> tuple[str, list[str]]:
    """(master, workers) of an allocation, in Slurm's node order: the first node is the master,
    the rest are workers; a single node is both."""
    if not hostnames:
        raise JobError("the allocation has no nodes (SLURM_JOB_NODELIST is empty)")
    if len(set(hostnames)) != len(hostnames):
        raise JobError(f"node list names a node twice: {' '.join(hostnames)}")
    return hostnames[0], (hostnames[1:] or hostnames[:1])


def default_port_names() -> list[str]:
    """The daemons' port names, as the playbooks' shared settings list them (dlobd_ports)."""
    return list(playbook_settings()["dlobd_ports"])


def job_ports(job_id: int, names: list[str] | None = None) -> dict[str, int]:
    """The job's port for each name: a block of its own, chosen by the job id. Jobs whose ids
    differ by less than PORT_SLOTS never share a port."""
    names = default_port_names() if names is None else names
    if len(names) > PORT_STRIDE:
        raise JobError(f"{len(names)} ports do not fit the block of {PORT_STRIDE} a job gets")
    if int(job_id) < 0:
        raise JobError(f"job id {job_id}: not a Slurm job id")
    base = PORT_LOW + (int(job_id) % PORT_SLOTS) * PORT_STRIDE
    return {name: base + i for i, name in enumerate(names)}


def ports_in_use(address: str, ports: dict[str, int]) -> list[str]:
    """Which of the job's ports something on `address` already holds (a socket listening or
    bound there; a port left in TIME_WAIT by an earlier job is free for a server)."""
    taken = []
    for name, port in ports.items():
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((address, port))
            except OSError:
                taken.append(f"{name} ({address}:{port})")
    return taken


# ------------------------------------------------------------------ the job's plan

def resolve(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError as exc:
        raise JobError(f"node {host!r} has no address ({exc})") from None


def make_plan(job_id: int, hostnames: list[str], provisioned: str, scratch: str, shared: str,
              addresses: dict[str, str] | None = None) -> JobPlan:
    """The job's plan. A prefix provisioned with the apptainer method runs the daemons, the
    pipeline and the launchers inside its image through its wrappers: `slurm+apptainer`, with
    the image's path and sha256; any other: `slurm+prefix`."""
    master, workers = cluster_roles(hostnames)
    if not Path(provisioned, "etc", "dlobd-env.sh").is_file():
        raise JobError(f"{provisioned}/etc/dlobd-env.sh is missing: not a provisioned prefix "
                       "(make provision DLOBD_PREFIX=... provisions one)")
    image = prefix_image(provisioned)
    addresses = addresses or {h: resolve(h) for h in hostnames}
    return JobPlan(job_id=int(job_id), master=master, workers=workers, addresses=addresses,
                   provisioned=str(Path(provisioned).resolve()),
                   job_dir=str(Path(scratch) / f"dlobd-slurm-{job_id}"),
                   shared_dir=str(Path(shared).resolve() / f"slurm-{job_id}"),
                   ports=job_ports(job_id), secret=secrets.token_hex(32),
                   execution_path="slurm+apptainer" if image else "slurm+prefix", image=image)


# ------------------------------------------------------------------ rendering the job's prefix

def role_defaults() -> dict:
    merged = {}
    for role in ROLES:
        path = PLAYBOOKS / "roles" / role / "defaults" / "main.yml"
        if path.is_file():
            merged.update(yaml.safe_load(path.read_text()) or {})
    return merged


def template_vars(plan: JobPlan, host: str, stack: dict, facts: dict) -> dict:
    """The variables the playbook templates see for `host` of the job: the playbooks' own
    defaults, the provisioned stack's paths (`stack`: what its dlobd-env.sh exports), the job's
    hosts, ports and directories."""
    workers = [f"w{i}" for i in range(len(plan.workers))]
    return {
        **playbook_settings(), **role_defaults(),
        "ansible_managed": f"Rendered by dlobd.execution.slurmjob for Slurm job {plan.job_id}",
        "ansible_facts": facts,
        "inventory_hostname": host,
        "groups": {"namenode": ["nn"], "resourcemanager": ["nn"], "workers": workers, "gpu": []},
        # every node of a job has the size of this one (its NodeManager is sized from these facts)
        "hostvars": {"nn": {"dlobd_cluster_address": plan.addresses[plan.master]}, host: {"ansible_facts": facts}},
        "dlobd_prefix": plan.job_dir,
        # the job directory is this node's alone: its configuration and state stay in it
        "dlobd_local_dir": plan.job_dir,
        "dlobd_cluster_address": plan.addresses[host],
        "dlobd_ports": plan.ports,
        "dlobd_secret_source": str(Path(plan.job_dir) / "etc" / "secrets" / "spark.secret"),
        # the prefix's profile chooses the JVM options of its Java (every paper version set has Java 8)
        "dlobd_profile": stack["DLOBD_PROFILE"],
        "dlobd_java_home": stack["JAVA_HOME"],
        "dlobd_hadoop_home": stack["HADOOP_HOME"],
        "hadoop_classpath": stack["DLOBD_HADOOP_CLASSPATH"],
        "spark_home": stack["SPARK_HOME"],
        "dlobd_python_home": stack["DLOBD_PYTHON_HOME"],
        "dlobd_python": stack["DLOBD_PYTHON"],
        "dlobd_daemon_stop_timeout_s": DAEMON_STOP_TIMEOUT_S,
    }


def host_facts() -> dict:
    """The facts the templates read, as Ansible's setup module would report them."""
    return {"user_id": getpass.getuser(),
            "memtotal_mb": psutil.virtual_memory().total // (1024 * 1024),
            "processor_vcpus": os.cpu_count() or 1}


def _trusted(value):
    """Variables as Ansible marks a playbook's own: its templates may template them."""
    from ansible.template import trust_as_template

    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


@functools.lru_cache(maxsize=1)
def _plugins() -> None:
    """Ansible's plugin loader, once: the templates' lookups (ansible.builtin.file) are plugins."""
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()


def render(template: Path, variables: dict) -> str:
    """One playbook template with Ansible's own templating (its filters and lookups)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    _plugins()
    templar = Templar(loader=DataLoader(), variables=_trusted(variables))
    return templar.template(_trusted(template.read_text()))


def _cluster_exports(plan: JobPlan, host: str, yarn_memory_mb: int, yarn_vcores: int) -> list[str]:
    """This job's cluster as `export` lines: what it sets over the provisioned stack's settings."""
    me, nn = plan.addresses[host], plan.addresses[plan.master]
    workers = " ".join(plan.addresses[w] for w in plan.workers)
    job = Path(plan.job_dir)
    return [
        f"export DLOBD_PREFIX={job} DLOBD_LOCAL_DIR={job}",
        f"export HADOOP_CONF_DIR={job}/etc/hadoop YARN_CONF_DIR={job}/etc/hadoop",
        f"export SPARK_CONF_DIR={job}/etc/spark",
        f"export DLOBD_CLUSTER_ADDRESS={me}",
        f"export DLOBD_NAMENODE_ADDRESS={nn} DLOBD_RESOURCEMANAGER_ADDRESS={nn}",
        f"export DLOBD_HDFS_URI=hdfs://{nn}:{plan.ports['namenode_rpc']}",
        f"export DLOBD_NAMENODE_HTTP=http://{nn}:{plan.ports['namenode_http']}",
        f"export DLOBD_RESOURCEMANAGER_HTTP=http://{nn}:{plan.ports['resourcemanager_http']}",
        f'export DLOBD_WORKERS="{workers}"',
        f"export DLOBD_WORKER_COUNT={len(plan.workers)}",
        'export DLOBD_GPU_WORKERS=""',
        f"export DLOBD_YARN_MEMORY_MB={yarn_memory_mb} DLOBD_YARN_VCORES={yarn_vcores}",
        "export SPARK_LOCAL_IP=$DLOBD_CLUSTER_ADDRESS TFOS_SERVER_HOST=$DLOBD_CLUSTER_ADDRESS",
        f"export DLOBD_EXECUTION_PATH={plan.execution_path}",
        f"export DLOBD_SLURM_JOB_JSON={Path(plan.shared_dir) / 'job.json'}",
    ]


def env_overlay(plan: JobPlan, host: str, yarn_memory_mb: int, yarn_vcores: int) -> str:
    """The job's etc/dlobd-env.sh: the provisioned stack environment, then this job's cluster."""
    lines = [
        f"# Slurm job {plan.job_id} ({plan.execution_path}): the provisioned stack, then this job's",
        "# cluster (dlobd/execution/slurmjob.py; removed when the job ends).",
        f"source {plan.provisioned}/etc/dlobd-env.sh",
        *_cluster_exports(plan, host, yarn_memory_mb, yarn_vcores),
        f"export PATH={plan.job_dir}/bin:$PATH",
    ]
    return "\n".join(lines) + "\n"


def image_env_overlay(plan: JobPlan, host: str, yarn_memory_mb: int, yarn_vcores: int, provisioned_file: Path) -> str:
    """The job's etc/dlobd-env-image.sh (a prefix of the apptainer method): what the image's
    wrappers pass over the image's own settings. The provisioned host's (`provisioned_file`),
    then this job's cluster; the image keeps its own programs' homes and PATH. Self-contained:
    Apptainer reads an --env-file on the host, where the provisioned file is not sourced."""
    provisioned = provisioned_file.read_text()
    lines = [f"# Slurm job {plan.job_id} ({plan.execution_path}): this job's cluster over the provisioned one",
             *_cluster_exports(plan, host, yarn_memory_mb, yarn_vcores)]
    return provisioned.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def write_job_prefix(plan: JobPlan, host: str, stack: dict, facts: dict) -> Path:
    """Make `host`'s job directory: rendered configuration, wrappers and daemon script, its own
    var/, links to everything else of the provisioned prefix."""
    job = Path(plan.job_dir)
    if job.exists():
        raise JobError(f"{job} exists: another job with id {plan.job_id} on {host}? (remove it first)")
    job.mkdir(parents=True, mode=0o700)
    for sub in ("etc/hadoop", "etc/spark", "etc/secrets", "bin", "sbin", "var/log/spark-events", "var/run",
                "var/tmp", "var/spark/local", "var/yarn/local", "var/yarn/logs"):
        (job / sub).mkdir(parents=True, exist_ok=True)
    (job / "etc" / "secrets").chmod(0o700)
    secret = job / "etc" / "secrets" / "spark.secret"
    secret.write_text(plan.secret)
    secret.chmod(0o600)
    variables = template_vars(plan, host, stack, facts)
    for role, name, dest, mode in TEMPLATES:
        out = job / dest
        out.write_text(render(PLAYBOOKS / "roles" / role / "templates" / name, variables))
        out.chmod(mode)
    memory_mb = int(facts["memtotal_mb"] * float(variables["dlobd_yarn_memory_fraction"]))
    vcores = int(facts["processor_vcpus"]) * int(variables["dlobd_yarn_vcores_per_cpu"])
    (job / "etc" / "dlobd-env.sh").write_text(env_overlay(plan, host, memory_mb, vcores))
    provisioned = Path(plan.provisioned)
    # the settings of the provisioned host this node's dlobd-env.sh picks (its own folder)
    host_etc = Path(stack["DLOBD_LOCAL_DIR"]) / "etc"
    if (host_etc / "dlobd-env-image.sh").is_file():
        (job / "etc" / "dlobd-env-image.sh").write_text(
            image_env_overlay(plan, host, memory_mb, vcores, host_etc / "dlobd-env-image.sh"))
    for entry in provisioned.iterdir():
        if entry.name not in OWN_ENTRIES:
            (job / entry.name).symlink_to(entry)
    # the provisioned etc/ and bin/ entries the job does not render (fabric.json, dlobd-env ...)
    for folder, sub in ((host_etc, "etc"), (provisioned / "etc", "etc"), (provisioned / "bin", "bin")):
        for entry in folder.iterdir():
            if not (job / sub / entry.name).exists() and entry.name != "secrets":
                (job / sub / entry.name).symlink_to(entry)
    return job


def stack_of(provisioned: str) -> dict:
    found = provenance.source_env(Path(provisioned) / "etc" / "dlobd-env.sh")
    missing = [v for v in ("JAVA_HOME", "HADOOP_HOME", "DLOBD_HADOOP_CLASSPATH", "SPARK_HOME",
                           "DLOBD_PYTHON_HOME", "DLOBD_PYTHON", "DLOBD_LOCAL_DIR") if not found.get(v)]
    if missing:
        raise JobError(f"{provisioned}/etc/dlobd-env.sh sets no {', '.join(missing)}: not a provisioned prefix")
    return found


# ------------------------------------------------------------------ interruption

def record_unfinished(runs_dir: Path, since: float, status: str, reason: str) -> list[Path]:
    """run.json for the attempts this job started and nobody finished (their launcher was
    killed with the job): `status` with `reason`; their logs stay as they are."""
    written = []
    for run_json_dir in runs.all_attempts(runs_dir):
        if (run_json_dir / runner.RUN_JSON).exists() or run_json_dir.stat().st_mtime < since:
            continue
        cluster, scale, experiment, point = run_json_dir.relative_to(runs_dir).parts[:4]
        stamp = runner.now_iso()
        record = {"run_id": runs.run_id(run_json_dir, runs_dir), "experiment": experiment,
                  "scale": scale, "cluster": cluster, "point": _point_of(experiment, scale, point),
                  "command": None, "start": None, "end": stamp, "status": status,
                  "reason": f"{reason}; the run's launcher ended with the job before it could record it",
                  "execution": execution()}
        try:
            runs.write_run_json(run_json_dir, record)
            written.append(run_json_dir)
        except runs.RunError:
            pass  # its launcher wrote it meanwhile
    return written


def _point_of(experiment: str, scale: str, point_name: str) -> dict:
    specs = spec.load_all()
    if experiment not in specs:
        return {}
    return dict(dict(specs[experiment].points(scale)).get(point_name, {}))


# ------------------------------------------------------------------ node agent

def run_daemon_script(plan: JobPlan, action: str, daemons: list[str]) -> None:
    script = Path(plan.job_dir) / "sbin" / "dlobd-daemon"
    done = subprocess.run([str(script), action, *daemons], capture_output=True, text=True)
    print(done.stdout.rstrip(), file=sys.stderr, flush=True)
    if done.returncode != 0 and action == "start":
        raise JobError(f"dlobd-daemon start {' '.join(daemons)} failed: {done.stderr.strip()[-800:]}")


def node(plan: JobPlan, host: str) -> int:
    """One node's part of the job: make its job directory, start its daemons, keep them until
    told to stop (SIGTERM, SIGINT, SIGUSR1, or the stop file), then stop them, copy their logs
    to the shared directory and remove the job directory."""
    stop = {"why": None}

    def on_signal(signum, _frame):
        stop["why"] = signal.Signals(signum).name

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, on_signal)
    shared = Path(plan.shared_dir)
    daemons = plan.daemons(host)
    try:
        taken = ports_in_use(plan.addresses[host], plan.ports)
        if taken:
            raise JobError(f"{host}: ports of job {plan.job_id} already in use: {', '.join(taken)}")
        write_job_prefix(plan, host, stack_of(plan.provisioned), host_facts())
        if "namenode" in daemons:
            subprocess.run([str(Path(plan.job_dir) / "bin" / "hdfs"), "namenode", "-format", "-nonInteractive",
                            "-clusterId", f"dlobd-slurm-{plan.job_id}"], check=True, capture_output=True)
        run_daemon_script(plan, "start", daemons)
        (shared / "nodes" / host).write_text(f"started {' '.join(daemons)}\n")
        while stop["why"] is None and not (shared / STOP_FILE).exists():
            time.sleep(0.5)
    except (JobError, OSError, subprocess.CalledProcessError) as exc:
        (shared / "nodes" / host).write_text(f"failed: {exc}\n")
        print(f"slurm job {plan.job_id} on {host}: {exc}", file=sys.stderr)
        stop["why"] = stop["why"] or "error"
    finally:
        teardown_node(plan, host, daemons)
    # the stop file or scancel's SIGTERM is the ordinary end
    return 0 if stop["why"] in (None, "SIGTERM") else 1


def _net_namespace(pid: int | str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def job_processes(job_dir: str) -> list[psutil.Process]:
    """This node's processes that run from the job's directory: YARN containers (their
    NodeManager leaves them behind when it stops), tasks a launcher started over ssh. Nodes
    that share one machine (the emulated hosts) are told apart by their network namespace."""
    mine, me = _net_namespace("self"), os.getpid()
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if (proc.pid != me and job_dir in " ".join(proc.info["cmdline"] or [])
                and _net_namespace(proc.pid) == mine):
            found.append(proc)
    return found


def end_processes(procs: list[psutil.Process], grace_s: float = 5.0) -> None:
    """SIGTERM, a bounded wait, then SIGKILL."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def teardown_node(plan: JobPlan, host: str, daemons: list[str]) -> None:
    job = Path(plan.job_dir)
    if (job / "sbin" / "dlobd-daemon").exists():
        run_daemon_script(plan, "stop", list(reversed(daemons)))
    end_processes(job_processes(plan.job_dir))
    logs = Path(plan.shared_dir) / "logs" / host
    for sub in ("var/log", "var/yarn/logs"):
        if (job / sub).is_dir():
            shutil.copytree(job / sub, logs / sub.replace("/", "-"), dirs_exist_ok=True, symlinks=True)
    if job.exists():
        shutil.rmtree(job)


# ------------------------------------------------------------------ waiting for the workers

def _json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def live_workers(plan: JobPlan) -> tuple[int, int, bool]:
    """(live DataNodes, RUNNING NodeManagers, HDFS out of safe mode)."""
    nn = plan.addresses[plan.master]
    info = _json(f"http://{nn}:{plan.ports['namenode_http']}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")
    beans = (info or {}).get("beans") or [{}]
    datanodes = len(json.loads(beans[0].get("LiveNodes") or "{}"))
    safe = beans[0].get("Safemode", "?") != ""
    nodes = _json(f"http://{nn}:{plan.ports['resourcemanager_http']}/ws/v1/cluster/nodes?states=RUNNING")
    managers = len(((nodes or {}).get("nodes") or {}).get("node") or [])
    return datanodes, managers, not safe


def wait_ready(plan: JobPlan, timeout_s: float) -> float:
    """Seconds until every worker's DataNode is live, HDFS is out of safe mode and every
    NodeManager is RUNNING; a node whose agent failed ends the wait with its reason."""
    start = time.monotonic()
    want = len(plan.workers)
    while True:
        for status in (Path(plan.shared_dir) / "nodes").glob("*"):
            text = status.read_text()
            if text.startswith("failed"):
                raise JobError(f"node {status.name}: {text.strip()}")
        dn, nm, out_of_safe_mode = live_workers(plan)
        if dn == want and nm == want and out_of_safe_mode:
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            raise JobError(f"after {timeout_s:g} s: {dn} of {want} DataNodes live, {nm} of {want} "
                           f"NodeManagers RUNNING (logs: {plan.shared_dir}/logs after teardown)")
        time.sleep(READY_POLL_S)


# ------------------------------------------------------------------ interrupt (the trap)

def interrupt(plan: JobPlan, signal_name: str, runs_dir: Path, pipeline_pid: int | None,
              grace_s: float) -> list[Path]:
    """Record why the job ends, end the pipeline (its launchers record their runs with that
    reason), then record the runs nobody finished."""
    status, reason = interrupted_outcome(signal_name)
    shared = Path(plan.shared_dir)
    (shared / INTERRUPT_FILE).write_text(json.dumps({"status": status, "reason": reason,
                                                     "signal": signal_name, "at": runner.now_iso()}) + "\n")
    if pipeline_pid:
        try:
            tree = psutil.Process(pipeline_pid)
            procs = [tree, *tree.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        # the launched commands first: their launchers then record them with the reason above
        end_processes(list(reversed(procs)), grace_s)
    started = (shared / "job.json").stat().st_mtime
    return record_unfinished(runs_dir, started, status, reason)


def launch_item(item: str, runs_dir: Path, cluster: str, scale: str) -> Path:
    """Launch `EXPERIMENT=POINT_JSON` as the pipeline's run step does, for a point the spec's
    matrix at `scale` lacks (a TFoS point on the emulated link, say); returns its attempt."""
    experiment, sep, point_text = item.partition("=")
    specs = spec.load_all()
    if not sep or experiment not in specs:
        raise JobError(f"launch {item!r}: expected EXPERIMENT=POINT_JSON with a known experiment")
    try:
        point = json.loads(point_text)
    except json.JSONDecodeError as exc:
        raise JobError(f"launch {item!r}: the point is not JSON ({exc})") from None
    if not isinstance(point, dict):
        raise JobError(f"launch {item!r}: the point must be a JSON object of axis values")

    def ended(signum, _frame):
        # out of the launcher's wait, through its cleanup, into a record with the trap's reason
        raise LaunchInterrupted(f"{signal.Signals(signum).name} from the Slurm job's end")

    signal.signal(signal.SIGTERM, ended)
    return runs.launch(specs[experiment].data, scale, point, runs_dir, cluster=cluster)


# ------------------------------------------------------------------ command line

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlobd.execution.slurmjob", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_plan = sub.add_parser("plan", help="write the job's plan (job.json) to the shared directory; print its path")
    p_plan.add_argument("--prefix", required=True, help="the provisioned prefix (same path on every node)")
    p_plan.add_argument("--scratch", required=True, help="node-local scratch (same path on every node)")
    p_plan.add_argument("--shared", required=True, help="a directory on the shared file system")
    p_launch = sub.add_parser("launch", help="launch one point through its stack's launcher (points outside "
                              "the spec's matrix, which the pipeline does not run); print the attempt")
    p_launch.add_argument("--runs", type=Path, required=True)
    p_launch.add_argument("--cluster", default="slurm")
    p_launch.add_argument("--scale", default="local")
    p_launch.add_argument("item", help="EXPERIMENT=POINT_JSON, e.g. dlobd-fig5b={\"gpus\":2,...}")
    for name in ("node", "ready", "interrupt"):
        p = sub.add_parser(name)
        p.add_argument("job_json", type=Path)
        if name == "ready":
            p.add_argument("--timeout", type=float, default=300)
            p.add_argument("--job-start", type=float, required=True, help="the job's start (seconds since the epoch)")
        if name == "interrupt":
            p.add_argument("--signal", required=True, choices=sorted(INTERRUPTIONS))
            p.add_argument("--runs", type=Path, required=True)
            p.add_argument("--pipeline-pid", type=int)
            p.add_argument("--grace", type=float, default=20)
    args = parser.parse_args(argv)
    try:
        if args.command == "plan":
            job_id = os.environ.get("SLURM_JOB_ID")
            if not job_id:
                raise JobError("SLURM_JOB_ID is not set: run inside a Slurm job (sbatch slurm/dlobd.sbatch)")
            hosts = expand_nodelist(os.environ.get("SLURM_JOB_NODELIST", ""))
            plan = make_plan(int(job_id), hosts, args.prefix, args.scratch, args.shared)
            shared = Path(plan.shared_dir)
            (shared / "nodes").mkdir(parents=True)
            plan.save(shared / "job.json")
            print(shared / "job.json")
        elif args.command == "launch":
            print(launch_item(args.item, args.runs, args.cluster, args.scale))
        elif args.command == "node":
            plan = JobPlan.load(args.job_json)
            return node(plan, socket.gethostname())
        elif args.command == "ready":
            plan = JobPlan.load(args.job_json)
            waited = wait_ready(plan, args.timeout)
            seconds = time.time() - args.job_start
            (Path(plan.shared_dir) / "ready.json").write_text(json.dumps(
                {"job_start_to_ready_s": round(seconds, 3), "waited_s": round(waited, 3),
                 "at": runner.now_iso()}) + "\n")
            print(f"job start to every worker live: {seconds:.1f} s")
        elif args.command == "interrupt":
            plan = JobPlan.load(args.job_json)
            for path in interrupt(plan, args.signal, args.runs, args.pipeline_pid, args.grace):
                print(f"recorded {path}: {INTERRUPTIONS[args.signal][0]}")
    except JobError as exc:
        print(f"slurm job: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
