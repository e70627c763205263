#!/usr/bin/env python3
"""An emulated multi-host cluster on one machine: hosts made of Linux network namespaces.

`up` makes one master and N workers. Each host is a network namespace joined by a veth pair to
one bridge in the root namespace, with its own address from a private address plan, `lo` up,
name resolution for the harness's host names (/etc/netns/<ns>/hosts, which `ip netns exec`
mounts over /etc/hosts), its own UTS hostname, and an sshd bound to its address only (own host
key, a per-run authorized key). The veth pairs may be shaped with tbf into an emulated Ethernet
tier (eth-1g, eth-10g) or left unshaped; the kernel has no netem, so there is no added delay or
loss, and the links are never to be called IPoIB or RDMA. An Ansible inventory for the hosts is
written where the playbooks find it.

Every object is recorded in the run's state file *before* it is made, so `down` removes exactly
what was made, also after a bring-up that failed or was killed half way, and can be repeated.

Inside the hosts, `ssh` (from the master to the workers: the launchers, the samplers, scp of
container logs) uses the run's key and known hosts through /etc/netns/<ns>/ssh/ssh_config.
Each host has a stack folder of its own (they share one file system), mounted in its mount
namespace on one prefix path common to all hosts, as a cluster's nodes have; with --shared-prefix
every host sees one folder at that path instead, as on NFS or Lustre. With --gpu-workers N the
last N workers are in group gpu, so YARN gives their NodeManagers the GPU node label; they have no
GPU, so what runs there on CPU stands in for GPU work. The stacks install from a package depot that
the controller fills, since the hosts reach no package registry.

--site paper-shape makes a site shaped like a real one (the papers' clusters), for rehearsing the
paper scale's layout: every worker declares the node size of a real site (PAPER_SHAPE; YARN's
NodeManagers and the dry run are sized from it, the fabric role takes it as given), the master
holding the ResourceManager declares a smaller one, the cluster links are named ib0 and, on the
gpu workers, ib1 (unshaped veth standing in for IPoIB, never called IPoIB), a second bridge is the
management network: each host's Ethernet address (Ansible's address too), shaped to eth-10g and
declared so, and every host sees one prefix folder.

    tests/cluster/emulated.py --state-dir DIR up [--workers 3] [--tier eth-1g] [--subnet ...] [--shared-prefix] [--gpu-workers N]
    tests/cluster/emulated.py --state-dir DIR up --site paper-shape --gpu-workers 1 [--management-subnet ...]
    tests/cluster/emulated.py --state-dir DIR exec [--host master] -- COMMAND ...
    tests/cluster/emulated.py --state-dir DIR relink --tier eth-10g   (then site.yml again)
    tests/cluster/emulated.py --state-dir DIR down
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[2]
NETWORKS_YAML = ROOT / "config" / "networks.yaml"
DEFAULT_INVENTORY = ROOT / "playbooks" / "inventories" / "emulated" / "hosts.yml"
DEFAULT_SUBNET = "10.77.0.0/24"
DEFAULT_MANAGEMENT_SUBNET = "10.78.0.0/24"
# Kept between runs like ~/.m2: the wheels and Maven artifacts the hosts install from.
DEFAULT_DEPOT = Path.home() / ".cache" / "dlobd" / "depot"
# YARN's share of the machine's memory per NodeManager: the hosts share one machine's RAM.
YARN_MEMORY_SHARE = 0.6
UNSHAPED = "unshaped"
# Line rate of each Ethernet tier the harness can emulate. Which network axis value means which
# tier comes from config/networks.yaml (tier_of_network); this is only how fast each tier is.
TBF_RATE_MBIT = {"eth-1g": 1000, "eth-10g": 10000}
# tbf queue: packets wait at most this long before being dropped (a switch port's buffer).
TBF_LATENCY_MS = 20
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
STATE_NAME = "state.json"
# Each host's own software, data, logs and pids (<state>/hosts/<name>/stack) are bind-mounted in
# its mount namespace on <state>/stack: one prefix path for all hosts, as on a real cluster. A
# shared prefix is <state>/stack itself, the same folder for every host.
STACK_MOUNT = "stack"
# Interface names are at most 15 characters: "dle" + 6 hex + "-v" + index fits up to 999 hosts.
RUN_ID_RE = re.compile(r"^[0-9a-f]{6}$")
SITES = ("plain", "paper-shape")
# The paper-shape site: node sizes of a real site's workers (48 logical CPUs as on the papers'
# Cluster A, tens of GB) and of a smaller service host holding the ResourceManager and NameNode;
# the cluster interface of CPU and GPU workers (named apart, as on sites whose GPU hosts have a
# second HCA); the management network's tier, whose rate every host declares. A veth reports 10
# Gb/s (/sys/class/net/<if>/speed), so eth-10g is the tier the fabric role finds as declared.
PAPER_SHAPE = {
    "worker": {"cores": 48, "memory_gb": 64},
    "master": {"cores": 16, "memory_gb": 32},
    "interface": {"cpu": "ib0", "gpu": "ib1"},
    "ethernet_tier": "eth-10g",
    "ethernet_gbps": 10,
    # a real site's share of each node for YARN (the plain site shares this machine's memory)
    "yarn_memory_fraction": 0.75,
}


class HarnessError(Exception):
    """A clear reason why the emulated cluster cannot be made or removed."""


# ------------------------------------------------------------------ tiers (pure)

def _links() -> dict:
    with open(NETWORKS_YAML) as fh:
        return yaml.safe_load(fh)["links"]


def tier_of_network(network: str, links: dict | None = None) -> str:
    """The tier an emulated network axis value stands for: `eth-1g-emulated` emulates the
    `eth-1g` link of config/networks.yaml."""
    links = _links() if links is None else links
    link = links.get(network)
    if link is None:
        raise HarnessError(f"network {network!r} is not defined in {NETWORKS_YAML.name}")
    if not link.get("emulated"):
        raise HarnessError(f"network {network!r} is not an emulated link in {NETWORKS_YAML.name} "
                           "(no `emulated: true`): the harness only makes emulated Ethernet")
    tier = network.removesuffix("-emulated")
    if tier == network or tier not in links:
        raise HarnessError(f"emulated network {network!r} names no Ethernet link it emulates "
                           f"(expected {network!r} = <link of {NETWORKS_YAML.name}>-emulated)")
    if tier not in TBF_RATE_MBIT:
        raise HarnessError(f"emulated network {network!r}: the harness has no line rate for tier {tier!r} "
                           f"(known: {', '.join(TBF_RATE_MBIT)})")
    return tier


def resolve_tier(value: str, links: dict | None = None) -> tuple[str, str | None]:
    """(tier, network axis value) for a --tier argument: a tier name (`eth-1g`, `unshaped`) or an
    emulated network axis value (`eth-1g-emulated`)."""
    if value == UNSHAPED:
        return UNSHAPED, None
    links = _links() if links is None else links
    emulated = {net: tier_of_network(net, links) for net, link in links.items() if link.get("emulated")}
    if value in emulated:
        return emulated[value], value
    for net, tier in emulated.items():
        if tier == value:
            return tier, net
    choices = sorted({UNSHAPED, *emulated, *emulated.values()})
    raise HarnessError(f"unknown link tier {value!r} (choices: {', '.join(choices)})")


def tbf_params(tier: str) -> dict | None:
    """The tbf settings that shape a veth end into `tier`; None for an unshaped link."""
    if tier == UNSHAPED:
        return None
    if tier not in TBF_RATE_MBIT:
        raise HarnessError(f"unknown link tier {tier!r} (known: {', '.join([*TBF_RATE_MBIT, UNSHAPED])})")
    mbit = TBF_RATE_MBIT[tier]
    # A bucket of 1 ms at line rate, but never below a 64 KiB GSO segment plus headers: tbf
    # would otherwise have to split every large segment.
    burst = max(mbit * 1000 // 8, 64 * 1024 + 1514)
    return {"rate": f"{mbit}mbit", "burst": burst, "latency": f"{TBF_LATENCY_MS}ms"}


def tier_label(tier: str) -> str:
    params = tbf_params(tier)
    if params is None:
        return "emulated Ethernet, unshaped (veth)"
    return f"emulated Ethernet {tier} (veth + tbf {params['rate']})"


# ------------------------------------------------------------------ naming and address plan (pure)

@dataclass(frozen=True)
class Host:
    name: str        # hostname, inventory name and namespace name at once
    role: str        # master | worker
    address: str
    veth: str        # the root namespace's end of the host's veth pair
    interface: str = "eth0"  # the host's end: its cluster interface
    # paper-shape: the host's address on the management network and the root's end of that link
    ethernet_address: str | None = None
    management_veth: str | None = None


@dataclass(frozen=True)
class Plan:
    run_id: str
    prefix: str
    subnet: str
    bridge: str
    bridge_address: str   # the root namespace's address on the bridge (how Ansible reaches the hosts)
    tier: str
    network: str | None   # the spec axis value the tier stands for (None when unshaped)
    hosts: tuple[Host, ...]
    shared_prefix: bool = False  # one prefix folder for every host (NFS, Lustre), no per-host mount
    gpu_workers: int = 0  # the last this many workers are in group gpu (without a GPU)
    site: str = "plain"   # one of SITES
    management_subnet: str | None = None  # paper-shape: the Ethernet addresses' network
    management_bridge: str | None = None
    management_bridge_address: str | None = None

    @property
    def prefixlen(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen


def new_run_id() -> str:
    return secrets.token_hex(3)


def _addresses(option: str, subnet: str, workers: int) -> tuple[ipaddress.IPv4Network, list]:
    """The network of a --subnet-like option and its usable addresses, enough for the hosts and
    the bridge."""
    try:
        net = ipaddress.ip_network(subnet)
    except ValueError as exc:
        raise HarnessError(f"{option} {subnet!r}: not an IPv4 network ({exc})") from None
    if net.version != 4 or not net.is_private or net.is_loopback or net.is_link_local:
        raise HarnessError(f"{option} {subnet}: must be a private IPv4 range (not loopback or link-local)")
    usable = list(net.hosts())
    if workers + 2 > len(usable):
        raise HarnessError(f"{option} {subnet} has {len(usable)} addresses: too few for 1 master, "
                           f"{workers} workers and the bridge")
    return net, usable


def make_plan(workers: int, subnet: str = DEFAULT_SUBNET, tier: str = UNSHAPED,
              run_id: str | None = None, shared_prefix: bool = False, gpu_workers: int = 0,
              site: str = "plain", management_subnet: str = DEFAULT_MANAGEMENT_SUBNET) -> Plan:
    run_id = new_run_id() if run_id is None else run_id
    if not RUN_ID_RE.match(run_id):
        raise HarnessError(f"run id {run_id!r}: expected 6 lowercase hex digits")
    if workers < 1:
        raise HarnessError(f"--workers {workers}: at least one worker is needed")
    if site not in SITES:
        raise HarnessError(f"--site {site!r}: one of {', '.join(SITES)}")
    net, usable = _addresses("--subnet", subnet, workers)
    if not 0 <= gpu_workers <= workers:
        raise HarnessError(f"--gpu-workers {gpu_workers}: between 0 and the {workers} workers")
    if workers + 1 > 999:
        raise HarnessError(f"--workers {workers}: at most 998 (interface names are 15 characters)")
    tier, network = resolve_tier(tier)
    prefix = f"dle{run_id}"
    roles = [("master", "master")] + [(f"worker{i}", "worker") for i in range(1, workers + 1)]
    hosts = [Host(name=f"{prefix}-{short}", role=role, address=str(usable[i]), veth=f"{prefix}-v{i}")
             for i, (short, role) in enumerate(roles)]
    plan = Plan(run_id=run_id, prefix=prefix, subnet=str(net), bridge=f"{prefix}-br",
                bridge_address=str(usable[-1]), tier=tier, network=network, hosts=tuple(hosts),
                shared_prefix=shared_prefix, gpu_workers=gpu_workers)
    if site == "plain":
        return plan
    if not 0 < gpu_workers < workers:
        raise HarnessError(f"--site paper-shape --gpu-workers {gpu_workers}: some workers but not all "
                           f"of the {workers} in group gpu (their interfaces are named apart)")
    if tier != UNSHAPED:
        raise HarnessError(f"--site paper-shape --tier {tier}: the cluster links stand in for IPoIB, "
                           f"unshaped; Ethernet is the management network's ({PAPER_SHAPE['ethernet_tier']})")
    mnet, musable = _addresses("--management-subnet", management_subnet, workers)
    if mnet.overlaps(net):
        raise HarnessError(f"--management-subnet {mnet} overlaps --subnet {net}: two networks, two ranges")
    gpu = set(gpu_hosts(plan))
    hosts = tuple(replace(h, interface=PAPER_SHAPE["interface"]["gpu" if h.name in gpu else "cpu"],
                          ethernet_address=str(musable[i]), management_veth=f"{prefix}-m{i}")
                  for i, h in enumerate(hosts))
    return replace(plan, hosts=hosts, shared_prefix=True, site=site, management_subnet=str(mnet),
                   management_bridge=f"{prefix}-mg", management_bridge_address=str(musable[-1]))


def conflicts(subnet: str, addresses: list[tuple[str, str]], routes: list[tuple[str, str]]) -> list[str]:
    """What in the root namespace overlaps `subnet`: addresses as (cidr, device) and routes as
    (destination, device); the default route overlaps nothing on purpose."""
    net = ipaddress.ip_network(subnet)
    found = []
    for cidr, dev in addresses:
        iface = ipaddress.ip_interface(cidr)
        if iface.version == 4 and iface.network.overlaps(net):
            found.append(f"address {cidr} on {dev}")
    for dst, dev in routes:
        if dst == "default":
            continue
        dest = ipaddress.ip_network(dst, strict=False)
        if dest.version == 4 and dest.overlaps(net):
            found.append(f"route {dst} dev {dev}")
    return found


def hosts_file(plan: Plan) -> str:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
             f"# emulated cluster {plan.prefix} ({tier_label(plan.tier)})"]
    lines += [f"{h.address}\t{h.name}" for h in plan.hosts]
    return "\n".join(lines) + "\n"


def sshd_config(host: Host, host_dir: Path, authorized_keys: Path) -> str:
    return "\n".join([
        f"# sshd of emulated host {host.name}: its addresses only, its own host key, the run's key",
        *(f"ListenAddress {address}:22" for address in (host.address, host.ethernet_address) if address),
        f"HostKey {host_dir / 'ssh_host_ed25519_key'}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PidFile none",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # the state dir may sit under a world-writable /tmp (tests); the keys in it are root's, 0600
        "StrictModes no",
        "PrintMotd no",
        "X11Forwarding no",
        f"Subsystem sftp {SFTP_SERVER}",
    ]) + "\n"


def link_vars(plan: Plan) -> dict:
    """The host variables that say which link the hosts have (stack_env writes them out)."""
    label = tier_label(plan.tier)
    if plan.management_bridge:
        label = (f"cluster links {'/'.join(sorted(PAPER_SHAPE['interface'].values()))}: {label}, standing in "
                 f"for IPoIB; management network: {tier_label(PAPER_SHAPE['ethernet_tier'])}")
    return {"dlobd_emulated_tier": plan.tier, "dlobd_emulated_network": plan.network,
            "dlobd_emulated_link": label}


def gpu_hosts(plan: Plan) -> list[str]:
    """The workers in group gpu: the last plan.gpu_workers."""
    workers = [h.name for h in plan.hosts if h.role == "worker"]
    return workers[len(workers) - plan.gpu_workers:] if plan.gpu_workers else []


def render_inventory(plan: Plan, state_dir: Path, depot: Path = DEFAULT_DEPOT) -> dict:
    """The Ansible inventory of the run, in the groups the playbooks expect."""
    master = [h.name for h in plan.hosts if h.role == "master"]
    workers = [h.name for h in plan.hosts if h.role == "worker"]
    gpu = gpu_hosts(plan)
    machine = {
        # The hosts share this machine's package database (installed by `make provision`) and
        # reach no registry: Python wheels and Maven artifacts come from the depot.
        "dlobd_system_packages": False,
        "dlobd_package_depot": str(depot),
        "dlobd_yarn_memory_fraction": round(min(0.25, YARN_MEMORY_SHARE / len(workers)), 3),
    }
    if plan.site == "paper-shape":
        # YARN is told the declared sizes, as on a real site: containers are placed by them
        # (nothing enforces them here: yarn_pmem_check and yarn_vmem_check are off)
        machine.update(dlobd_yarn_memory_fraction=PAPER_SHAPE["yarn_memory_fraction"],
                       dlobd_yarn_vcores_per_cpu=1, dlobd_emulated_size=True)
    hostvars = {}
    for h in plan.hosts:
        hostvars[h.name] = {
            "ansible_host": h.ethernet_address or h.address,
            "dlobd_cluster_address": h.address,
            # the same path on every host, as on a cluster: each host's own folder mounted there,
            # or one folder for all (shared_prefix)
            "dlobd_prefix": str(state_dir / STACK_MOUNT),
            **machine,
            "dlobd_emulated_namespace": h.name,
            **link_vars(plan),
        }
        if h.name in gpu:
            # no GPU and no CUDA toolkit in a namespace: hr_reduce builds for host buffers only
            hostvars[h.name]["hr_reduce_cuda"] = False
        if plan.site == "paper-shape":
            hostvars[h.name].update(
                dlobd_cluster_interface=h.interface, dlobd_ethernet_address=h.ethernet_address,
                dlobd_hardware={**PAPER_SHAPE["master" if h.role == "master" else "worker"],
                                "ethernet_gbps": PAPER_SHAPE["ethernet_gbps"]})
    site_vars = {}
    if plan.site == "paper-shape":
        # rehearsals place IPoIB points on the cluster interfaces (ib0, ib1), as a real site would,
        # and GPU points on the gpu group's workers, CPU processes in the GPUs' place
        site_vars["dlobd_rehearsal_standins"] = {
            "infiniband": (f"{'/'.join(sorted(PAPER_SHAPE['interface'].values()))} are veths of the emulated site "
                           "carrying TCP: IPoIB's addresses and interface names, no HCA"),
            "gpu": "CPU processes on the emulated site's workers of group gpu, which have no GPU"}
    return {"all": {
        "vars": {
            **site_vars,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(state_dir / "id_ed25519"),
            # The run's own known_hosts holds every host's key: no prompt, and no other host is
            # trusted without its key (StrictHostKeyChecking stays on).
            "ansible_ssh_common_args": (f"-o UserKnownHostsFile={state_dir / 'known_hosts'} "
                                        "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"),
            "ansible_python_interpreter": "/usr/bin/python3",
            "dlobd_emulated_run": plan.prefix,
        },
        "hosts": hostvars,
        "children": {
            "namenode": {"hosts": {n: None for n in master}},
            "resourcemanager": {"hosts": {n: None for n in master}},
            "workers": {"hosts": {n: None for n in workers}},
            "gpu": {"hosts": {n: None for n in gpu}},
        },
    }}


def ssh_client_config(state_dir: Path) -> str:
    """/etc/ssh/ssh_config inside the hosts: ssh between them trusts exactly the run's keys."""
    return "\n".join([
        "# ssh between the hosts of an emulated cluster: the run's key and known hosts only",
        "Host *",
        f"    IdentityFile {state_dir / 'id_ed25519'}",
        "    IdentitiesOnly yes",
        f"    UserKnownHostsFile {state_dir / 'known_hosts'}",
        "    StrictHostKeyChecking yes",
        "    BatchMode yes",
        "    User root",
    ]) + "\n"


def known_hosts_text(plan: Plan, hosts_dir: Path) -> str:
    """"<address>[,<Ethernet address>],<name> <key type> <key>" per host: the public key file
    minus its comment."""
    return "".join(
        f"{','.join(filter(None, (h.address, h.ethernet_address, h.name)))} "
        f"{' '.join((hosts_dir / h.name / 'ssh_host_ed25519_key.pub').read_text().split()[:2])}\n"
        for h in plan.hosts)


def inventory_head(plan: Plan, state_dir: Path) -> str:
    return (f"---\n# Generated by tests/cluster/emulated.py (make emulated-up) for emulated cluster {plan.prefix};\n"
            f"# removed by make emulated-down. Hosts are network namespaces on this machine, linked by\n"
            f"# {tier_label(plan.tier)}. State: {state_dir / STATE_NAME}\n")


def inventory_text(plan: Plan, state_dir: Path, depot: Path = DEFAULT_DEPOT, site_vars: dict | None = None) -> str:
    values = render_inventory(plan, state_dir, depot)
    values["all"]["vars"].update(site_vars or {})
    return inventory_head(plan, state_dir) + yaml.safe_dump(values,
                                                            sort_keys=False, width=200)


def relinked_inventory(inventory: dict, plan: Plan) -> dict:
    """The inventory of a running cluster with its hosts' link variables set to `plan`'s tier."""
    run = (inventory.get("all") or {}).get("vars", {}).get("dlobd_emulated_run")
    if run != plan.prefix:
        raise HarnessError(f"the inventory is for emulated cluster {run!r}, not {plan.prefix}: pass its --inventory")
    for hostvars in inventory["all"]["hosts"].values():
        hostvars.update(link_vars(plan))
    return inventory


def plan_of(state: State) -> Plan:
    data = state.data["plan"]
    return Plan(**{**data, "hosts": tuple(Host(**h) for h in data["hosts"])})


# ------------------------------------------------------------------ state file

class State:
    """The run's state file: the plan and every object made, each recorded before it is made."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    @classmethod
    def load(cls, state_dir: Path) -> State | None:
        path = state_dir / STATE_NAME
        if not path.exists():
            return None
        try:
            return cls(path, json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise HarnessError(f"state file {path} is not valid JSON ({exc})") from None

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n")
        tmp.replace(self.path)

    def add(self, kind: str, **fields) -> dict:
        item = {"kind": kind, **fields}
        self.data["made"].append(item)
        self.save()
        return item


def running_state(state_dir: Path) -> State:
    state = State.load(state_dir)
    if state is None:
        raise HarnessError(f"no emulated cluster: no {STATE_NAME} in {state_dir} (run `make emulated-up`)")
    return state


# ------------------------------------------------------------------ system commands

def log(msg: str) -> None:
    # progress on stderr: stdout stays free for the benchmark's `name: value` lines
    print(f"[emulated] {msg}", file=sys.stderr, flush=True)


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise HarnessError(f"`{' '.join(cmd)}` failed (exit {done.returncode}): {done.stderr.strip()}")
    return done


def ip_json(*args: str) -> list:
    return json.loads(sh("ip", "-j", *args).stdout or "[]")


def netns_exists(ns: str) -> bool:
    return ns in {entry["name"] for entry in ip_json("netns", "list")}


def link_exists(dev: str, ns: str | None = None) -> bool:
    cmd = ["ip", *(["-n", ns] if ns else []), "link", "show", "dev", dev]
    return sh(*cmd, check=False).returncode == 0


def root_conflicts(subnet: str) -> list[str]:
    addresses = [(f"{a['local']}/{a['prefixlen']}", dev["ifname"])
                 for dev in ip_json("-4", "addr", "show") for a in dev.get("addr_info", [])]
    routes = [(r["dst"], r.get("dev", "?")) for r in ip_json("-4", "route", "show", "table", "all")
              if r.get("type", "unicast") == "unicast"]
    return conflicts(subnet, addresses, routes)


def preflight(sshd: str, shaped: bool) -> None:
    if os.geteuid() != 0:
        raise HarnessError("not root: namespaces, veth pairs and a bridge need root (run as root)")
    for tool, package in [("ip", "iproute2"), ("ssh-keygen", "openssh-client"), ("unshare", "util-linux"),
                          *([("tc", "iproute2")] if shaped else [])]:
        if shutil.which(tool) is None:
            raise HarnessError(f"`{tool}` is missing: install Debian's {package}")
    if not (os.path.isabs(sshd) and os.access(sshd, os.X_OK)):
        raise HarnessError(f"sshd {sshd!r} is missing or not an executable absolute path "
                           "(Debian: apt-get install openssh-server)")
    if not os.access(SFTP_SERVER, os.X_OK):
        raise HarnessError(f"{SFTP_SERVER} is missing (Debian: apt-get install openssh-server)")


def process_alive(pid: int, create_time: float) -> psutil.Process | None:
    try:
        proc = psutil.Process(pid)
        # the same process, not a later one that got its pid
        return proc if abs(proc.create_time() - create_time) < 0.01 else None
    except psutil.NoSuchProcess:
        return None


def _gone(proc: psutil.Process) -> bool:
    # a zombie has exited; reaping it is its parent's (here often init's) business
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (alive := [p for p in procs if not _gone(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def stop_processes(procs: list[psutil.Process], timeout: float = 5.0) -> None:
    """SIGTERM, a bounded wait, then SIGKILL."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    for proc in _wait_gone(procs, timeout):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    if alive := _wait_gone(procs, timeout):
        raise HarnessError(f"processes {[p.pid for p in alive]} survived SIGKILL")


def namespace_processes(ns: str) -> list[psutil.Process]:
    pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(int(pid)))
        except psutil.NoSuchProcess:
            pass
    return procs


def stray_processes(state_dir: Path) -> list[psutil.Process]:
    """Live processes whose command line names the run's directory, but for this one and its
    parents (the `down` that asks)."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if (proc.pid not in mine and proc.info["status"] != psutil.STATUS_ZOMBIE
                and str(state_dir) in " ".join(proc.info["cmdline"] or [])):
            found.append(proc)
    return found


def tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    except OSError:
        return "(no log)"


# ------------------------------------------------------------------ up

def set_tier(dev: str, ns: str | None, tier: str) -> None:
    """One end of a link to `tier`: tbf at its rate, or no qdisc of ours when unshaped."""
    params = tbf_params(tier)
    where = ["-n", ns] if ns else []
    if params is None:
        sh("tc", *where, "qdisc", "del", "dev", dev, "root", check=False)
    else:
        sh("tc", *where, "qdisc", "replace", "dev", dev, "root", "tbf",
           "rate", params["rate"], "burst", str(params["burst"]), "latency", params["latency"])


def shape(state: State, dev: str, ns: str | None, tier: str) -> None:
    if tbf_params(tier) is None:
        return
    state.add("qdisc", dev=dev, netns=ns)
    set_tier(dev, ns, tier)


def make_bridge(state: State, bridge: str, address: str, subnet: str) -> None:
    """A bridge in the root namespace with the root's address on it (how Ansible reaches the hosts)."""
    state.add("link", dev=bridge)
    sh("ip", "link", "add", bridge, "type", "bridge")
    cidr = f"{address}/{ipaddress.ip_network(subnet).prefixlen}"
    state.add("address", dev=bridge, cidr=cidr, netns=None)
    sh("ip", "addr", "add", cidr, "dev", bridge)
    sh("ip", "link", "set", bridge, "up")


def join(state: State, host: Host, veth: str, inside: str, bridge: str, cidr: str, tier: str) -> None:
    """A veth pair from `bridge` into the host, named `inside` there, with the host's address on
    it, both ends shaped to `tier`."""
    state.add("link", dev=veth)
    sh("ip", "link", "add", veth, "type", "veth", "peer", "name", inside, "netns", host.name)
    sh("ip", "link", "set", veth, "master", bridge, "up")
    state.add("address", dev=inside, cidr=cidr, netns=host.name)
    sh("ip", "-n", host.name, "addr", "add", cidr, "dev", inside)
    sh("ip", "-n", host.name, "link", "set", inside, "up")
    # both directions: the bridge's end carries traffic to the host, the host's end traffic from it
    shape(state, veth, None, tier)
    shape(state, inside, host.name, tier)


def wait_for_sshd(plan: Plan, started: dict, state_dir: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(plan.hosts)
    while waiting:
        for host in list(waiting):
            popen = started[host.name]
            log_file = state_dir / "hosts" / host.name / "log" / "sshd.log"
            if popen.poll() is not None:
                raise HarnessError(f"host {host.name} ({host.address}): sshd exited with status "
                                   f"{popen.returncode} before listening; {log_file}: {tail(log_file)}")
            try:
                with socket.create_connection((host.address, 22), timeout=1) as conn:
                    if conn.recv(8).startswith(b"SSH-"):
                        waiting.remove(host)
            except OSError:
                pass
        if waiting and time.monotonic() > deadline:
            host = waiting[0]
            log_file = state_dir / "hosts" / host.name / "log" / "sshd.log"
            raise HarnessError(f"host {host.name} ({host.address}): sshd did not come up within {timeout:g} s; "
                               f"{log_file}: {tail(log_file)}")
        if waiting:
            time.sleep(0.05)


def up(state_dir: Path, plan: Plan, inventory: Path, sshd: str, sshd_timeout: float,
       depot: Path = DEFAULT_DEPOT, site_vars: dict | None = None) -> None:
    """Make the plan's hosts and write their inventory, with `site_vars` (e.g. a software
    profile's settings) among its variables for all hosts."""
    preflight(sshd, shaped=tbf_params(plan.tier) is not None or plan.management_bridge is not None)
    existing = State.load(state_dir)
    if existing is not None:
        raise HarnessError(f"{state_dir / STATE_NAME} exists: emulated cluster {existing.data['plan']['prefix']} "
                           "is up or half made; run `make emulated-down` first")
    if inventory.exists():
        raise HarnessError(f"inventory {inventory} exists (another emulated cluster?): run `make emulated-down` "
                           "for it first, or pass another --inventory")
    for option, subnet in (("--subnet", plan.subnet), ("--management-subnet", plan.management_subnet)):
        found = root_conflicts(subnet) if subnet else []
        if found:
            raise HarnessError(f"address plan {subnet} overlaps {'; '.join(found)}: choose another {option}")

    made_state_dir = not state_dir.exists()
    state_dir.mkdir(parents=True, exist_ok=True)
    state = State(state_dir / STATE_NAME, {"plan": asdict(plan), "label": tier_label(plan.tier),
                                           "state_dir_made": made_state_dir, "made": []})
    state.save()
    start = time.monotonic()
    log(f"making {len(plan.hosts)} hosts ({plan.prefix}) on {plan.subnet}, links: {tier_label(plan.tier)}"
        + (f", one prefix folder for all ({state_dir / STACK_MOUNT})" if plan.shared_prefix else ""))

    key = state_dir / "id_ed25519"
    for path in (key, key.with_suffix(".pub")):
        state.add("file", path=str(path))
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"dlobd-emulated-{plan.prefix}", "-f", str(key))
    authorized = state_dir / "authorized_keys"
    state.add("file", path=str(authorized))
    shutil.copyfile(key.with_suffix(".pub"), authorized)
    authorized.chmod(0o600)

    # /run/netns is made (and bind-mounted on itself) by the first `ip netns add`
    for path in (Path("/etc/netns"), Path("/run/sshd"), Path("/run/netns")):
        if not path.exists():
            state.add("shared_dir", path=str(path))
            path.mkdir(mode=0o755)

    make_bridge(state, plan.bridge, plan.bridge_address, plan.subnet)
    if plan.management_bridge:
        make_bridge(state, plan.management_bridge, plan.management_bridge_address, plan.management_subnet)

    etc_hosts = hosts_file(plan)
    for host in plan.hosts:
        state.add("netns", name=host.name)
        sh("ip", "netns", "add", host.name)
        netns_etc = Path("/etc/netns") / host.name
        state.add("dir", path=str(netns_etc))
        netns_etc.mkdir()
        (netns_etc / "hosts").write_text(etc_hosts)
        (netns_etc / "ssh").mkdir()
        (netns_etc / "ssh" / "ssh_config").write_text(ssh_client_config(state_dir))
        join(state, host, host.veth, host.interface, plan.bridge, f"{host.address}/{plan.prefixlen}", plan.tier)
        if host.management_veth:
            join(state, host, host.management_veth, "eth0", plan.management_bridge,
                 f"{host.ethernet_address}/{ipaddress.ip_network(plan.management_subnet).prefixlen}",
                 PAPER_SHAPE["ethernet_tier"])
        sh("ip", "-n", host.name, "link", "set", "lo", "up")

    hosts_dir = state_dir / "hosts"
    state.add("dir", path=str(hosts_dir))
    stack_mount = state_dir / STACK_MOUNT
    state.add("dir", path=str(stack_mount))
    stack_mount.mkdir()
    started = {}
    for host in plan.hosts:
        host_dir = hosts_dir / host.name
        for sub in ("log",) if plan.shared_prefix else ("log", "stack"):
            (host_dir / sub).mkdir(parents=True, exist_ok=True)
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host.name, "-f", str(host_dir / "ssh_host_ed25519_key"))
        config = host_dir / "sshd_config"
        config.write_text(sshd_config(host, host_dir, authorized))
        sh(sshd, "-t", "-f", str(config))
        log_file = host_dir / "log" / "sshd.log"
        # ip netns exec and unshare exec in place: the pid is sshd's. The UTS namespace gives the
        # host its own hostname; sessions inherit it, the namespace's /etc/hosts and ssh config,
        # and the host's stack folder on the common prefix path (ip netns exec's mount namespace
        # is a slave of the root's: the bind mount stays inside); a shared prefix has no mount.
        mount = [] if plan.shared_prefix else [str(host_dir / "stack"), str(stack_mount)]
        setup = 'hostname "$0"' + ("" if plan.shared_prefix else ' && mount --bind "$1" "$2" && shift 2')
        with log_file.open("ab") as err:  # a failed mount or hostname ends up there too
            popen = subprocess.Popen(
                ["ip", "netns", "exec", host.name, "unshare", "--uts", "sh", "-c", setup + ' && exec "$@"',
                 host.name, *mount, sshd, "-D", "-f", str(config), "-E", str(log_file)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            create_time = psutil.Process(popen.pid).create_time()
        except psutil.NoSuchProcess:
            create_time = 0.0
        state.add("process", pid=popen.pid, create_time=create_time, netns=host.name, what=f"sshd of {host.name}")
        started[host.name] = popen
    wait_for_sshd(plan, started, state_dir, sshd_timeout)

    known = state_dir / "known_hosts"
    state.add("file", path=str(known))
    known.write_text(known_hosts_text(plan, hosts_dir))
    state.add("file", path=str(inventory))
    inventory.parent.mkdir(parents=True, exist_ok=True)
    inventory.write_text(inventory_text(plan, state_dir, depot, site_vars))
    state.data["up_s"] = round(time.monotonic() - start, 3)
    state.save()
    for h in plan.hosts:
        group = " (group gpu, no GPU)" if h.name in gpu_hosts(plan) else ""
        ethernet = f", Ethernet {h.ethernet_address}" if h.ethernet_address else ""
        log(f"{h.role:6} {h.name} {h.address} on {h.interface}{ethernet}{group} sshd up, link {link_vars(plan)['dlobd_emulated_link']}")
    log(f"inventory {inventory}; up in {state.data['up_s']:.1f} s")


# ------------------------------------------------------------------ relink

def relink(state_dir: Path, value: str, inventory: Path) -> Plan:
    """Every link of a running cluster to another tier, and the inventory with it: the next
    `make emulated-provision` writes the new link into each host's dlobd-env.sh."""
    state = running_state(state_dir)
    if not inventory.is_file():
        raise HarnessError(f"inventory {inventory} is missing: pass the cluster's --inventory")
    tier, network = resolve_tier(value)
    running = plan_of(state)
    if running.site == "paper-shape":
        raise HarnessError("a paper-shape site keeps its links: the cluster links stand in for IPoIB, "
                           "the management network is its Ethernet")
    plan = replace(running, tier=tier, network=network)
    relinked = relinked_inventory(yaml.safe_load(inventory.read_text()), plan)
    shaped = {(i["dev"], i["netns"]) for i in state.data["made"] if i["kind"] == "qdisc"}
    for h in plan.hosts:
        for dev, ns in ((h.veth, None), (h.interface, h.name)):
            if (dev, ns) in shaped:
                set_tier(dev, ns, tier)
            else:
                shape(state, dev, ns, tier)
    state.data.update(plan=asdict(plan), label=tier_label(tier))
    state.save()
    inventory.write_text(inventory_head(plan, state_dir) + yaml.safe_dump(relinked, sort_keys=False, width=200))
    log(f"emulated cluster {plan.prefix}: every link now {tier_label(tier)}; "
        "`make emulated-provision` gives the hosts' dlobd-env.sh the new link")
    return plan


# ------------------------------------------------------------------ down

def remove(item: dict) -> None:
    kind = item["kind"]
    if kind == "process":
        proc = process_alive(item["pid"], item["create_time"])
        if proc is not None:
            stop_processes([proc])
    elif kind == "netns":
        if netns_exists(item["name"]):
            # everything running inside: sshd, its sessions and whatever they started
            stop_processes(namespace_processes(item["name"]))
            sh("ip", "netns", "delete", item["name"])
    elif kind == "qdisc":
        ns = item["netns"]
        if (ns is None or netns_exists(ns)) and link_exists(item["dev"], ns):
            sh("tc", *(["-n", ns] if ns else []), "qdisc", "del", "dev", item["dev"], "root", check=False)
    elif kind == "address":
        ns = item["netns"]
        if (ns is None or netns_exists(ns)) and link_exists(item["dev"], ns):
            sh("ip", *(["-n", ns] if ns else []), "addr", "del", item["cidr"], "dev", item["dev"], check=False)
    elif kind == "link":
        if link_exists(item["dev"]):
            sh("ip", "link", "delete", item["dev"])
    elif kind == "file":
        Path(item["path"]).unlink(missing_ok=True)
    elif kind == "dir":
        if Path(item["path"]).exists():
            shutil.rmtree(item["path"])
    elif kind == "shared_dir":
        # /etc/netns, /run/sshd, /run/netns: only when nothing else uses them any more
        path = Path(item["path"])
        sshd_running = any(p.info["name"] == "sshd" and p.info["status"] != psutil.STATUS_ZOMBIE
                           for p in psutil.process_iter(["name", "status"]))
        if path.exists() and not any(path.iterdir()) and not (path.name == "sshd" and sshd_running):
            # a bind mount on the same file system, which os.path.ismount does not see
            if any(part.mountpoint == str(path) for part in psutil.disk_partitions(all=True)):
                sh("umount", str(path))
            path.rmdir()
    else:
        raise HarnessError(f"unknown kind {kind!r} in the state file")


def down(state_dir: Path) -> None:
    if os.geteuid() != 0:
        raise HarnessError("not root: removing namespaces and links needs root")
    state = State.load(state_dir)
    if state is None:
        log(f"nothing to remove: no {STATE_NAME} in {state_dir}")
        return
    start = time.monotonic()
    prefix = state.data["plan"]["prefix"]
    made = state.data["made"]
    # a process `up` started but was killed before recording (its pid is known only once it
    # runs): its command line names the run's directory
    stop_processes(stray_processes(state_dir))
    # the recorded processes first, then everything else in reverse order of making
    order = [i for i in made if i["kind"] == "process"] + [i for i in reversed(made) if i["kind"] != "process"]
    failed = []
    for item in order:
        try:
            remove(item)
        except (HarnessError, OSError) as exc:
            failed.append((item, str(exc)))
    if failed:
        state.data["made"] = [item for item, _ in failed]
        state.save()
        what = "; ".join(f"{i['kind']} {i.get('name') or i.get('dev') or i.get('path') or i.get('pid')}: {why}"
                         for i, why in failed)
        raise HarnessError(f"could not remove: {what} (left in {state.path})")
    state.path.unlink()
    # a save that a kill cut short leaves its temporary file behind
    state.path.with_suffix(".tmp").unlink(missing_ok=True)
    if state.data.get("state_dir_made") and state_dir.exists() and not any(state_dir.iterdir()):
        state_dir.rmdir()
    log(f"removed emulated cluster {prefix} ({len(made)} objects, {state.data['label']}) "
        f"in {time.monotonic() - start:.1f} s")


# ------------------------------------------------------------------ exec

def host_command(state_dir: Path, host: str, command: list[str]) -> list[str]:
    """`command` run inside `host` (master, worker<N> or its full name): in the network, UTS and
    mount namespaces of its sshd, so it has the host's address, hostname, /etc/hosts and ssh
    config, as a session on that host would; the working directory stays the same."""
    state = running_state(state_dir)
    prefix = state.data["plan"]["prefix"]
    name = host if host.startswith(prefix) else f"{prefix}-{host}"
    sshds = [i for i in state.data["made"] if i["kind"] == "process" and i["netns"] == name]
    if not sshds:
        known = sorted(h["name"] for h in state.data["plan"]["hosts"])
        raise HarnessError(f"host {host!r} is not in emulated cluster {prefix} (hosts: {', '.join(known)})")
    if process_alive(sshds[0]["pid"], sshds[0]["create_time"]) is None:
        raise HarnessError(f"host {name}: its sshd (pid {sshds[0]['pid']}) is gone, so are its namespaces; "
                           "`make emulated-down` and `make emulated-up` make the cluster again")
    if not command:
        raise HarnessError("exec: no command given (… exec --host master -- COMMAND ...)")
    return ["nsenter", "-t", str(sshds[0]["pid"]), "-n", "-u", "-m", f"--wd={os.getcwd()}", "--", *command]


# ------------------------------------------------------------------ command line

def site_vars(files: list[Path]) -> dict:
    """The variables of the --vars files, later files over earlier ones; HarnessError naming a file
    that is not a YAML mapping."""
    merged = {}
    for path in files:
        try:
            values = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise HarnessError(f"--vars {path}: {exc}") from None
        if not isinstance(values, dict):
            raise HarnessError(f"--vars {path}: expected a mapping of variable to value, found {type(values).__name__}")
        merged.update(values)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True, help="the run's state: keys, host dirs, state.json")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="make the hosts, start their sshd, write the inventory")
    p_up.add_argument("--workers", type=int, default=3)
    p_up.add_argument("--subnet", default=DEFAULT_SUBNET, help="private IPv4 range of the hosts")
    p_up.add_argument("--tier", default=UNSHAPED,
                      help="link tier: eth-1g, eth-10g, unshaped, or a network axis value such as eth-1g-emulated")
    p_up.add_argument("--inventory", type=Path, default=DEFAULT_INVENTORY)
    p_up.add_argument("--sshd", default="/usr/sbin/sshd", help="absolute path of sshd")
    p_up.add_argument("--sshd-timeout", type=float, default=15.0, help="seconds every sshd gets to listen")
    p_up.add_argument("--run-id", help="6 hex digits (default: random)")
    p_up.add_argument("--depot", type=Path, default=DEFAULT_DEPOT,
                      help="where the controller keeps the wheels and Maven artifacts the hosts install from")
    p_up.add_argument("--shared-prefix", action="store_true",
                      help="one prefix folder every host sees (as on NFS or Lustre) instead of one per host")
    p_up.add_argument("--gpu-workers", type=int, default=0,
                      help="put the last N workers in group gpu (they have no GPU: CPU work stands in)")
    p_up.add_argument("--vars", type=Path, action="append", default=[],
                      help="a YAML mapping of variables for all hosts, e.g. a software profile's settings "
                           "(repeatable; later files win)")
    p_up.add_argument("--site", choices=SITES, default="plain",
                      help="paper-shape: a real site's node sizes, ResourceManager host, interface names, "
                           "management network and shared prefix (see the module's description)")
    p_up.add_argument("--management-subnet", default=DEFAULT_MANAGEMENT_SUBNET,
                      help="paper-shape: private IPv4 range of the management (Ethernet) network")
    p_exec = sub.add_parser("exec", help="run a command inside one host (default: the master)")
    p_exec.add_argument("--host", default="master", help="master, worker<N>, or the host's full name")
    p_exec.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its arguments")
    p_relink = sub.add_parser("relink", help="shape every link of the running cluster to another tier")
    p_relink.add_argument("--tier", required=True,
                          help="eth-1g, eth-10g, unshaped, or a network axis value such as eth-1g-emulated")
    p_relink.add_argument("--inventory", type=Path, default=DEFAULT_INVENTORY)
    sub.add_parser("down", help="remove everything the state file lists")
    args = parser.parse_args(argv)
    state_dir = args.state_dir.resolve()
    try:
        if args.command == "up":
            plan = make_plan(args.workers, args.subnet, args.tier, args.run_id, args.shared_prefix,
                             args.gpu_workers, args.site, args.management_subnet)
            try:
                up(state_dir, plan, args.inventory.resolve(), args.sshd, args.sshd_timeout,
                   args.depot.resolve(), site_vars(args.vars))
            except (HarnessError, OSError):
                if (state_dir / STATE_NAME).exists():
                    log(f"bring-up failed; what was made is listed in {state_dir / STATE_NAME}: "
                        "`make emulated-down` removes it")
                raise
        elif args.command == "exec":
            command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            argv = host_command(state_dir, args.host, command)
            return subprocess.run(argv).returncode
        elif args.command == "relink":
            relink(state_dir, args.tier, args.inventory.resolve())
        elif args.command == "down":
            down(state_dir)
    except (HarnessError, OSError) as exc:
        print(f"emulated cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
