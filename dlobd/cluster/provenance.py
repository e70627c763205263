"""Provenance of a run: software versions, the machine, its NICs, the project's commit.

Everything is best effort: a component that is not installed reads as null, never as a
guess. Probes that start programs (java, mpirun, git) run once per process.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import psutil

from dlobd import ROOT

# The cluster of an Ansible inventory (dlobd.cluster.inventory.Cluster) that prefix(), stack_setting(),
# workers() and present() answer for instead of this machine, during a plan or a dry run.
_inventory = None

@contextlib.contextmanager
def inventory_in_use(cluster):
    """Answer for the cluster of an inventory (dlobd.cluster.inventory.load) inside the block: its launch
    host's prefix and dlobd-env.sh settings, its workers' cluster addresses."""
    global _inventory
    previous, _inventory = _inventory, cluster
    try:
        yield cluster
    finally:
        _inventory = previous

def inventory():
    """The inventory's cluster in use (inventory_in_use), or None for this machine."""
    return _inventory

def prefix() -> Path:
    """The provisioned software prefix ($DLOBD_PREFIX, default ~/dlobd-stack), or the launch
    host's of the inventory in use."""
    if _inventory is not None:
        return _inventory.prefix
    return Path(os.environ.get("DLOBD_PREFIX", "~/dlobd-stack")).expanduser()

# The paper profile's Python of TensorFlowOnSpark 1.0.8 and TensorFlow 1.4 (dlobd_stack_settings),
# which its PySpark PageRank and native TensorFlow's gRPC points borrow
TFOS_PYTHON = "DLOBD_TFOS_PYTHON"

def stack_setting(name: str) -> str | None:
    """A variable of the stack environment: dlobd-env.sh's value, else this process's. With an
    inventory in use, only what its dlobd-env.sh would hold: this process's environment says
    nothing about that cluster."""
    if _inventory is not None:
        return _inventory.settings.get(name)
    return prefix_env().get(name) or os.environ.get(name)

def cluster_name() -> str:
    """The name this cluster's runs are recorded under (data/runs/<name>/...): its inventory's
    dlobd_cluster_name, which dlobd-env.sh exports; `local` without one."""
    return stack_setting("DLOBD_CLUSTER_NAME") or "local"

def which(program: str) -> str | None:
    """A program on PATH: its path here, or with an inventory in use its name, which the
    hosts' PATH resolves (the playbooks install it there)."""
    if _inventory is not None:
        return program
    return shutil.which(program)

def present(path) -> bool:
    """Whether a file or directory of the cluster's software is there. With an inventory in use
    the cluster's disks cannot be seen from here: what the inventory names (and provisioning
    installs) counts as present, and a plan says so."""
    if _inventory is not None:
        return bool(path)
    return bool(path) and Path(path).exists()

def workers(gpu: bool = False) -> list[str]:
    """The cluster's worker addresses, as the provisioned dlobd-env.sh lists them; with `gpu`
    only those of group gpu."""
    listed = (stack_setting("DLOBD_GPU_WORKERS" if gpu else "DLOBD_WORKERS") or "").strip()
    return re.split(r"[,\s]+", listed) if listed else []

def host_names(addresses) -> list[str]:
    """The names the inventory in use gives the hosts at these addresses (cluster or Ethernet),
    for reasons an inventory's user reads; without one, or for an address none of its hosts has,
    the address."""
    if _inventory is None:
        return list(addresses)
    names = {address: host.name for host in _inventory.hosts.values()
             for address in (host.address, host.ethernet_address) if address}
    return [names.get(a, a) for a in addresses]

def _pairs(setting: str) -> dict[str, str]:
    """A dlobd-env.sh setting of space-separated `key=value` pairs as a dict."""
    return dict(pair.split("=", 1) for pair in (stack_setting(setting) or "").split() if "=" in pair)


def ethernet_addresses() -> dict[str, str]:
    """Worker cluster address -> its Ethernet address, for the workers the inventory gives one
    (dlobd_ethernet_address; DLOBD_WORKERS_ETHERNET of dlobd-env.sh)."""
    return _pairs("DLOBD_WORKERS_ETHERNET")


def ethernet_gbps() -> dict[str, float]:
    """Worker cluster address -> the rate (Gb/s) of its Ethernet link, for the workers that
    declare one (dlobd_hardware.ethernet_gbps; DLOBD_WORKERS_ETHERNET_GBPS of dlobd-env.sh)."""
    return {address: float(rate) for address, rate in _pairs("DLOBD_WORKERS_ETHERNET_GBPS").items() if rate}


def link_layers() -> dict[str, str]:
    """Worker cluster address -> the link layer of its HCA port (InfiniBand, or Ethernet for
    RoCE), for the workers that declare one (dlobd_hardware.link_layer; DLOBD_WORKERS_LINK_LAYER
    of dlobd-env.sh)."""
    return _pairs("DLOBD_WORKERS_LINK_LAYER")


def default_route_addresses() -> dict[str, str]:
    """Worker cluster address -> the address of its default route, for the workers where the two
    differ (Ansible's facts at provisioning; DLOBD_WORKERS_DEFAULT_ROUTE of dlobd-env.sh, empty
    in a dry run of an inventory)."""
    return _pairs("DLOBD_WORKERS_DEFAULT_ROUTE")


def is_local_address(host: str) -> bool:
    """Whether `host` names this machine (loopback or one of its interfaces' addresses)."""
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return False
    if address.startswith("127."):
        return True
    return any(address in nic["addresses"] for nic in nics())

def cluster_hosts() -> list[dict]:
    """The hosts of the provisioned cluster with their roles, for run.json."""
    roles: dict[str, list[str]] = {}
    for role, var in (("namenode", "DLOBD_NAMENODE_ADDRESS"),
                      ("resourcemanager", "DLOBD_RESOURCEMANAGER_ADDRESS")):
        if stack_setting(var):
            roles.setdefault(stack_setting(var), []).append(role)
    for worker in workers():
        roles.setdefault(worker, []).append("worker")
    if not roles:
        return [local_host()]
    return [{"name": socket.gethostname() if is_local_address(addr) else addr,
             "address": addr, "roles": r} for addr, r in roles.items()]

def with_link(hosts: list[dict]) -> list[dict]:
    """Hosts of an emulated cluster say so, with the emulated link between them (not a run's
    loopback address: its traffic never crosses that link)."""
    link = stack_setting("DLOBD_EMULATED_LINK")
    if not link:
        return hosts
    return [h if h["address"].startswith("127.") else {**h, "link": link} for h in hosts]

# In each host's own folder (dlobd_local_dir): the fabric role's fingerprint. In the prefix:
# `make calibrate`'s record.
FABRIC_FILE = Path("etc", "fabric.json")
CALIBRATION_FILE = Path("etc", "calibration.json")

def host_folder(address: str) -> Path:
    """The own folder (DLOBD_LOCAL_DIR) of the host at `address`: this machine's from its
    dlobd-env.sh, another host's from that host's own over ssh; the prefix where none is named
    (a prefix of one host's) or the host cannot be asked."""
    if is_local_address(address):
        return Path(stack_setting("DLOBD_LOCAL_DIR") or prefix())
    return _remote_folder(address, prefix())

@functools.lru_cache(maxsize=None)
def _remote_folder(address: str, prefix: Path) -> Path:
    # asked once per process: a host's folder does not move while runs go on
    script = f'. {shlex.quote(str(prefix / "etc" / "dlobd-env.sh"))} >/dev/null 2>&1; echo "$DLOBD_LOCAL_DIR"'
    found = _run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", address, script], timeout=30)
    return Path(found) if found else prefix

def host_path(address: str, path) -> Path:
    """A path of this host's own folder as the host at `address` has it, under its own folder;
    any other path is the same on every host."""
    path, mine = Path(path), host_folder("127.0.0.1")
    if mine == prefix() or mine not in (path, *path.parents):
        return path
    return host_folder(address) / path.relative_to(mine)

def host_json(address: str, relative: Path, own: bool = False) -> dict | None:
    """A JSON file under the prefix of the host at `address`, or with `own` under that host's own
    folder: this machine's read directly, another host's over ssh (the prefix has the same path
    on every host, as the samplers assume). None where it does not exist; {"error": ...} where it
    cannot be read or is not JSON."""
    return _host_json(address, (host_folder(address) if own else prefix()) / relative)

@functools.lru_cache(maxsize=None)
def _host_json(address: str, path: Path) -> dict | None:
    # read once per process: a run's hosts do not change their hardware while it runs
    if is_local_address(address):
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return {"error": f"{path}: {exc.strerror}"}
    else:
        try:
            proc = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", address,
                                   f"cat {shlex.quote(str(path))} 2>/dev/null || echo __absent__"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"error": f"{address}:{path}: {exc}"}
        if proc.returncode != 0:
            return {"error": f"{address}:{path}: ssh exit status {proc.returncode}: {proc.stderr.strip()[:200]}"}
        text = proc.stdout
        if text.strip() == "__absent__":
            return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return {"error": f"{address}:{path}: not JSON ({exc})"}

def fabrics(hosts: list[dict]) -> dict:
    """Each host's fabric fingerprint (the fabric role's), by host name; null where none was recorded."""
    return {h["name"]: host_json(h["address"], FABRIC_FILE, own=True) for h in hosts}

def build_dir(name: str, source: Path) -> Path:
    """Where this checkout builds one of the project's programs from `source`: under the prefix,
    one directory per source tree, because a CMake build directory belongs to one."""
    tree = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:8]
    return prefix() / "build" / f"{name}-{tree}"

def _run(cmd: list[str], timeout: float = 10, env: dict | None = None) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (proc.stdout + proc.stderr).strip() if proc.returncode == 0 else None

def source_env(env_file, base: dict | None = None) -> dict:
    """The variables sourcing a shell file sets or changes, in the environment `base` (default:
    this process's); {} when bash cannot source it."""
    base = dict(os.environ if base is None else base)

    def dump(script: str) -> dict | None:
        out = _run(["bash", "-c", script, "_", str(env_file)], env=base)
        return None if out is None else dict(
            item.split("=", 1) for item in out.split("\0") if "=" in item)

    before, after = dump("env -0"), dump('source "$1" >/dev/null 2>&1; env -0')
    if before is None or after is None:
        return {}
    return {k: v for k, v in after.items() if before.get(k) != v}

def prefix_env() -> dict:
    """Variables exported by <prefix>/etc/dlobd-env.sh (HADOOP_HOME, SPARK_HOME, ...); with an
    inventory in use, those its launch host's dlobd-env.sh would export."""
    if _inventory is not None:
        return dict(_inventory.settings)
    return provisioned_env()

@functools.lru_cache(maxsize=1)
def provisioned_env() -> dict:
    env_file = prefix() / "etc" / "dlobd-env.sh"
    if not env_file.is_file():
        return {}
    return source_env(env_file)

def _jar_version(pattern: str) -> str | None:
    for path in sorted(glob.glob(pattern, recursive=True)):
        m = re.search(r"-(\d+(?:\.\d+)+)(?=[-.])", Path(path).name)
        if m:
            return m.group(1)
    return None

def _site_packages() -> list[str]:
    """site-packages of the stacks' Python (DLOBD_PYTHON_HOME), else anywhere in the prefix."""
    home = stack_setting("DLOBD_PYTHON_HOME")
    if home:
        found = glob.glob(os.path.join(home, "lib", "python*", "site-packages"))
        if found:
            return found
    return glob.glob(str(prefix() / "**" / "site-packages"), recursive=True)

def dist_version(name: str) -> str | None:
    """Version of a Python distribution installed for the stacks. Under the apptainer install
    method their site-packages are inside the image: the stacks' Python (its wrapper) says."""
    if stack_setting("DLOBD_INSTALL_METHOD") == "apptainer":
        return _image_dist_version(stack_setting("DLOBD_PYTHON") or "", name)
    for site in _site_packages():
        for path in sorted(glob.glob(os.path.join(site, f"{name}-*.dist-info"))):
            m = re.match(rf"{re.escape(name)}-(.+)\.dist-info$", Path(path).name)
            if m:
                return m.group(1)
    return None

@functools.lru_cache(maxsize=None)
def _image_dist_version(python: str, name: str) -> str | None:
    found = _run([python, "-c", "import importlib.metadata as m, sys\n"
                  "try: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass", name], timeout=60)
    return found.splitlines()[-1] if found else None

def _stack_python() -> str | None:
    """The version of the Python the stacks run with (their venv; under the apptainer method the
    image's, which its wrapper says), else this one."""
    if stack_setting("DLOBD_INSTALL_METHOD") == "apptainer":
        found = _run([stack_setting("DLOBD_PYTHON") or "", "-c", "import platform; print(platform.python_version())"],
                     timeout=60)
        return found.splitlines()[-1] if found else None
    home = stack_setting("DLOBD_PYTHON_HOME")
    try:
        for line in Path(home, "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version", "version_info"):
                return value.strip()
    except (OSError, TypeError):
        pass
    return platform.python_version()

def _version_line(output: str | None) -> str | None:
    """The line of a `--version` output that names it (Apptainer may print notices first)."""
    lines = (output or "").splitlines()
    return next((line for line in lines if "version" in line.lower()), lines[0] if lines else None)


@functools.lru_cache(maxsize=1)
def versions() -> dict:
    env = {**os.environ, **prefix_env()}
    pre = str(prefix())
    # the stacks' Java and MPI, not whichever the host has first on its PATH: under the apptainer
    # method the image's (its wrappers in the prefix), and none where the image has no MPI
    java = _run([os.path.join(env["JAVA_HOME"], "bin", "java") if env.get("JAVA_HOME") else "java", "-version"],
                timeout=60)
    hadoop_home = env.get("HADOOP_HOME") or pre
    in_image = env.get("DLOBD_INSTALL_METHOD") == "apptainer"
    mpi = _run([os.path.join(pre, "bin", "mpirun") if in_image else "mpirun", "--version"], timeout=60)
    return {
        "java": _version_line(java),
        "hadoop": env.get("HADOOP_VERSION")
        or _jar_version(os.path.join(hadoop_home, "**", "hadoop-common-[0-9]*.jar")),
        "spark": env.get("SPARK_VERSION") or dist_version("pyspark"),
        "python": _stack_python(),
        "tensorflow": dist_version("tensorflow_cpu") or dist_version("tensorflow"),
        "tensorflowonspark": dist_version("tensorflowonspark"),
        "bigdl": env.get("DLOBD_BIGDL_VERSION")
        or _jar_version(os.path.join(pre, "**", "bigdl-dllib-*.jar")),
        "mpi": _version_line(mpi),
    }

def nics() -> list[dict]:
    """Every interface with its addresses and link rate (null where the kernel has none)."""
    addrs = psutil.net_if_addrs()
    out = []
    for name in sorted(addrs):
        speed = None
        try:
            raw = Path(f"/sys/class/net/{name}/speed").read_text().strip()
            speed = int(raw) if int(raw) > 0 else None
        except (OSError, ValueError):
            pass  # virtual links (lo, veth, ifb) have no rate
        kind = "infiniband" if Path(f"/sys/class/net/{name}/device/infiniband").exists() else None
        out.append({
            "name": name,
            "speed_mbps": speed,
            "type": kind,
            "addresses": [a.address for a in addrs[name]
                          if a.family in (socket.AF_INET, socket.AF_INET6)],
        })
    return out

def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None

# The vector instruction sets that set a CPU-bound job's speed: TensorFlow's oneDNN and Caffe's BLAS
# pick kernels by them, so one CPU model string can hide a twofold difference (AVX-512 or not).
VECTOR_ISA = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")

def cpu_isa(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str] | None:
    """Which of VECTOR_ISA this host's CPU offers, in that order; None where the flags are not
    readable."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return [isa for isa in VECTOR_ISA if isa in flags]
    return None

@functools.lru_cache(maxsize=1)
def git_state() -> dict:
    commit = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    status = _run(["git", "-C", str(ROOT), "status", "--porcelain",
                   "--untracked-files=no"])
    return {"commit": commit, "dirty": bool(status) if status is not None else None}

@functools.lru_cache(maxsize=None)
def changed_since(commit: str, paths: tuple[str, ...], root: Path = ROOT) -> tuple[str, ...] | None:
    """Which of `paths` (relative to the project root) differ between `commit` and the checkout as it
    is now; None when git cannot tell: no git, or a commit this checkout's history lacks."""
    out = _run(["git", "-C", str(root), "diff", "--name-only", commit, "--", *paths])
    return None if out is None else tuple(out.splitlines())

@functools.lru_cache(maxsize=None)
def file_at(commit: str, path: str, root: Path = ROOT) -> str | None:
    """The text of `path` (relative to the project root) at `commit`; None where it did not exist
    there or git cannot tell."""
    return _run(["git", "-C", str(root), "show", f"{commit}:{path}"])

def daemons(where: Path) -> dict[str, psutil.Process]:
    """The running Hadoop daemons of the prefix `where` on this host, by name (the
    `-Ddlobd.daemon=` its sbin/dlobd-daemon gives each)."""
    found = {}
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        names = [a.split("=", 1)[1] for a in cmdline if a.startswith("-Ddlobd.daemon=")]
        if names and any(str(where) in a for a in cmdline):
            found[names[0]] = proc
    return found

def daemon_cpus() -> dict[str, int]:
    """How many CPUs each Hadoop daemon of this prefix on this host may run on (its CPU affinity,
    by the daemon's name): YARN's containers inherit the NodeManager's, so a daemon started pinned
    runs every job on fewer CPUs than the host has."""
    found = {}
    for name, proc in daemons(prefix()).items():
        try:
            found[name] = len(proc.cpu_affinity())
        except psutil.Error:
            continue  # gone, or not ours to read
    return found

def system() -> dict:
    return {
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_isa": cpu_isa(),
        "cpus": psutil.cpu_count(logical=True),
        "daemon_cpus": daemon_cpus(),
        "memory_mb": psutil.virtual_memory().total // (1024 * 1024),
        "nics": nics(),
    }

def local_host() -> dict:
    return {"name": socket.gethostname(), "address": "127.0.0.1", "roles": ["all"]}

def collect(execution: dict, stack: str | None = None) -> dict:
    """The provenance part of run.json: versions, system, hosts, each host's fabric fingerprint,
    the last `make calibrate` of this host's prefix, git, and `execution`, the execution path
    the supervisor found (a Slurm job, its nodes and image, where there is one)."""
    v = dict(versions())
    v["stack"] = v.get(stack) if stack in v else None
    v["harness_python"] = platform.python_version()
    hosts = cluster_hosts()
    return {"versions": v, "system": system(), "hosts": hosts, "fabric": fabrics(hosts),
            "calibration": host_json("127.0.0.1", CALIBRATION_FILE), "git": git_state(),
            "execution": execution}
