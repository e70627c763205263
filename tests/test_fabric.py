"""The fabric detector (dlobd/cluster/fabric.py) on fake sysfs trees and on command outputs.

No InfiniBand HCA or GPU is on the machines these tests run on, so the trees are built in
tmp_path in the layout the kernel gives /sys/class/infiniband and /sys/class/net (ports/<n>/
{state,phys_state,rate,link_layer,gids/0,gid_attrs/ndevs/0}, an IPoIB netdev of type 32 whose
20-byte address carries the port GID), and the commands are small scripts printing text in the
tools' own output formats. Those texts are written here, not captured from a real HCA or GPU:

- `ibv_devinfo`: the lines print_hca_cap() prints in rdma-core's libibverbs/examples/devinfo.c
  (`hca_id:\t...`, `\t\tport:\t1`, `\t\t\tstate:\t\t\tPORT_ACTIVE (4)`, `link_layer:`);
- `ibstat`: ca_dump()/port_dump() of rdma-core's infiniband-diags/ibstat.c (`CA 'mlx4_0'`,
  `\tPort 1:`, `\t\tState: Active`, `\t\tRate: 56`, `\t\tLink layer: InfiniBand`);
- `nvidia-smi`: the CSV its man page (nvidia-smi(1)) documents for
  `--query-gpu=... --format=csv,noheader,nounits`, the `CUDA Version:` of its banner, and the
  GPU/HCA matrix of `nvidia-smi topo -m` with the legend that page describes;
- `ip -j -4 addr show`: iproute2's JSON (ifname, addr_info[].family/local).
"""

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from dlobd.cluster import fabric

IB_GID = "fe80:0000:0000:0000:248a:0703:0049:d4f0"
# an IPoIB hardware address: 4 bytes of flags and QPN, then the 16-byte port GID
IB_ADDRESS = "80:00:02:08:fe:80:00:00:00:00:00:00:24:8a:07:03:00:49:d4:f0"


def port(sysfs: Path, device: str, n: int, state: str, rate: str, layer: str, gid: str | None = None,
         roce_netdev: str | None = None, phys: str = "5: LinkUp") -> None:
    d = sysfs / "class/infiniband" / device / "ports" / str(n)
    (d / "gids").mkdir(parents=True)
    (d / "state").write_text(state + "\n")
    (d / "phys_state").write_text(phys + "\n")
    (d / "rate").write_text(rate + "\n")
    (d / "link_layer").write_text(layer + "\n")
    (d / "gids" / "0").write_text((gid or "0000:0000:0000:0000:0000:0000:0000:0000") + "\n")
    if roce_netdev:
        (d / "gid_attrs/ndevs").mkdir(parents=True)
        (d / "gid_attrs/ndevs/0").write_text(roce_netdev + "\n")
    (sysfs / "class/infiniband" / device / "hca_type").write_text("MT4115\n")
    (sysfs / "class/infiniband" / device / "fw_ver").write_text("12.28.2006\n")


def netdev(sysfs: Path, name: str, kind: str, address: str) -> None:
    d = sysfs / "class/net" / name
    d.mkdir(parents=True)
    (d / "type").write_text(kind + "\n")
    (d / "address").write_text(address + "\n")


def command(tmp_path: Path, name: str, script: str) -> str:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def printing(tmp_path: Path, name: str, text: str) -> str:
    """A command named `name` that prints `text`."""
    (tmp_path / f"{name}.out").write_text(text)
    return command(tmp_path, name, f"cat {tmp_path / name}.out\n")


def ip_command(tmp_path: Path, addresses: dict) -> str:
    doc = [{"ifindex": i + 2, "ifname": name, "addr_info": [
        {"family": "inet", "local": a, "prefixlen": 24} for a in addrs]}
        for i, (name, addrs) in enumerate(addresses.items())]
    return printing(tmp_path, "ip", json.dumps(doc))


NO_COMMANDS = fabric.Tools()


def test_an_active_edr_port_with_its_ipoib_interface_and_address(tmp_path):
    sysfs = tmp_path / "sys"
    port(sysfs, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "InfiniBand", gid=IB_GID)
    netdev(sysfs, "ib0", fabric.IPOIB_TYPE, IB_ADDRESS)
    netdev(sysfs, "eno1", "1", "0c:c4:7a:00:00:01")
    tools = fabric.Tools(ip=ip_command(tmp_path, {"eno1": ["10.10.0.2"], "ib0": ["192.168.100.2"]}))
    fp = fabric.detect(sysfs, tools, host="node02")
    [hca] = fp["infiniband"]["hcas"]
    assert (hca["device"], hca["kind"], hca["hca_type"], hca["fw_ver"]) == ("mlx5_0", "mlx5", "MT4115", "12.28.2006")
    assert hca["ports"] == [{"port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 100.0,
                             "rate": "100 Gb/sec (4X EDR)", "link_layer": "InfiniBand", "netdev": "ib0",
                             "ipv4": ["192.168.100.2"]}]
    assert "none_because" not in fp["infiniband"]
    assert fp["summary"] == ("mlx5_0 port 1 ACTIVE 100 Gb/s InfiniBand, ib0 192.168.100.2; "
                             "no GPU")
    expected = {"hca": "mlx5", "ib_rate_gbps": 100, "link_layer": "InfiniBand", "gpus": 0}
    assert fabric.check(fp, expected, ["ipoib", "rdma"], LINKS, "node02") == []


def test_a_roce_port_names_its_ethernet_netdev(tmp_path):
    sysfs = tmp_path / "sys"
    port(sysfs, "mlx5_1", 1, "4: ACTIVE", "25 Gb/sec (1X EDR)", "Ethernet", roce_netdev="enp59s0f1")
    fp = fabric.detect(sysfs, fabric.Tools(ip=ip_command(tmp_path, {"enp59s0f1": ["10.0.5.7"]})))
    p = fp["infiniband"]["hcas"][0]["ports"][0]
    assert (p["link_layer"], p["netdev"], p["ipv4"], p["rate_gbps"]) == ("Ethernet", "enp59s0f1", ["10.0.5.7"], 25.0)
    assert "25 Gb/s RoCE, enp59s0f1 10.0.5.7" in fp["summary"]
    assert fabric.check(fp, {"link_layer": "RoCE"}, ["rdma"], LINKS, "h") == []
    assert fabric.check(fp, {"link_layer": "InfiniBand"}, [], LINKS, "h") == [
        "h: dlobd_hardware.link_layer: expected InfiniBand on an ACTIVE port, "
        "found mlx5_1 port 1 ACTIVE 25 Gb/s Ethernet"]


def test_a_down_port_counts_for_nothing(tmp_path):
    sysfs = tmp_path / "sys"
    port(sysfs, "mlx4_0", 1, "1: DOWN", "10 Gb/sec (4X SDR)", "InfiniBand", phys="2: Polling")
    fp = fabric.detect(sysfs, NO_COMMANDS, host="node05")
    assert fp["infiniband"]["hcas"][0]["ports"][0]["state"] == "DOWN"
    assert fp["summary"].startswith("mlx4_0 port 1 DOWN 10 Gb/s InfiniBand")
    # the HCA is there, so hca holds; its rate and the networks need an ACTIVE port
    assert fabric.check(fp, {"hca": "mlx4", "ib_rate_gbps": 10}, ["rdma"], LINKS, "node05") == [
        "node05: dlobd_hardware.ib_rate_gbps: expected 10 on an ACTIVE port, "
        "found mlx4_0 port 1 DOWN 10 Gb/s InfiniBand",
        "node05: dlobd_networks: rdma needs infiniband and rdma: expected an HCA with an ACTIVE port, "
        "found mlx4_0 port 1 DOWN 10 Gb/s InfiniBand"]


def test_no_hca_and_no_gpu_are_recorded_with_the_reason(tmp_path):
    sysfs = tmp_path / "sys"
    (sysfs / "class/net").mkdir(parents=True)
    fp = fabric.detect(sysfs, NO_COMMANDS, host="vm")
    assert fp["infiniband"]["hcas"] == [] and fp["gpus"]["count"] == 0
    assert fp["infiniband"]["none_because"] == (f"{sysfs}/class/infiniband does not exist; "
                                               "ibv_devinfo not installed; ibstat not installed")
    assert fp["gpus"]["none_because"] == "nvidia-smi not installed"
    assert fp["summary"] == "no InfiniBand HCA; no GPU"
    # the same hardware gives the same fingerprint: the role's rerun changes nothing
    assert fabric.detect(sysfs, NO_COMMANDS, host="vm") == fp


IBV_DEVINFO = (
    "hca_id:\tmlx4_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t2.42.5000\n"
    "\tnode_guid:\t\t\t7cfe:9003:00a5:95c0\n"
    "\tsys_image_guid:\t\t\t7cfe:9003:00a5:95c3\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4099\n"
    "\thw_ver:\t\t\t\t0x1\n"
    "\tboard_id:\t\t\tMT_1090120019\n"
    "\tphys_port_cnt:\t\t\t2\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t1\n"
    "\t\t\tport_lid:\t\t22\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\n"
    "\t\tport:\t2\n"
    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\n")

IBSTAT = (
    "CA 'mlx4_0'\n"
    "\tCA type: MT4099\n"
    "\tNumber of ports: 2\n"
    "\tFirmware version: 2.42.5000\n"
    "\tHardware version: 1\n"
    "\tNode GUID: 0x7cfe900300a595c0\n"
    "\tSystem image GUID: 0x7cfe900300a595c3\n"
    "\tPort 1:\n"
    "\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n"
    "\t\tRate: 56\n"
    "\t\tBase lid: 22\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 1\n"
    "\t\tCapability mask: 0x02514868\n"
    "\t\tPort GUID: 0x7cfe900300a595c1\n"
    "\t\tLink layer: InfiniBand\n"
    "\tPort 2:\n"
    "\t\tState: Down\n"
    "\t\tPhysical state: Polling\n"
    "\t\tRate: 10\n"
    "\t\tBase lid: 0\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 0\n"
    "\t\tCapability mask: 0x02514868\n"
    "\t\tPort GUID: 0x7cfe900300a595c2\n"
    "\t\tLink layer: InfiniBand\n")


def test_ibv_devinfo_and_ibstat_outputs_parse():
    assert fabric.parse_ibv_devinfo(IBV_DEVINFO) == {"mlx4_0": {
        "transport": "InfiniBand", "fw_ver": "2.42.5000", "board_id": "MT_1090120019",
        "ports": {1: {"state": "ACTIVE", "link_layer": "InfiniBand"},
                  2: {"state": "DOWN", "link_layer": "InfiniBand"}}}}
    assert fabric.parse_ibstat(IBSTAT) == {"mlx4_0": {
        "ca_type": "MT4099", "fw_ver": "2.42.5000",
        "ports": {1: {"state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 56.0, "link_layer": "InfiniBand"},
                  2: {"state": "DOWN", "phys_state": "Polling", "rate_gbps": 10.0, "link_layer": "InfiniBand"}}}}


def test_commands_stand_in_where_sysfs_shows_no_hca(tmp_path):
    tools = fabric.Tools(ibv_devinfo=printing(tmp_path, "ibv_devinfo", IBV_DEVINFO),
                         ibstat=printing(tmp_path, "ibstat", IBSTAT))
    fp = fabric.detect(tmp_path / "sys", tools, host="node07")
    [hca] = fp["infiniband"]["hcas"]
    assert hca["sources"] == ["ibv_devinfo", "ibstat"]
    assert [(p["port"], p["state"], p["rate_gbps"], p["link_layer"]) for p in hca["ports"]] == [
        (1, "ACTIVE", 56.0, "InfiniBand"), (2, "DOWN", 10.0, "InfiniBand")]
    assert fp["infiniband"]["commands"] == {"ibv_devinfo": "ok", "ibstat": "ok"}
    assert fabric.check(fp, {"hca": "mlx4_0", "ib_rate_gbps": 56}, ["ipoib"], LINKS, "node07") == []


def test_a_failing_command_is_recorded_not_fatal(tmp_path):
    tools = fabric.Tools(ibstat=command(tmp_path, "ibstat", "echo \"ibpanic: can't init UMAD library\" >&2; exit 255\n"))
    fp = fabric.detect(tmp_path / "sys", tools, host="h")
    assert fp["infiniband"]["commands"]["ibstat"] == "ibstat exit status 255: ibpanic: can't init UMAD library"
    assert "ibstat exit status 255" in fp["infiniband"]["none_because"]


GPU_CSV = ("0, Tesla K80, GPU-1d2e3f40-0000-0000-0000-000000000001, 470.82.01, 11441, 00000000:04:00.0\n"
           "1, Tesla K80, GPU-1d2e3f40-0000-0000-0000-000000000002, 470.82.01, 11441, 00000000:05:00.0\n")
GPU_BANNER = ("+-----------------------------------------------------------------------------+\n"
              "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |\n"
              "|-------------------------------+----------------------+----------------------+\n")
GPU_TOPO = ("\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tPIX\tPHB\t0-13,28-41\t0\n"
            "GPU1\tPIX\t X \tPHB\t0-13,28-41\t0\n"
            "mlx5_0\tPHB\tPHB\t X \t\t\n"
            "\n"
            "Legend:\n\n"
            "  X    = Self\n"
            "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
            "  PIX  = Connection traversing at most a single PCIe bridge\n")


def nvidia_smi(tmp_path: Path) -> str:
    for name, text in (("csv", GPU_CSV), ("banner", GPU_BANNER), ("topo", GPU_TOPO)):
        (tmp_path / f"smi-{name}.txt").write_text(text)
    return command(tmp_path, "nvidia-smi", f"""\
        case "$1" in
          --query-gpu=*) cat {tmp_path}/smi-csv.txt ;;
          topo) cat {tmp_path}/smi-topo.txt ;;
          *) cat {tmp_path}/smi-banner.txt ;;
        esac
        """)


def test_gpus_from_nvidia_smi(tmp_path):
    fp = fabric.detect(tmp_path / "sys", fabric.Tools(nvidia_smi=nvidia_smi(tmp_path)), host="node03")
    gpus = fp["gpus"]
    assert (gpus["count"], gpus["driver_version"], gpus["cuda_version"]) == (2, "470.82.01", "11.4")
    assert [(d["index"], d["model"], d["memory_mib"], d["pci_bus_id"]) for d in gpus["devices"]] == [
        (0, "Tesla K80", 11441, "00000000:04:00.0"), (1, "Tesla K80", 11441, "00000000:05:00.0")]
    assert gpus["topology"] == GPU_TOPO.rstrip()
    assert fp["summary"] == "no InfiniBand HCA; 2 GPU(s) Tesla K80 (driver 470.82.01, CUDA 11.4)"
    assert fabric.check(fp, {"gpus": 2, "gpu_model": "K80"}, [], LINKS, "node03") == []
    assert fabric.check(fp, {"gpus": 4, "gpu_model": "P100"}, [], LINKS, "node03") == [
        "node03: dlobd_hardware.gpus: expected 4, found 2 x Tesla K80",
        "node03: dlobd_hardware.gpu_model: expected P100, found 2 x Tesla K80"]


def test_a_damaged_gpu_query_is_a_reason_not_a_count():
    with pytest.raises(ValueError, match="expected 6 fields, got 2"):
        fabric.parse_gpu_query("0, Tesla K80\n")


LINKS = {"loopback": {"transport": "tcp"}, "ipoib": {"needs": ["infiniband"]},
         "rdma": {"needs": ["infiniband", "rdma"]}, "eth-10g": {"needs": ["multi-host"]}}


def test_mismatch_messages_name_host_field_expected_and_found(tmp_path):
    fp = fabric.detect(tmp_path / "sys", NO_COMMANDS, host="node04")
    hardware = {"hca": "mlx5", "ib_rate_gbps": 100, "gpus": 4, "gpu_model": "K80", "nics": 2}
    assert fabric.check(fp, hardware, ["loopback", "eth-10g", "rdma", "infiniband-ish"], LINKS, "node04") == [
        "node04: dlobd_hardware.nics: not a field the fabric role checks "
        "(fields: hca, ib_rate_gbps, ethernet_gbps, link_layer, gpus, gpu_model, lustre, cores, memory_gb)",
        f"node04: dlobd_hardware.hca: expected mlx5, found no HCA ({fp['infiniband']['none_because']})",
        "node04: dlobd_hardware.ib_rate_gbps: expected 100 on an ACTIVE port, "
        f"found no HCA ({fp['infiniband']['none_because']})",
        "node04: dlobd_hardware.gpus: expected 4, found no GPU (nvidia-smi not installed)",
        "node04: dlobd_hardware.gpu_model: expected K80, found no GPU (nvidia-smi not installed)",
        "node04: dlobd_networks: rdma needs infiniband and rdma: expected an HCA with an ACTIVE port, "
        f"found no HCA ({fp['infiniband']['none_because']})",
        "node04: dlobd_networks: 'infiniband-ish' is not a network of config/networks.yaml "
        "(known: eth-10g, ipoib, loopback, rdma)"]
    assert fabric.check(fp, {"hca": "none", "gpus": 0}, ["loopback"], LINKS, "node04") == []
    assert fabric.check(fp, ["mlx5"], [], LINKS, "node04") == [
        "node04: dlobd_hardware: expected a mapping of hca, ib_rate_gbps, ethernet_gbps, link_layer, gpus, gpu_model, lustre, "
        "cores, memory_gb, found ['mlx5']"]


def test_lustre_mounts_are_read_from_the_mount_table_and_a_declared_folder_checked(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("10.0.0.1@o2ib:/scratch /lustre/scratch lustre rw,flock 0 0\n"
                      "/dev/sda1 / ext4 rw 0 0\n"
                      "10.0.0.2@o2ib:/proj /lustre/my\\040proj lustre rw 0 0\n")
    fp = fabric.detect(tmp_path / "sys", NO_COMMANDS, host="node04", mounts=mounts)
    assert fp["lustre"] == {"mounts": ["/lustre/scratch", "/lustre/my proj"]}
    assert fabric.check(fp, {"lustre": "/lustre/scratch/dlobd"}, [], LINKS, "node04") == []
    assert fabric.check(fp, {"lustre": "/scratch"}, [], LINKS, "node04") == [
        "node04: dlobd_hardware.lustre: expected /scratch on a Lustre file system, "
        "found /lustre/scratch, /lustre/my proj"]
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n")
    fp = fabric.detect(tmp_path / "sys", NO_COMMANDS, host="node04", mounts=mounts)
    assert fabric.check(fp, {"lustre": "/lustre/scratch"}, [], LINKS, "node04") == [
        "node04: dlobd_hardware.lustre: expected /lustre/scratch on a Lustre file system, "
        f"found no file system of type lustre in {mounts}"]
    # a fingerprint recorded before Lustre was detected cannot confirm a declaration
    del fp["lustre"]
    assert fabric.check(fp, {"lustre": "/lustre"}, [], LINKS, "node04") == [
        "node04: dlobd_hardware.lustre: expected /lustre on a Lustre file system, found not recorded"]


def test_the_command_line_prints_the_fingerprint_and_fails_on_a_mismatch(tmp_path, capsys):
    from dlobd import cli

    sysfs = tmp_path / "sys"
    port(sysfs, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "InfiniBand")
    hide = ["--ibv-devinfo", "", "--ibstat", "", "--nvidia-smi", "", "--ip", ""]
    assert cli.main(["fabric", "detect", "--sysfs", str(sysfs), *hide, "--host", "n1"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == "mlx5_0 port 1 ACTIVE 100 Gb/s InfiniBand; no GPU"
    assert cli.main(["fabric", "check", "--sysfs", str(sysfs), *hide, "--host", "n1",
                     "--hardware", '{"gpus": 2}', "--networks", '["rdma"]', "--links", json.dumps(LINKS)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["mismatches"] == ["n1: dlobd_hardware.gpus: expected 2, found no GPU (nvidia-smi not installed)"]
    assert out["fingerprint"]["host"] == "n1"


def test_the_h200s_topology_is_stored_without_its_escape_codes(tmp_path):
    # real output of an NVIDIA H200 host (tests/data/gpu-h200/README.md): `topo -m` underlines
    # its header with terminal escape codes even when written to a file
    h200 = Path(__file__).parent / "data" / "gpu-h200"
    assert "\x1b[4m" in (h200 / "topo.txt").read_text()
    smi = command(tmp_path, "nvidia-smi", f"""\
        case "$1" in
          --query-gpu=*) echo '0, NVIDIA H200, GPU-d3e4db5e, 580.159.04, 143771, 00000000:00:06.0' ;;
          topo) cat {h200}/topo.txt ;;
          *) cat {h200}/nvidia-smi-busy.txt ;;
        esac
        """)
    gpus = fabric.detect(tmp_path / "sys", fabric.Tools(nvidia_smi=smi), host="vm")["gpus"]
    assert gpus["cuda_version"] == "13.0"
    assert "\x1b" not in gpus["topology"]
    assert gpus["topology"].splitlines()[:2] == ["\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID",
                                                 "GPU0\t X \t0-15\t0\t\tN/A"]


@pytest.mark.parametrize("report", ["nvidia-smi-busy.txt", "nvidia-smi-q.txt"])
def test_the_h200s_cuda_version_from_its_banner_and_its_full_report(report):
    text = (Path(__file__).parent / "data" / "gpu-h200" / report).read_text()
    assert fabric.parse_cuda_version(text) == "13.0"


def test_an_earlier_fingerprints_topology_reads_as_the_plain_matrix():
    # the H200's fingerprint as the project wrote it before the escape codes were dropped
    h200 = Path(__file__).parent / "data" / "gpu-h200"
    old = json.loads((h200 / "fabric-detect.json").read_text())["gpus"]["topology"]
    assert "\x1b" in old
    assert fabric.plain_text(old) == fabric.plain_text((h200 / "topo.txt").read_text()).rstrip()


def test_the_node_size_is_recorded_and_a_declared_size_larger_than_the_host_named(tmp_path):
    """The fingerprint records the host's logical CPUs and MemTotal; a node may be declared
    smaller than it is (a share of it), or at its installed memory, never larger."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       131890524 kB\nMemFree:         1000 kB\n")
    fp = fabric.detect(tmp_path / "sys", NO_COMMANDS, host="node05", meminfo=meminfo)
    assert fp["node"] == {"cores": os.cpu_count(), "memory_gb": 125.8}
    cores = os.cpu_count()
    assert fabric.check(fp, {"cores": cores, "memory_gb": 128}, [], LINKS, "node05") == []
    assert fabric.check(fp, {"cores": 1, "memory_gb": 64}, [], LINKS, "node05") == []
    assert fabric.check(fp, {"cores": cores + 1, "memory_gb": 256}, [], LINKS, "node05") == [
        f"node05: dlobd_hardware.cores: expected {cores + 1}, found {cores}",
        "node05: dlobd_hardware.memory_gb: expected 256, found 125.8"]
    # hosts emulated on one machine declare a real site's sizes, taken as given
    assert fabric.check(fp, {"cores": cores + 1, "memory_gb": 256}, [], LINKS, "node05", judge_size=False) == []


def test_the_ethernet_links_rate_is_read_at_its_address_and_a_declared_rate_checked(tmp_path):
    """The interface holding dlobd_ethernet_address and the rate its driver reports: a host
    declared on a 10 Gb/s link that reports 1 Gb/s is named; one that reports no rate (a link
    that is down, a driver without one) is recorded as such and not judged."""
    sysfs = tmp_path / "sys"
    netdev(sysfs, "eno1", "1", "0c:c4:7a:00:00:01")
    (sysfs / "class" / "net" / "eno1" / "speed").write_text("1000\n")
    netdev(sysfs, "veth0", "1", "0c:c4:7a:00:00:02")
    (sysfs / "class" / "net" / "veth0" / "speed").write_text("-1\n")
    tools = fabric.Tools(ip=ip_command(tmp_path, {"eno1": ["10.20.0.2"], "veth0": ["10.99.0.2"]}))
    fp = fabric.detect(sysfs, tools, host="node02", ethernet_address="10.20.0.2")
    assert fp["ethernet"] == {"address": "10.20.0.2", "interface": "eno1", "speed_mbps": 1000}
    assert fabric.check(fp, {"ethernet_gbps": 1}, [], LINKS, "node02") == []
    assert fabric.check(fp, {"ethernet_gbps": 10}, [], LINKS, "node02") == [
        "node02: dlobd_hardware.ethernet_gbps: expected 10 at 10.20.0.2 (eno1), found 1"]
    veth = fabric.detect(sysfs, tools, host="node02", ethernet_address="10.99.0.2")
    assert veth["ethernet"]["none_because"] == "veth0 reports no link rate"
    assert fabric.check(veth, {"ethernet_gbps": 10}, [], LINKS, "node02") == []
    elsewhere = fabric.detect(sysfs, tools, host="node02", ethernet_address="10.20.0.9")
    assert fabric.check(elsewhere, {"ethernet_gbps": 10}, [], LINKS, "node02") == [
        "node02: dlobd_hardware.ethernet_gbps: expected a link at 10.20.0.9, found no interface holds 10.20.0.9"]
