"""The emulated multi-host harness for real: 1 master + 2 workers as network namespaces.

Runs tests/cluster/emulated.py as `make emulated-up/-down` do, into a state dir and an inventory
of the test's own, so a developer's emulated cluster is left alone; then site.yml over SSH on
hosts of its own with one worker's sshd down, which the preflight names before installing
anything. Provisioning the hosts whole is test_emulated_provision.py's (make test-emulated).
Needs root and Debian's openssh-server. Traffic goes only between the harness's own namespace addresses.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from conftest import EMULATED_TIER, EmulatedSite, emulated_harness, play_recap
from dlobd import ROOT

HARNESS = ROOT / "tests" / "cluster" / "emulated.py"
ANSIBLE = ROOT / ".venv" / "bin"
# A subnet of the test's own, clear of the default plan a developer's cluster may use.
SUBNET = "10.78.3.0/24"
# the cluster whose worker's sshd the provisioning test kills: unprovisioned, of its own
SSHD_DOWN_SUBNET = "10.78.7.0/24"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root"),
]

# Receives until EOF; prints the bytes and the seconds from the first byte to the last.
SINK = """
import socket, sys, time
srv = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
conn, _ = srv.accept()
n, first = 0, None
while chunk := conn.recv(1 << 20):
    first = first or time.monotonic()
    n += len(chunk)
print(n, time.monotonic() - first, flush=True)
"""
SOURCE = """
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2]))) as s:
    block = bytes(1 << 20)
    for _ in range(int(sys.argv[3])):
        s.sendall(block)
"""


def harness(state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HARNESS), "--state-dir", str(state_dir), *args],
                          capture_output=True, text=True, timeout=120)


def made(state: dict, kind: str) -> list[dict]:
    return [i for i in state["made"] if i["kind"] == kind]


def assert_all_gone(state: dict, state_dir: Path, inventory: Path) -> None:
    """Every namespace, link, address, process and file the state file listed no longer exists."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout)
    addrs = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True).stdout)
    prefix = state["plan"]["prefix"]
    assert prefix not in namespaces
    assert not [ln["ifname"] for ln in links if ln["ifname"].startswith(prefix)]
    local = {f"{a['local']}/{a['prefixlen']}" for dev in addrs for a in dev.get("addr_info", [])}
    assert not local & {i["cidr"] for i in made(state, "address")}
    for item in made(state, "process"):
        try:
            proc = psutil.Process(item["pid"])
            assert abs(proc.create_time() - item["create_time"]) > 0.01 or proc.status() == psutil.STATUS_ZOMBIE, item
        except psutil.NoSuchProcess:
            pass
    leftover = [p.pid for p in psutil.process_iter(["cmdline", "status"])
                if p.info["status"] != psutil.STATUS_ZOMBIE and str(state_dir) in " ".join(p.info["cmdline"] or [])]
    assert leftover == []
    for item in made(state, "file") + made(state, "dir"):
        assert not Path(item["path"]).exists(), item
    for item in made(state, "shared_dir"):
        assert not Path(item["path"]).exists(), item
    for ns in made(state, "netns"):
        assert not Path("/etc/netns", ns["name"]).exists()
    assert not inventory.exists()
    assert not state_dir.exists()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("emulated")
    state_dir, inventory = base / "run", base / "hosts.yml"
    start = time.monotonic()
    up = harness(state_dir, "up", "--workers", "2", "--tier", "eth-1g-emulated", "--subnet", SUBNET,
                 "--inventory", str(inventory))
    up_s = time.monotonic() - start
    state = json.loads((state_dir / "state.json").read_text()) if (state_dir / "state.json").exists() else None
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield {"state": state, "dir": state_dir, "inventory": inventory, "up": up, "up_s": up_s}
    finally:
        down = harness(state_dir, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        if state is not None:
            assert_all_gone(state, state_dir, inventory)
        again = harness(state_dir, "down")
        assert again.returncode == 0 and "nothing to remove" in again.stderr


def hosts(cluster) -> list[dict]:
    return cluster["state"]["plan"]["hosts"]


def ssh(cluster, address: str, command: str) -> subprocess.CompletedProcess:
    d = cluster["dir"]
    return subprocess.run(["ssh", "-i", str(d / "id_ed25519"), "-o", f"UserKnownHostsFile={d / 'known_hosts'}",
                           "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                           f"root@{address}", command], capture_output=True, text=True, timeout=30)


def test_bring_up_is_labelled_emulated_ethernet(cluster):
    state = cluster["state"]
    assert [h["role"] for h in hosts(cluster)] == ["master", "worker", "worker"]
    assert state["plan"]["tier"] == "eth-1g" and state["plan"]["network"] == "eth-1g-emulated"
    assert state["label"] == "emulated Ethernet eth-1g (veth + tbf 1000mbit)"
    assert "emulated Ethernet eth-1g" in cluster["up"].stderr
    assert cluster["up_s"] < 30


def test_each_host_has_its_address_hostname_and_names_over_ssh(cluster):
    names = {h["name"]: h["address"] for h in hosts(cluster)}
    for host in hosts(cluster):
        out = ssh(cluster, host["address"],
                  "hostname; ip -4 -o addr show dev eth0; ip -o link show up | wc -l; "
                  "ss -Hltn; getent hosts " + " ".join(names))
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == host["name"]
        assert f"inet {host['address']}/24" in lines[1]
        assert lines[2] == "2"   # lo and eth0, nothing else
        listening = [ln.split()[3] for ln in lines[3:] if ln.startswith("LISTEN")]
        assert listening == [f"{host['address']}:22"]
        resolved = {ln.split()[1]: ln.split()[0] for ln in lines[3 + len(listening):]}
        assert resolved == names


def test_inventory_parses_and_ansible_reaches_every_host(cluster):
    inv = str(cluster["inventory"])
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    listed = subprocess.run([str(ANSIBLE / "ansible-inventory"), "-i", inv, "--list"], env=env,
                            capture_output=True, text=True, check=True)
    data = json.loads(listed.stdout)
    workers = [h["name"] for h in hosts(cluster) if h["role"] == "worker"]
    assert sorted(data["workers"]["hosts"]) == workers
    assert all(data["_meta"]["hostvars"][w]["dlobd_emulated_tier"] == "eth-1g" for w in workers)
    ping = subprocess.run([str(ANSIBLE / "ansible"), "-i", inv, "-m", "ansible.builtin.ping", "all"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    for host in hosts(cluster):
        assert f"{host['name']} | SUCCESS" in ping.stdout


def transfer_gbit(src_ns: str, dst_ns: str, dst_address: str, mib: int) -> float:
    """Goodput of one TCP stream of `mib` MiB from namespace src_ns to dst_address in dst_ns."""
    port = "5201"
    sink = subprocess.Popen(["ip", "netns", "exec", dst_ns, sys.executable, "-c", SINK, dst_address, port],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "ready"
        subprocess.run(["ip", "netns", "exec", src_ns, sys.executable, "-c", SOURCE, dst_address, port, str(mib)],
                       check=True, timeout=60)
        received, seconds = sink.stdout.readline().split()
    finally:
        sink.kill()
        sink.wait()
    assert int(received) == mib << 20
    return int(received) * 8 / float(seconds) / 1e9


def test_eth_1g_tier_caps_a_real_transfer_near_1_gbit(cluster):
    _, w1, w2 = hosts(cluster)
    # 240 MiB: about 2 s at 1 Gbit/s
    gbit = transfer_gbit(w2["name"], w1["name"], w1["address"], 240)
    print(f"eth-1g emulated: {gbit:.3f} Gbit/s")
    # TCP goodput under a 1 Gbit/s line rate: a little below it, never above
    assert 0.80 < gbit < 1.01, gbit
    qdisc = subprocess.run(["tc", "qdisc", "show", "dev", w1["veth"]], capture_output=True, text=True).stdout
    assert "tbf" in qdisc and "rate 1Gbit" in qdisc


def test_unshaped_links_are_not_capped_at_1_gbit(tmp_path):
    """The control for the test above: without tbf the same transfer runs well above 1 Gbit/s."""
    state_dir, inventory = tmp_path / "run", tmp_path / "hosts.yml"
    up = harness(state_dir, "up", "--workers", "1", "--tier", "unshaped", "--subnet", "10.78.6.0/24",
                 "--inventory", str(inventory))
    state = json.loads((state_dir / "state.json").read_text())
    try:
        assert up.returncode == 0, up.stderr
        master, worker = state["plan"]["hosts"]
        gbit = transfer_gbit(master["name"], worker["name"], worker["address"], 480)
        print(f"unshaped veth: {gbit:.3f} Gbit/s")
        assert gbit > 1.3, gbit
        qdisc = subprocess.run(["tc", "qdisc", "show", "dev", worker["veth"]], capture_output=True, text=True).stdout
        assert "tbf" not in qdisc
        # the same cluster relinked: both ends of every link shaped, the inventory says so
        relink = harness(state_dir, "relink", "--tier", "eth-1g-emulated", "--inventory", str(inventory))
        assert relink.returncode == 0, relink.stderr
        state = json.loads((state_dir / "state.json").read_text())
        assert state["label"] == "emulated Ethernet eth-1g (veth + tbf 1000mbit)"
        for host in state["plan"]["hosts"]:
            for where in ([], ["-n", host["name"]]):
                dev = "eth0" if where else host["veth"]
                shown = subprocess.run(["tc", *where, "qdisc", "show", "dev", dev], capture_output=True,
                                       text=True).stdout
                assert "tbf" in shown and "rate 1Gbit" in shown, (dev, where, shown)
        hostvars = yaml.safe_load(inventory.read_text())["all"]["hosts"][worker["name"]]
        assert hostvars["dlobd_emulated_network"] == "eth-1g-emulated"
    finally:
        down = harness(state_dir, "down")
    assert down.returncode == 0, down.stderr
    assert_all_gone(state, state_dir, inventory)


def test_a_second_cluster_on_the_same_subnet_is_refused_naming_the_conflict(cluster, tmp_path):
    out = harness(tmp_path / "run", "up", "--workers", "1", "--subnet", SUBNET,
                  "--inventory", str(tmp_path / "hosts.yml"))
    bridge = cluster["state"]["plan"]["bridge"]
    assert out.returncode == 1
    assert f"address plan {SUBNET} overlaps address 10.78.3.254/24 on {bridge}" in out.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "hosts.yml").exists()


def test_a_worker_with_its_sshd_killed_is_named_unreachable(cluster):
    # last in the module: the fixture's teardown then runs with one sshd already gone
    victim = hosts(cluster)[2]
    # the listening sshd and the sessions Ansible keeps open (ControlPersist): sshd is down
    pids = subprocess.run(["ip", "netns", "pids", victim["name"]], capture_output=True, text=True).stdout.split()
    assert pids
    for pid in pids:
        os.kill(int(pid), signal.SIGKILL)
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    ping = subprocess.run([str(ANSIBLE / "ansible"), "-i", str(cluster["inventory"]), "-m", "ansible.builtin.ping",
                           "all"], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert ping.returncode != 0
    assert f"{victim['name']} | UNREACHABLE" in ping.stdout
    assert f"{hosts(cluster)[1]['name']} | SUCCESS" in ping.stdout


# sshd stand-ins that pass the config check (`-t`) and then fail to come up
SLOW_SSHD = '#!/bin/sh\n[ "$1" = -t ] && exec /usr/sbin/sshd "$@"\nsleep 60\nexec /usr/sbin/sshd "$@"\n'
DYING_SSHD = '#!/bin/sh\n[ "$1" = -t ] && exec /usr/sbin/sshd "$@"\necho "injected failure" >&2\nexit 3\n'


@pytest.mark.parametrize("script,reason", [
    (SLOW_SSHD, "sshd did not come up within 1 s"),
    (DYING_SSHD, "sshd exited with status 3 before listening"),
], ids=["slow-sshd", "dying-sshd"])
def test_teardown_after_a_failed_bring_up_removes_everything(tmp_path, script, reason):
    fake = tmp_path / "sshd"
    fake.write_text(script)
    fake.chmod(0o755)
    state_dir, inventory = tmp_path / "run", tmp_path / "hosts.yml"
    up = harness(state_dir, "up", "--workers", "2", "--subnet", "10.78.4.0/24", "--tier", "eth-10g",
                 "--inventory", str(inventory), "--sshd", str(fake), "--sshd-timeout", "1")
    state = json.loads((state_dir / "state.json").read_text())
    try:
        assert up.returncode == 1
        assert reason in up.stderr and state["plan"]["hosts"][0]["name"] in up.stderr
        assert "make emulated-down" in up.stderr
        # half made: the namespaces and links exist, the inventory was never written
        assert made(state, "netns") and made(state, "link") and made(state, "process")
        assert not inventory.exists()
    finally:
        down = harness(state_dir, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert_all_gone(state, state_dir, inventory)


def test_down_after_a_bring_up_killed_half_way(tmp_path):
    state_dir, inventory = tmp_path / "run", tmp_path / "hosts.yml"
    proc = subprocess.Popen([sys.executable, str(HARNESS), "--state-dir", str(state_dir), "up", "--workers", "2",
                             "--subnet", "10.78.5.0/24", "--inventory", str(inventory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # killed as soon as the first namespace is recorded
    state_file, state = state_dir / "state.json", None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        # the file is replaced atomically: it is either absent or whole
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state and made(state, "netns"):
            break
        time.sleep(0.002)
    proc.kill()
    proc.wait()
    try:
        state = json.loads(state_file.read_text())
        assert made(state, "netns"), state
    finally:
        down = harness(state_dir, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert_all_gone(state, state_dir, inventory)
    # also when the kill cut a save short
    assert not (state_dir / "state.tmp").exists()


def test_provisioning_names_a_worker_whose_sshd_is_down(tmp_path):
    # Hosts of its own, left unprovisioned: killing an sshd ends its host's namespaces, and the
    # preflight stops the play before anything would be installed.
    site = EmulatedSite(state_dir=tmp_path / "state", inventory=tmp_path / "hosts.yml", log_dir=tmp_path / "logs")
    site.log_dir.mkdir()
    emulated_harness.up(site.state_dir, emulated_harness.make_plan(2, SSHD_DOWN_SUBNET, EMULATED_TIER),
                        site.inventory, "/usr/sbin/sshd", sshd_timeout=15)
    try:
        worker = site.host("worker2")
        # the listener and every session (Ansible's persistent connections end with them)
        for proc in emulated_harness.namespace_processes(worker["name"]):
            try:
                if proc.name() == "sshd":
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        rc, out, _ = site.playbook("site.yml")
    finally:
        emulated_harness.down(site.state_dir)
    assert rc != 0
    assert re.search(rf"fatal: \[{worker['name']}\]: UNREACHABLE!", out), out[-3000:]
    assert play_recap(out)[worker["name"]]["unreachable"] == 1
    flat = " ".join(out.split())  # the callback wraps long messages
    assert f"host(s) {worker['name']} could not be reached ({worker['name']}: {worker['address']}:22)" in flat
    # the preflight stops the play before anything is installed on the others
    assert "TASK [node_basics" not in out, out[-3000:]
