"""The emulated multi-host harness without root: naming, address plan, tiers, inventory, errors."""

import dataclasses
import ipaddress
import json
import os
import subprocess
import sys

import pytest
import yaml

from cluster import emulated
from cluster.emulated import HarnessError
from dlobd import spec as dspec
from dlobd.cluster import capabilities, inventory, provenance

LINKS = emulated._links()


def test_names_are_run_specific_and_fit_interface_limits():
    plan = emulated.make_plan(workers=3, run_id="0a1b2c")
    assert [h.name for h in plan.hosts] == ["dle0a1b2c-master", "dle0a1b2c-worker1",
                                            "dle0a1b2c-worker2", "dle0a1b2c-worker3"]
    assert [h.role for h in plan.hosts] == ["master", "worker", "worker", "worker"]
    assert plan.bridge == "dle0a1b2c-br"
    big = emulated.make_plan(workers=250, run_id="0a1b2c")
    assert max(len(n) for n in [big.bridge, *(h.veth for h in big.hosts)]) <= 15
    assert len({h.veth for h in big.hosts}) == 251
    assert emulated.make_plan(1).prefix != emulated.make_plan(1).prefix


def test_address_plan_gives_every_host_its_own_address_in_the_subnet():
    plan = emulated.make_plan(workers=3, subnet="10.99.4.0/28", run_id="abcdef")
    addresses = [h.address for h in plan.hosts] + [plan.bridge_address]
    assert addresses == ["10.99.4.1", "10.99.4.2", "10.99.4.3", "10.99.4.4", "10.99.4.14"]
    net = ipaddress.ip_network("10.99.4.0/28")
    assert all(ipaddress.ip_address(a) in net for a in addresses)
    assert plan.prefixlen == 28


@pytest.mark.parametrize("kwargs,reason", [
    ({"workers": 0}, "at least one worker"),
    ({"workers": 2, "subnet": "10.0.0.0/30"}, "too few"),
    ({"workers": 2, "subnet": "8.8.8.0/24"}, "private IPv4"),
    ({"workers": 2, "subnet": "127.0.0.0/24"}, "private IPv4"),
    ({"workers": 2, "subnet": "fd00::/64"}, "private IPv4"),
    ({"workers": 2, "subnet": "10.77.0.300/24"}, "not an IPv4 network"),
    ({"workers": 2, "run_id": "XYZ"}, "6 lowercase hex"),
    ({"workers": 2, "tier": "ipoib"}, "unknown link tier 'ipoib'"),
])
def test_bad_plans_are_refused_with_the_reason(kwargs, reason):
    with pytest.raises(HarnessError, match=reason):
        emulated.make_plan(**kwargs)


def test_conflicts_name_the_overlapping_address_or_route():
    found = emulated.conflicts("10.77.0.0/24",
                               [("127.0.0.1/8", "lo"), ("10.77.0.9/16", "eth1"), ("fd00::2/64", "eth0")],
                               [("default", "eth0"), ("10.0.0.0/8", "tun0"), ("192.0.2.0/24", "eth0")])
    assert found == ["address 10.77.0.9/16 on eth1", "route 10.0.0.0/8 dev tun0"]
    assert emulated.conflicts("10.77.0.0/24", [("10.78.0.1/24", "eth1")], [("10.78.0.0/24", "eth1")]) == []


def test_every_emulated_network_value_maps_to_a_shaped_tier():
    emulated_values = [n for n, link in LINKS.items() if link.get("emulated")]
    assert emulated_values, "config/networks.yaml defines no emulated link"
    for value in emulated_values:
        tier = emulated.tier_of_network(value)
        assert tier in LINKS and not LINKS[tier].get("emulated")
        assert emulated.tbf_params(tier) is not None
    assert emulated.resolve_tier("eth-1g-emulated") == ("eth-1g", "eth-1g-emulated")
    assert emulated.resolve_tier("eth-10g") == ("eth-10g", "eth-10g-emulated")
    assert emulated.resolve_tier("unshaped") == ("unshaped", None)


def test_tier_mapping_follows_networks_yaml_not_a_table_of_its_own():
    links = {"eth-40g": {"transport": "tcp"}, "eth-40g-emulated": {"transport": "tcp", "emulated": True},
             "eth-1g": {"transport": "tcp"}, "loopback": {"transport": "tcp"}}
    with pytest.raises(HarnessError, match="no line rate for tier 'eth-40g'"):
        emulated.resolve_tier("eth-40g-emulated", links)
    with pytest.raises(HarnessError, match="not an emulated link"):
        emulated.tier_of_network("loopback", links)
    with pytest.raises(HarnessError, match="not defined"):
        emulated.tier_of_network("eth-7g-emulated", links)
    with pytest.raises(HarnessError, match="names no Ethernet link"):
        emulated.tier_of_network("fast-emulated", {"fast-emulated": {"emulated": True}})


def test_tier_to_tbf_parameters():
    assert emulated.tbf_params("unshaped") is None
    one, ten = emulated.tbf_params("eth-1g"), emulated.tbf_params("eth-10g")
    assert one == {"rate": "1000mbit", "burst": 125000, "latency": "20ms"}
    assert ten == {"rate": "10000mbit", "burst": 1250000, "latency": "20ms"}
    with pytest.raises(HarnessError, match="unknown link tier 'eth-100g'"):
        emulated.tbf_params("eth-100g")
    assert emulated.tier_label("eth-1g") == "emulated Ethernet eth-1g (veth + tbf 1000mbit)"
    assert "emulated Ethernet" in emulated.tier_label("unshaped")


def test_inventory_has_the_groups_the_playbooks_expect(tmp_path):
    plan = emulated.make_plan(workers=2, tier="eth-10g-emulated", run_id="123abc")
    text = emulated.inventory_text(plan, tmp_path, tmp_path / "depot")
    inv = yaml.safe_load(text)["all"]
    assert text.startswith("---\n")
    children = inv["children"]
    assert list(children["namenode"]["hosts"]) == ["dle123abc-master"]
    assert list(children["resourcemanager"]["hosts"]) == ["dle123abc-master"]
    assert list(children["workers"]["hosts"]) == ["dle123abc-worker1", "dle123abc-worker2"]
    assert children["gpu"]["hosts"] == {}
    assert inv["vars"]["ansible_user"] == "root"
    assert inv["vars"]["ansible_ssh_private_key_file"] == str(tmp_path / "id_ed25519")
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in inv["vars"]["ansible_ssh_common_args"]
    for host in plan.hosts:
        hv = inv["hosts"][host.name]
        assert hv["ansible_host"] == hv["dlobd_cluster_address"] == host.address
        assert hv["dlobd_emulated_tier"] == "eth-10g"
        assert hv["dlobd_emulated_network"] == "eth-10g-emulated"
        assert hv["dlobd_emulated_link"] == "emulated Ethernet eth-10g (veth + tbf 10000mbit)"
        assert hv["dlobd_prefix"] == str(tmp_path / "stack")
    # one machine: its packages are installed once, the depot replaces the registries, and the
    # two NodeManagers share the memory one gets on a single-host cluster
    for hv in inv["hosts"].values():
        assert hv["dlobd_system_packages"] is False
        assert hv["dlobd_package_depot"] == str(tmp_path / "depot")
        assert hv["dlobd_yarn_memory_fraction"] == 0.25
    three = yaml.safe_load(emulated.inventory_text(emulated.make_plan(workers=3, run_id="123abd"), tmp_path))
    assert three["all"]["hosts"]["dle123abd-worker3"]["dlobd_yarn_memory_fraction"] == 0.2


def test_relinking_changes_the_link_of_every_host_and_nothing_else(tmp_path):
    plan = emulated.make_plan(workers=2, tier="eth-1g", run_id="123abc")
    before = yaml.safe_load(emulated.inventory_text(plan, tmp_path, tmp_path / "depot"))
    faster = emulated.replace(plan, tier="eth-10g", network="eth-10g-emulated")
    after = emulated.relinked_inventory(yaml.safe_load(emulated.inventory_text(plan, tmp_path, tmp_path / "depot")),
                                        faster)
    assert after == yaml.safe_load(emulated.inventory_text(faster, tmp_path, tmp_path / "depot"))
    link_vars = {"dlobd_emulated_tier", "dlobd_emulated_network", "dlobd_emulated_link"}
    for name, hv in after["all"]["hosts"].items():
        assert hv["dlobd_emulated_link"] == "emulated Ethernet eth-10g (veth + tbf 10000mbit)"
        assert {k: v for k, v in hv.items() if k not in link_vars} == {
            k: v for k, v in before["all"]["hosts"][name].items() if k not in link_vars}
    other = emulated.make_plan(workers=2, tier="eth-1g", run_id="456def")
    with pytest.raises(emulated.HarnessError, match="inventory is for emulated cluster 'dle123abc', not dle456def"):
        emulated.relinked_inventory(after, other)


def test_hosts_ssh_to_each_other_with_the_runs_key_only(tmp_path):
    plan = emulated.make_plan(workers=1, run_id="bbbbbb")
    config = emulated.ssh_client_config(tmp_path)
    assert f"IdentityFile {tmp_path / 'id_ed25519'}" in config
    assert f"UserKnownHostsFile {tmp_path / 'known_hosts'}" in config
    assert "StrictHostKeyChecking yes" in config
    for host in plan.hosts:
        d = tmp_path / "hosts" / host.name
        d.mkdir(parents=True)
        (d / "ssh_host_ed25519_key.pub").write_text(f"ssh-ed25519 AAAAkey{host.name} {host.name}\n")
    lines = emulated.known_hosts_text(plan, tmp_path / "hosts").splitlines()
    # by address and by name, since the launchers ssh to either
    assert lines == ["10.77.0.1,dlebbbbbb-master ssh-ed25519 AAAAkeydlebbbbbb-master",
                     "10.77.0.2,dlebbbbbb-worker1 ssh-ed25519 AAAAkeydlebbbbbb-worker1"]


def test_exec_names_a_missing_cluster_or_host(tmp_path):
    with pytest.raises(emulated.HarnessError, match="no emulated cluster"):
        emulated.host_command(tmp_path, "master", ["true"])
    plan = emulated.make_plan(workers=1, run_id="cccccc")
    state = emulated.State(tmp_path / emulated.STATE_NAME, {"plan": dataclasses.asdict(plan), "made": []})
    state.add("process", pid=1, create_time=0.0, netns="dlecccccc-master", what="sshd")
    with pytest.raises(emulated.HarnessError, match="'worker7' is not in emulated cluster dlecccccc"):
        emulated.host_command(tmp_path, "worker7", ["true"])
    with pytest.raises(emulated.HarnessError, match="its sshd .* is gone"):
        emulated.host_command(tmp_path, "master", ["true"])


def test_inventory_parses_with_ansible(tmp_path):
    plan = emulated.make_plan(workers=3, run_id="456def")
    path = tmp_path / "hosts.yml"
    path.write_text(emulated.inventory_text(plan, tmp_path))
    out = subprocess.run([str(emulated.ROOT / ".venv" / "bin" / "ansible-inventory"), "-i", str(path), "--list"],
                         capture_output=True, text=True, check=True).stdout
    listed = json.loads(out)
    assert sorted(listed["workers"]["hosts"]) == [f"dle456def-worker{i}" for i in (1, 2, 3)]
    assert listed["_meta"]["hostvars"]["dle456def-master"]["ansible_host"] == "10.77.0.1"


def test_hosts_file_and_sshd_config(tmp_path):
    plan = emulated.make_plan(workers=1, run_id="aaaaaa")
    hosts = emulated.hosts_file(plan)
    assert "10.77.0.1\tdleaaaaaa-master\n" in hosts and "10.77.0.2\tdleaaaaaa-worker1\n" in hosts
    assert "127.0.0.1\tlocalhost" in hosts
    config = emulated.sshd_config(plan.hosts[1], tmp_path, tmp_path / "authorized_keys")
    assert "ListenAddress 10.77.0.2:22\n" in config
    assert "UsePAM no\n" in config
    assert f"Subsystem sftp {emulated.SFTP_SERVER}\n" in config
    assert f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\n" in config


def test_command_line_errors_name_the_argument(tmp_path):
    script = emulated.ROOT / "tests" / "cluster" / "emulated.py"
    done = subprocess.run([sys.executable, str(script), "--state-dir", str(tmp_path), "up", "--tier", "rdma"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert "unknown link tier 'rdma'" in done.stderr
    done = subprocess.run([sys.executable, str(script), "--state-dir", str(tmp_path), "up", "--workers", "x"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--workers" in done.stderr
    # nothing to tear down is not an error (down is idempotent); nothing was made
    if emulated.os.geteuid() == 0:
        done = subprocess.run([sys.executable, str(script), "--state-dir", str(tmp_path), "down"],
                              capture_output=True, text=True)
        assert done.returncode == 0 and "nothing to remove" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_state_file_records_before_making(tmp_path):
    state = emulated.State(tmp_path / "state.json", {"plan": {}, "made": []})
    state.add("netns", name="dle000000-master")
    reloaded = emulated.State.load(tmp_path)
    assert reloaded.data["made"] == [{"kind": "netns", "name": "dle000000-master"}]
    (tmp_path / "state.json").write_text("{broken")
    with pytest.raises(HarnessError, match="not valid JSON"):
        emulated.State.load(tmp_path)


def test_preflight_names_what_is_missing(monkeypatch, tmp_path):
    path = emulated.os.environ["PATH"]
    monkeypatch.setattr(emulated.os, "geteuid", lambda: 1000)
    with pytest.raises(HarnessError, match="not root"):
        emulated.preflight("/usr/sbin/sshd", shaped=False)
    monkeypatch.setattr(emulated.os, "geteuid", lambda: 0)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match="`ip` is missing: install Debian's iproute2"):
        emulated.preflight("/usr/sbin/sshd", shaped=False)
    monkeypatch.setenv("PATH", path)
    with pytest.raises(HarnessError, match="sshd '/nowhere/sshd' is missing .*apt-get install openssh-server"):
        emulated.preflight("/nowhere/sshd", shaped=True)
    with pytest.raises(HarnessError, match="not an executable absolute path"):
        emulated.preflight("sshd", shaped=True)


def test_make_gives_a_prefix_to_the_playbooks_only_when_one_is_asked_for():
    """Each emulated host has its prefix in the inventory; `-e dlobd_prefix` would override it."""
    def dry_run(*args, env=None):
        return subprocess.run(["make", "-n", *args], capture_output=True, text=True, check=True, cwd=emulated.ROOT,
                              env={k: v for k, v in os.environ.items() if k != "DLOBD_PREFIX"} | (env or {})).stdout

    assert "dlobd_prefix" not in dry_run("provision")
    assert "dlobd_prefix" not in dry_run("emulated-provision")
    assert "-e dlobd_prefix=/opt/stack " in dry_run("provision", "DLOBD_PREFIX=/opt/stack")
    assert "-e dlobd_prefix=/opt/stack " in dry_run("cluster-up", env={"DLOBD_PREFIX": "/opt/stack"})


def test_a_shared_prefix_is_asked_for_by_make_and_kept_in_the_run_s_plan(tmp_path):
    """SHARED_PREFIX=1: one prefix folder every host sees, no per-host mount. make passes it on,
    the run's state keeps it (a state from before it: a folder per host)."""
    def dry_run(*args):
        return subprocess.run(["make", "-n", *args], capture_output=True, text=True, check=True, cwd=emulated.ROOT).stdout

    assert "--shared-prefix" not in dry_run("emulated-up") + dry_run("bench-emulated")
    assert "--subnet 10.77.0.0/24 --shared-prefix\n" in dry_run("emulated-up", "SHARED_PREFIX=1")
    assert "benchmarks/emulated/bench.py --shared-prefix\n" in dry_run("bench-emulated", "SHARED_PREFIX=1")
    plan = emulated.make_plan(workers=2, run_id="123abc", shared_prefix=True)
    state = emulated.State(tmp_path / "state.json", {"plan": emulated.asdict(plan), "made": []})
    state.save()
    assert emulated.plan_of(emulated.State.load(tmp_path)) == plan
    del state.data["plan"]["shared_prefix"]
    assert emulated.plan_of(state).shared_prefix is False


def test_gpu_workers_are_the_last_workers_in_group_gpu_without_cuda(tmp_path):
    plan = emulated.make_plan(workers=3, run_id="123abc", gpu_workers=1)
    inv = yaml.safe_load(emulated.inventory_text(plan, tmp_path))["all"]
    assert list(inv["children"]["gpu"]["hosts"]) == ["dle123abc-worker3"]
    # a namespace has no CUDA toolkit: the gpu group's hr_reduce is built for host buffers
    assert {name: hv.get("hr_reduce_cuda") for name, hv in inv["hosts"].items()} == {
        "dle123abc-master": None, "dle123abc-worker1": None, "dle123abc-worker2": None,
        "dle123abc-worker3": False}
    assert emulated.plan_of(emulated.State(tmp_path / "state.json", {"plan": emulated.asdict(plan)})) == plan
    for bad in (-1, 4):
        with pytest.raises(emulated.HarnessError, match=rf"--gpu-workers {bad}: between 0 and the 3 workers"):
            emulated.make_plan(workers=3, gpu_workers=bad)
    made = subprocess.run(["make", "-n", "emulated-up", "EMULATED_GPU_WORKERS=1"], capture_output=True, text=True,
                          check=True, cwd=emulated.ROOT).stdout
    assert " up --site plain --workers 3 --gpu-workers 1 --tier " in made


def test_a_paper_shape_site_is_laid_out_like_a_real_one(tmp_path):
    """--site paper-shape: the gpu workers' cluster interface is ib1, the others' ib0; every host
    has an Ethernet address on a management network of its own, which Ansible uses; every host
    declares a real site's size and the 10 Gb/s its veth reports; one prefix folder for all."""
    plan = emulated.make_plan(workers=3, run_id="123abc", gpu_workers=1, site="paper-shape")
    assert plan.shared_prefix and plan.management_bridge == "dle123abc-mg"
    assert [(h.interface, h.address, h.ethernet_address, h.management_veth) for h in plan.hosts] == [
        ("ib0", "10.77.0.1", "10.78.0.1", "dle123abc-m0"), ("ib0", "10.77.0.2", "10.78.0.2", "dle123abc-m1"),
        ("ib0", "10.77.0.3", "10.78.0.3", "dle123abc-m2"), ("ib1", "10.77.0.4", "10.78.0.4", "dle123abc-m3")]
    inv = yaml.safe_load(emulated.inventory_text(plan, tmp_path))["all"]
    master, worker, gpu = (inv["hosts"][f"dle123abc-{n}"] for n in ("master", "worker1", "worker3"))
    assert (master["ansible_host"], master["dlobd_cluster_address"], master["dlobd_ethernet_address"]) == (
        "10.78.0.1", "10.77.0.1", "10.78.0.1")
    assert (worker["dlobd_cluster_interface"], gpu["dlobd_cluster_interface"]) == ("ib0", "ib1")
    assert master["dlobd_hardware"] == {"cores": 16, "memory_gb": 32, "ethernet_gbps": 10}
    assert worker["dlobd_hardware"] == gpu["dlobd_hardware"] == {"cores": 48, "memory_gb": 64, "ethernet_gbps": 10}
    assert all(hv["dlobd_emulated_size"] and hv["dlobd_yarn_memory_fraction"] == 0.75 for hv in inv["hosts"].values())
    assert "standing in for IPoIB" in worker["dlobd_emulated_link"] and "eth-10g" in worker["dlobd_emulated_link"]
    # what its rehearsals may count as IPoIB (the veths named ib0/ib1, never an HCA) and as GPUs
    assert inv["vars"]["dlobd_rehearsal_standins"] == {
        "infiniband": "ib0/ib1 are veths of the emulated site carrying TCP: IPoIB's addresses and interface names, no HCA",
        "gpu": "CPU processes on the emulated site's workers of group gpu, which have no GPU"}
    config = emulated.sshd_config(plan.hosts[1], tmp_path, tmp_path / "keys")
    assert "ListenAddress 10.77.0.2:22\nListenAddress 10.78.0.2:22\n" in config
    assert emulated.plan_of(emulated.State(tmp_path / "state.json", {"plan": emulated.asdict(plan)})) == plan


def test_a_rehearsal_on_the_paper_shape_site_counts_its_gpu_group_for_tfos_alone(tmp_path):
    """The paper-shape site declares no GPU. A rehearsal of TensorFlowOnSpark counts the CPUs of
    its gpu group in their place, as many on a worker as a point puts on a node, and says so; a
    rehearsal of another stack and an ordinary run do not. Of Fig. 5(b)'s IPoIB points, those of
    at most 3 nodes fit its 3 gpu workers (cifar10: 2 TF nodes a node, the parameter server among them)."""
    plan = emulated.make_plan(workers=4, run_id="123abc", gpu_workers=3, site="paper-shape")
    path = tmp_path / "hosts.yml"
    path.write_text(emulated.inventory_text(plan, tmp_path))
    cluster = inventory.load(path)
    fig5b = dspec.load_all(emulated.ROOT)["dlobd-fig5b"]
    scale = dspec.filled(fig5b.scale("paper"))
    ipoib = {(p["workload"], p["gpus"]): p for _, p in fig5b.points("paper") if p["network"] == "ipoib"}
    with provenance.inventory_in_use(cluster):
        ordinary = capabilities.missing(["gpu"]), capabilities.size_missing(scale, ipoib["cifar10", 2], cluster)
        with capabilities.rehearsing("caffeonspark") as other:
            elsewhere = capabilities.missing(["gpu"])
        with capabilities.rehearsing("tensorflowonspark") as used:
            counted = capabilities.missing(["gpu"])
            sizes = {key: capabilities.size_missing(scale, point, cluster) for key, point in ipoib.items()}
    lacking = "needs gpu: no host of group gpu declares GPUs (dlobd_hardware.gpus)"
    assert ordinary == ([lacking], ["needs 2 worker nodes with 2 GPU(s) each: the inventory declares 0 (none)",
                                    "needs 2 GPUs: the inventory's workers declare 0"])
    assert (elsewhere, other) == ([lacking], {})
    assert counted == [] and used == {"gpu": "CPU processes on the emulated site's workers of group gpu, "
                                             "which have no GPU"}
    assert sorted(key for key, why in sizes.items() if not why) == [("cifar10", 2), ("cifar10", 4), ("mnist", 2)]
    gpu = ", ".join(emulated.gpu_hosts(plan))
    assert sizes["cifar10", 8] == ["needs 5 worker nodes: the inventory has 4 in group workers",
                                   f"needs 5 worker nodes with 2 GPU(s) each: the inventory has 3 ({gpu}) in group "
                                   "gpu, where CPU processes stand in",
                                   "needs 8 GPUs: the inventory's workers have 6 in group gpu, where CPU processes "
                                   "stand in"]


@pytest.mark.parametrize("kwargs, reason", [
    ({"gpu_workers": 0}, "some workers but not all of the 3 in group gpu"),
    ({"gpu_workers": 3}, "some workers but not all of the 3 in group gpu"),
    ({"gpu_workers": 1, "tier": "eth-1g"}, "the cluster links stand in for IPoIB, unshaped"),
    ({"gpu_workers": 1, "management_subnet": "10.77.0.0/25"}, "overlaps --subnet 10.77.0.0/24"),
    ({"gpu_workers": 1, "management_subnet": "8.8.8.0/24"}, "--management-subnet 8.8.8.0/24: must be a private"),
])
def test_a_paper_shape_site_that_cannot_be_made_is_refused(kwargs, reason):
    with pytest.raises(HarnessError, match=reason):
        emulated.make_plan(workers=3, site="paper-shape", **kwargs)


def test_the_paper_scale_on_a_paper_shape_site_passes_the_check_and_sizes_from_its_declarations(tmp_path):
    """The dry run of the paper scale on the paper-shape inventory (with the paper profile, which
    those points need): YARN's NodeManagers are the declared 48 cores and 64 GB x 0.75, the points
    of the management network's 10 Gb/s run over its addresses, those of 1 Gb/s are refused naming
    each worker's rate, and `--check` accepts every command."""
    from dlobd.cluster import inventory

    plan = emulated.make_plan(workers=3, run_id="123abc", gpu_workers=1, site="paper-shape")
    values = emulated.render_inventory(plan, tmp_path)
    values["all"]["vars"]["dlobd_profile"] = "paper"
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(values))
    cluster = inventory.load(path)
    assert {k: v for k, v in cluster.settings.items() if k.startswith("DLOBD_YARN_")} == {
        "DLOBD_YARN_MEMORY_MB": "49152", "DLOBD_YARN_VCORES": "48"}
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(path),
                          "--runs", str(tmp_path / "runs"), "--check", "--experiment", "rdmatf-fig1",
                          "--experiment", "tfgrpc-fig9"],
                         capture_output=True, text=True, cwd=emulated.ROOT, timeout=600)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("check: every command passes"), out.stdout[-3000:]
    lines = out.stdout.splitlines()
    points = {line: lines[i + 1] for i, line in enumerate(lines[:-1]) if line.endswith(":") and " " in line}
    assert "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new 10.78.0.4 " in points[
        "tfgrpc-fig9 network-eth-10g_payload-scheme-uniform:"]
    assert points["rdmatf-fig1 network-eth-1g_workers-2:"].startswith(
        "  not runnable: network eth-1g: its points need a 1 Gb/s Ethernet link on every worker; "
        "dle123abc-worker1 declares 10 Gb/s")


def test_a_rehearsal_on_a_paper_shape_site_places_ipoib_points_on_its_stand_in_and_says_so(tmp_path):
    """The site's IPoIB stand-in counts for a rehearsal (dry-run --rehearse) and for nothing else:
    the ordinary dry run leaves rdmatf-fig5's IPoIB point not runnable, the rehearsal gives it its
    command over the workers' ib0 addresses with the stand-in named; its RDMA point stays out."""
    plan = emulated.make_plan(workers=3, run_id="123abc", gpu_workers=1, site="paper-shape")
    values = emulated.render_inventory(plan, tmp_path)
    values["all"]["vars"]["dlobd_profile"] = "paper"
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(values))

    def dry_run(*extra):
        out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(path),
                              "--runs", str(tmp_path / "runs"), "--check", "--experiment", "rdmatf-fig5", *extra],
                             capture_output=True, text=True, cwd=emulated.ROOT, timeout=600)
        assert out.returncode == 0 and out.stdout.rstrip().endswith("check: every command passes"), out.stdout[-3000:]
        lines = out.stdout.splitlines()
        return {line: lines[i + 1:i + 4] for i, line in enumerate(lines) if line.startswith("rdmatf-fig5 ")}

    ordinary, rehearsal = dry_run(), dry_run("--rehearse")
    assert ordinary["rdmatf-fig5 network-ipoib:"][0].startswith("  not runnable: needs infiniband: worker(s) ")
    command, cut, standing_in = rehearsal["rdmatf-fig5 network-ipoib:"]
    assert command.startswith("  $ ") and cut == "    rehearsal, the work cut: steps 300 -> 10"
    assert standing_in == ("    standing in: infiniband: ib0/ib1 are veths of the emulated site carrying TCP: "
                           "IPoIB's addresses and interface names, no HCA")
    assert rehearsal["rdmatf-fig5 network-rdma:"][0].startswith("  not runnable: needs rdma: worker(s) ")


def test_site_vars_join_the_inventory_for_all_hosts_and_a_bad_file_is_named(tmp_path):
    """`up --vars FILE` (e.g. a software profile's settings): each file's mapping among all hosts'
    variables, later files over earlier ones; a file that is no mapping is refused by name."""
    profile, image = tmp_path / "profile.yml", tmp_path / "image.yml"
    profile.write_text("dlobd_profile: paper\ndlobd_install_method: registry\n")
    image.write_text("dlobd_install_method: apptainer\napptainer_image: /images/paper.sif\n")
    plan = emulated.make_plan(workers=2, run_id="123abc")
    values = yaml.safe_load(emulated.inventory_text(plan, tmp_path, site_vars=emulated.site_vars([profile, image])))
    assert {k: values["all"]["vars"][k] for k in ("dlobd_profile", "dlobd_install_method", "apptainer_image")} == {
        "dlobd_profile": "paper", "dlobd_install_method": "apptainer", "apptainer_image": "/images/paper.sif"}
    (tmp_path / "list.yml").write_text("- dlobd_profile\n")
    with pytest.raises(HarnessError, match=r"--vars .*list.yml: expected a mapping of variable to value, found list"):
        emulated.site_vars([tmp_path / "list.yml"])
    with pytest.raises(HarnessError, match=r"--vars .*absent.yml: \[Errno 2\]"):
        emulated.site_vars([tmp_path / "absent.yml"])


def test_a_paper_image_site_has_no_mpi_where_its_image_leaves_it_out(tmp_path):
    """The paper profile from containers/paper-tfos-bigdl.def's image (the apptainer method): its
    build skips the role mpi, so the MPI points are not runnable on that site, with the reason,
    while its TF-gRPC-Bench and native TensorFlow points run (a rehearsal, on the IPoIB stand-in)."""
    plan = emulated.make_plan(workers=3, run_id="123abc", gpu_workers=1, site="paper-shape")
    image = tmp_path / "paper-tfos-bigdl.sif"
    image.write_bytes(b"")
    vars_file = emulated.ROOT / "containers/paper-tfos-bigdl.vars.yml"
    values = emulated.render_inventory(plan, tmp_path)
    values["all"]["vars"].update(yaml.safe_load(vars_file.read_text()), dlobd_install_method="apptainer",
                                 apptainer_image=str(image))
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(values))
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(path),
                          "--runs", str(tmp_path / "runs"), "--check", "--rehearse", "--experiment", "tfgrpc-fig9",
                          "--experiment", "rdmatf-fig5", "--experiment", "scaffe-fig13"], capture_output=True, text=True, cwd=emulated.ROOT, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    after = {line: lines[i + 1] for i, line in enumerate(lines[:-1]) if line.endswith(":") and " " in line}
    assert after["tfgrpc-fig9 network-eth-10g_payload-scheme-uniform:"].startswith("  $ ")
    assert ("needs mpi: the image of containers/paper-tfos-bigdl.def leaves MPI (and hr_reduce) out (its build skips "
            "the role's tag mpi)") in after["scaffe-fig13 design-sc-b:"]
    assert after["rdmatf-fig5 network-ipoib:"].startswith("  $ ")
