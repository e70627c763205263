"""The fabric fingerprint of one host: its InfiniBand HCAs and GPUs, detected, never assumed.

InfiniBand: every HCA under /sys/class/infiniband, each port's state, rate, link layer
(InfiniBand, or Ethernet = RoCE) and its netdev (the IPoIB interface, found by the GID its
hardware address carries, or the RoCE netdev the port's GID table names) with that netdev's
IPv4 addresses; `ibv_devinfo` and `ibstat`, when installed, fill what sysfs lacks (and stand in
for it where sysfs shows no HCA). GPUs: `nvidia-smi` (model, count, driver and CUDA version,
`nvidia-smi topo -m`). A host without either says so, with the reason, in the fingerprint.

The fingerprint holds no timestamp and nothing that changes while the hardware stays the same,
so the fabric role rewrites `<prefix>/etc/fabric.json` only when the hardware changed.
`check` compares a fingerprint with what an inventory declares (`dlobd_hardware`,
`dlobd_networks`) and names host, field, expected and found for every difference.

Only the standard library: the fabric role runs this file with the host's python3 before
anything is installed (`python3 fabric.py check ...`); `dlobd fabric` runs the same code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCHEMA = 1
# ARPHRD_INFINIBAND: /sys/class/net/<if>/type of an IPoIB interface
IPOIB_TYPE = "32"
# The fields an inventory's dlobd_hardware may declare.
# lustre: a folder on a Lustre file system mounted on the host (S-Caffe reads images from one)
# cores, memory_gb: the node's size, which executors and containers must fit in (the plan and the
# dry run size them by it before any host is reached; the fabric role checks it on the host)
HARDWARE_FIELDS = ("hca", "ib_rate_gbps", "ethernet_gbps", "link_layer", "gpus", "gpu_model", "lustre", "cores", "memory_gb")
# MemTotal is the installed memory less what the firmware and kernel keep: a node declared with
# its installed size still matches
MEMORY_SLACK = 0.06
# Network needs (config/networks.yaml) that only a host with an active HCA port can meet.
HCA_NEEDS = ("infiniband", "rdma")
GPU_QUERY = "index,name,uuid,driver_version,memory.total,pci.bus_id"


@dataclass
class Tools:
    """Where the host's commands are; None where one is not installed."""

    ibv_devinfo: str | None = None
    ibstat: str | None = None
    nvidia_smi: str | None = None
    ip: str | None = None

    @classmethod
    def found(cls) -> "Tools":
        return cls(*(shutil.which(name) for name in ("ibv_devinfo", "ibstat", "nvidia-smi", "ip")))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _run(argv: list[str]) -> tuple[str | None, str | None]:
    """(stdout, None) when the command succeeded, else (None, why not)."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{Path(argv[0]).name} could not run: {exc}"
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"{Path(argv[0]).name} exit status {proc.returncode}" + (f": {first[0]}" if first else "")
    return proc.stdout, None


def port_state(text: str | None) -> str | None:
    """ACTIVE, DOWN, INIT, ARMED from sysfs ('4: ACTIVE'), ibv_devinfo ('PORT_ACTIVE (4)') or
    ibstat ('Active')."""
    if not text:
        return None
    word = re.sub(r"^\d+:\s*", "", text.strip()).split()[0]
    word = word.upper().removeprefix("PORT_")
    return {"INITIALIZING": "INIT"}.get(word, word)


def rate_gbps(text: str | None) -> float | None:
    """The number of sysfs' rate ('100 Gb/sec (4X EDR)') or ibstat's ('100', '2.5')."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)", text or "")
    return float(m.group(1)) if m else None


def hca_kind(device: str) -> str:
    """The driver family of an HCA device name: mlx5_0 -> mlx5, qib0 -> qib."""
    return re.sub(r"_?\d+$", "", device)


# ------------------------------------------------------------------ sysfs

def _gid_of_ipoib_address(address: str) -> str:
    """The port GID an IPoIB interface's 20-byte hardware address carries (bytes 4-19)."""
    octets = address.split(":")[4:]
    return ":".join("".join(octets[i:i + 2]) for i in range(0, 16, 2))


def _ipoib_netdevs(sysfs: Path) -> dict[str, str]:
    """GID -> IPoIB interface name, for every interface of type InfiniBand."""
    out = {}
    for net in sorted((sysfs / "class" / "net").glob("*")):
        if _read(net / "type") == IPOIB_TYPE:
            address = _read(net / "address") or ""
            if address.count(":") == 19:
                out[_gid_of_ipoib_address(address)] = net.name
    return out


def _port_netdev(sysfs: Path, device: Path, port: Path, ipoib: dict[str, str]) -> str | None:
    # RoCE: the kernel names the port's netdev in its GID attributes
    roce = _read(port / "gid_attrs" / "ndevs" / "0")
    if roce:
        return roce
    gid = _read(port / "gids" / "0")
    if gid and gid in ipoib:
        return ipoib[gid]
    # one netdev on the HCA's PCI function: it is this port's (dev_port counts from 0)
    nets = sorted((device / "device" / "net").glob("*"))
    for net in nets:
        if _read(net / "dev_port") == str(int(port.name) - 1):
            return net.name
    return nets[0].name if len(nets) == 1 else None


def sysfs_hcas(sysfs: Path) -> list[dict]:
    """Every HCA of /sys/class/infiniband with its ports."""
    root = sysfs / "class" / "infiniband"
    if not root.is_dir():
        return []
    ipoib = _ipoib_netdevs(sysfs)
    hcas = []
    for device in sorted(root.iterdir()):
        ports = []
        port_dirs = [p for p in (device / "ports").glob("*") if p.name.isdigit()]
        for port in sorted(port_dirs, key=lambda p: int(p.name)):
            ports.append({
                "port": int(port.name),
                "state": port_state(_read(port / "state")),
                "phys_state": re.sub(r"^\d+:\s*", "", _read(port / "phys_state") or "") or None,
                "rate_gbps": rate_gbps(_read(port / "rate")),
                "rate": _read(port / "rate"),
                "link_layer": _read(port / "link_layer"),
                "netdev": _port_netdev(sysfs, device, port, ipoib),
            })
        hcas.append({"device": device.name, "kind": hca_kind(device.name),
                     "hca_type": _read(device / "hca_type"), "fw_ver": _read(device / "fw_ver"),
                     "board_id": _read(device / "board_id"), "ports": ports})
    return hcas


# ------------------------------------------------------------------ command outputs

def parse_ibv_devinfo(text: str) -> dict[str, dict]:
    """device -> {transport, fw_ver, board_id, ports: {n: {state, link_layer}}} from `ibv_devinfo`."""
    out: dict[str, dict] = {}
    hca = port = None
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "hca_id":
            hca = out.setdefault(value, {"ports": {}})
            port = None
        elif hca is None:
            continue
        elif key == "port" and value.isdigit():
            port = hca["ports"].setdefault(int(value), {})
        elif port is not None and key in ("state", "link_layer"):
            port[key] = port_state(value) if key == "state" else value
        elif port is None and key in ("transport", "fw_ver", "board_id"):
            hca[key] = re.sub(r"\s*\(\d+\)$", "", value)
    return out


def parse_ibstat(text: str) -> dict[str, dict]:
    """device -> {ca_type, fw_ver, ports: {n: {state, phys_state, rate_gbps, link_layer}}} from `ibstat`."""
    out: dict[str, dict] = {}
    hca = port = None
    for line in text.splitlines():
        m = re.match(r"^CA '([^']+)'", line)
        if m:
            hca = out.setdefault(m.group(1), {"ports": {}})
            port = None
            continue
        if hca is None:
            continue
        m = re.match(r"^\s+Port (\d+):\s*$", line)
        if m:
            port = hca["ports"].setdefault(int(m.group(1)), {})
            continue
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if port is None:
            if key == "CA type":
                hca["ca_type"] = value
            elif key == "Firmware version":
                hca["fw_ver"] = value
        elif key == "State":
            port["state"] = port_state(value)
        elif key == "Physical state":
            port["phys_state"] = value
        elif key == "Rate":
            port["rate_gbps"] = rate_gbps(value)
        elif key == "Link layer":
            port["link_layer"] = value
    return out


def parse_ip_addresses(text: str) -> dict[str, list[str]]:
    """interface -> IPv4 addresses, from `ip -j -4 addr show` (iproute2's JSON)."""
    out: dict[str, list[str]] = {}
    for link in json.loads(text or "[]"):
        addrs = [a["local"] for a in link.get("addr_info", []) if a.get("family") == "inet"]
        if addrs:
            out[link["ifname"]] = addrs
    return out


def parse_gpu_query(text: str) -> list[dict]:
    """GPUs from `nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits`."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(GPU_QUERY.split(",")):
            raise ValueError(f"nvidia-smi --query-gpu: expected {len(GPU_QUERY.split(','))} fields, "
                             f"got {len(fields)}: {line!r}")
        index, name, uuid, driver, memory, bus = fields
        gpus.append({"index": int(index), "model": name, "uuid": uuid, "driver_version": driver,
                     "memory_mib": int(float(memory)) if re.match(r"^\d", memory) else None,
                     "pci_bus_id": bus})
    return gpus


# terminal control sequences: `nvidia-smi topo -m` underlines its header with them, even into a file
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain_text(text: str) -> str:
    return _ESCAPE.sub("", text)


def parse_cuda_version(text: str) -> str | None:
    """The CUDA version nvidia-smi's banner (`CUDA Version: 12.2`) or `-q` report names."""
    m = re.search(r"CUDA Version\s*:\s*([\d.]+)", text or "")
    return m.group(1) if m else None


# ------------------------------------------------------------------ detection

def _merge_commands(hcas: list[dict], reports: dict[str, dict], source: str) -> None:
    """Fill what sysfs lacks from a command's per-device report; add devices sysfs did not show."""
    by_name = {h["device"]: h for h in hcas}
    for device, report in reports.items():
        hca = by_name.get(device)
        if hca is None:
            hca = {"device": device, "kind": hca_kind(device), "hca_type": report.get("ca_type"),
                   "fw_ver": report.get("fw_ver"), "board_id": report.get("board_id"), "ports": []}
            hcas.append(hca)
            by_name[device] = hca
        for key in ("fw_ver", "board_id"):
            hca[key] = hca.get(key) or report.get(key)
        hca["hca_type"] = hca.get("hca_type") or report.get("ca_type")
        ports = {p["port"]: p for p in hca["ports"]}
        for number, found in sorted(report["ports"].items()):
            port = ports.get(number)
            if port is None:
                port = {"port": number, "state": None, "phys_state": None, "rate_gbps": None,
                        "rate": None, "link_layer": None, "netdev": None}
                hca["ports"].append(port)
            for key, value in found.items():
                if port.get(key) is None:
                    port[key] = value
        hca.setdefault("sources", [])
        if source not in hca["sources"]:
            hca["sources"].append(source)


def detect_infiniband(sysfs: Path, tools: Tools) -> dict:
    hcas = sysfs_hcas(sysfs)
    for hca in hcas:
        hca["sources"] = ["sysfs"]
    why_not = [f"{sysfs / 'class' / 'infiniband'} " + ("is empty" if (sysfs / "class" / "infiniband").is_dir()
                                                        else "does not exist")]
    commands = {}
    for name, path, argv, parse in (("ibv_devinfo", tools.ibv_devinfo, [], parse_ibv_devinfo),
                                    ("ibstat", tools.ibstat, [], parse_ibstat)):
        if not path:
            why_not.append(f"{name} not installed")
            continue
        out, err = _run([path, *argv])
        commands[name] = "ok" if out is not None else err
        if out is None:
            why_not.append(err)
            continue
        _merge_commands(hcas, parse(out), name)
    addresses = {}
    if any(p.get("netdev") for h in hcas for p in h["ports"]):
        if tools.ip:
            out, err = _run([tools.ip, "-j", "-4", "addr", "show"])
            addresses = parse_ip_addresses(out) if out is not None else {}
            if out is None:
                commands["ip"] = err
        else:
            commands["ip"] = "ip not installed: interface addresses unknown"
    for hca in hcas:
        for port in hca["ports"]:
            port["ipv4"] = addresses.get(port.get("netdev"), []) if port.get("netdev") else []
    result = {"hcas": hcas, "commands": commands}
    if not hcas:
        result["none_because"] = "; ".join(why_not)
    return result


def detect_gpus(tools: Tools) -> dict:
    empty = {"count": 0, "devices": [], "driver_version": None, "cuda_version": None, "topology": None}
    if not tools.nvidia_smi:
        return {**empty, "none_because": "nvidia-smi not installed"}
    out, err = _run([tools.nvidia_smi, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"])
    if out is None:
        return {**empty, "none_because": err}
    try:
        devices = parse_gpu_query(out)
    except ValueError as exc:
        return {**empty, "none_because": str(exc)}
    banner, _ = _run([tools.nvidia_smi])
    topology, topo_err = _run([tools.nvidia_smi, "topo", "-m"])
    gpus = {"count": len(devices), "devices": devices,
            "driver_version": devices[0]["driver_version"] if devices else None,
            "cuda_version": parse_cuda_version(banner or ""),
            "topology": plain_text(topology).rstrip() if topology is not None else f"not read: {topo_err}"}
    if not devices:
        gpus["none_because"] = "nvidia-smi lists no GPU"
    return gpus


def detect_lustre(mounts: Path) -> dict:
    """The host's Lustre mount points, from its mount table."""
    try:
        table = mounts.read_text().splitlines()
    except OSError as exc:
        return {"mounts": [], "none_because": f"{mounts} not readable: {exc.strerror}"}
    # /proc/mounts: device, mount point (spaces as \\040), type, ...
    found = [fields[1].replace("\\040", " ") for fields in (line.split() for line in table)
             if len(fields) > 2 and fields[2] == "lustre"]
    return {"mounts": found} if found else {"mounts": [], "none_because": f"no file system of type lustre in {mounts}"}


def describe_hcas(fp: dict, addresses: bool = True) -> str:
    """Each HCA port: state, rate, link layer (RoCE for Ethernet), netdev and its addresses."""
    parts = []
    for hca in (fp.get("infiniband") or {}).get("hcas") or []:
        for port in hca.get("ports") or []:
            layer = port.get("link_layer") or "link layer unknown"
            layer = "RoCE" if layer == "Ethernet" else layer
            rate = f"{port['rate_gbps']:g} Gb/s" if port.get("rate_gbps") is not None else "rate unknown"
            netdev = port.get("netdev") or ""
            if netdev and addresses and port.get("ipv4"):
                netdev += " " + ", ".join(port["ipv4"])
            parts.append(f"{hca['device']} port {port['port']} {port.get('state') or 'state unknown'} "
                         f"{rate} {layer}" + (f", {netdev}" if netdev else ""))
    return "; ".join(parts) or "no InfiniBand HCA"


def describe_gpus(fp: dict) -> str:
    gpus = fp.get("gpus") or {}
    if not gpus.get("count"):
        return "no GPU"
    models = sorted({d["model"] for d in gpus["devices"]})
    versions = ", ".join(x for x in (f"driver {gpus['driver_version']}" if gpus.get("driver_version") else "",
                                     f"CUDA {gpus['cuda_version']}" if gpus.get("cuda_version") else "") if x)
    return f"{gpus['count']} GPU(s) {' + '.join(models)}" + (f" ({versions})" if versions else "")


def describe(fp: dict | None, addresses: bool = True) -> str:
    """One readable line: HCAs with port state, rate, link layer, netdev and address; GPUs."""
    if not fp:
        return "not recorded"
    if fp.get("error"):
        return f"not readable: {fp['error']}"
    return f"{describe_hcas(fp, addresses)}; {describe_gpus(fp)}"


def by_host(fabrics: dict | None) -> list[str]:
    """`host, host: description` lines for a run's {host: fingerprint}, hosts with the same
    hardware on one line (their own addresses left out)."""
    groups: dict[str, list[str]] = {}
    for host, fp in (fabrics or {}).items():
        groups.setdefault(describe(fp, addresses=False), []).append(host)
    return [f"{', '.join(hosts)}: {text}" for text, hosts in groups.items()]


def detect_node(meminfo: Path = Path("/proc/meminfo")) -> dict:
    """The host's size: its logical CPUs (what YARN counts vcores from) and MemTotal in GB."""
    text = _read(meminfo) or ""
    found = re.search(r"^MemTotal:\s+(\d+) kB", text, re.MULTILINE)
    return {"cores": os.cpu_count(), "memory_gb": round(int(found[1]) / 2**20, 1) if found else None}


def detect_ethernet(sysfs: Path, tools: Tools, address: str | None) -> dict:
    """The interface that holds the host's Ethernet address (dlobd_ethernet_address) and the
    rate its driver reports (/sys/class/net/<if>/speed, Mb/s: a veth reports 10000; a down link
    none)."""
    if not address:
        return {"address": None, "none_because": "no dlobd_ethernet_address"}
    if not tools.ip:
        return {"address": address, "none_because": "ip not installed: interface addresses unknown"}
    out, err = _run([tools.ip, "-j", "-4", "addr", "show"])
    if out is None:
        return {"address": address, "none_because": err}
    interface = next((name for name, addrs in parse_ip_addresses(out).items() if address in addrs), None)
    if interface is None:
        return {"address": address, "none_because": f"no interface holds {address}"}
    speed = (_read(sysfs / "class" / "net" / interface / "speed") or "").strip()
    found = {"address": address, "interface": interface,
             "speed_mbps": int(speed) if speed.isdigit() and int(speed) > 0 else None}
    if found["speed_mbps"] is None:
        found["none_because"] = f"{interface} reports no link rate"
    return found


def detect(sysfs: Path = Path("/sys"), tools: Tools | None = None, host: str | None = None,
           mounts: Path = Path("/proc/mounts"), meminfo: Path = Path("/proc/meminfo"),
           ethernet_address: str | None = None) -> dict:
    tools = tools if tools is not None else Tools.found()
    fp = {"schema": SCHEMA, "host": host or socket.gethostname(),
          "infiniband": detect_infiniband(sysfs, tools), "gpus": detect_gpus(tools),
          "lustre": detect_lustre(mounts), "node": detect_node(meminfo),
          "ethernet": detect_ethernet(sysfs, tools, ethernet_address)}
    fp["summary"] = describe(fp)
    return fp


# ------------------------------------------------------------------ what an inventory declares

def _active_ports(fp: dict) -> list[tuple[str, dict]]:
    return [(h["device"], p) for h in fp["infiniband"]["hcas"] for p in h["ports"] if p.get("state") == "ACTIVE"]


def _found_ports(fp: dict) -> str:
    hcas = fp["infiniband"]["hcas"]
    if not hcas:
        return f"no HCA ({fp['infiniband'].get('none_because', 'none found')})"
    return ", ".join(f"{h['device']} port {p['port']} {p.get('state') or 'state unknown'}"
                     + (f" {p['rate_gbps']:g} Gb/s" if p.get("rate_gbps") is not None else "")
                     + (f" {p['link_layer']}" if p.get("link_layer") else "")
                     for h in hcas for p in h["ports"]) or ", ".join(h["device"] for h in hcas) + " (no ports)"


def _found_gpus(fp: dict) -> str:
    gpus = fp["gpus"]
    if not gpus["count"]:
        return f"no GPU ({gpus.get('none_because', 'none found')})"
    return f"{gpus['count']} x " + " + ".join(sorted({d["model"] for d in gpus["devices"]}))


def declaration_errors(hardware) -> list[str]:
    """What is wrong with a dlobd_hardware declaration itself, before any host is looked at."""
    if not isinstance(hardware, dict):
        return [f"dlobd_hardware: expected a mapping of {', '.join(HARDWARE_FIELDS)}, "
                f"found {hardware!r}"]
    return [f"dlobd_hardware.{field}: not a field the fabric role checks "
            f"(fields: {', '.join(HARDWARE_FIELDS)})" for field in hardware if field not in HARDWARE_FIELDS]


def check(fp: dict, hardware: dict | None, networks: list | None, links: dict | None,
          host: str, judge_size: bool = True) -> list[str]:
    """Every way the host differs from its inventory: `host: field: expected X, found Y`. Without
    `judge_size` the declared cores and memory_gb are taken as given (the emulated hosts of one
    machine, which declare the sizes of a real site's nodes)."""
    hardware = hardware or {}
    out = [f"{host}: {e}" for e in declaration_errors(hardware)]
    if not isinstance(hardware, dict):
        return out
    active = _active_ports(fp)
    if "hca" in hardware:
        want = str(hardware["hca"])
        devices = [h["device"] for h in fp["infiniband"]["hcas"]]
        if want.lower() == "none":
            if devices:
                out.append(f"{host}: dlobd_hardware.hca: expected none, found {', '.join(devices)}")
        elif not any(d == want or hca_kind(d) == want for d in devices):
            out.append(f"{host}: dlobd_hardware.hca: expected {want}, found {_found_ports(fp)}")
    if "ib_rate_gbps" in hardware:
        want = hardware["ib_rate_gbps"]
        try:
            ok = any(p.get("rate_gbps") == float(want) for _, p in active)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            out.append(f"{host}: dlobd_hardware.ib_rate_gbps: expected {want} on an ACTIVE port, "
                       f"found {_found_ports(fp)}")
    ethernet = fp.get("ethernet") or {}
    if "ethernet_gbps" in hardware and ethernet.get("address"):
        if "interface" not in ethernet:
            out.append(f"{host}: dlobd_hardware.ethernet_gbps: expected a link at {ethernet['address']}, "
                       f"found {ethernet['none_because']}")
        elif ethernet["speed_mbps"] and ethernet["speed_mbps"] != float(hardware["ethernet_gbps"]) * 1000:
            out.append(f"{host}: dlobd_hardware.ethernet_gbps: expected {hardware['ethernet_gbps']} at "
                       f"{ethernet['address']} ({ethernet['interface']}), found {ethernet['speed_mbps'] / 1000:g}")
    if "link_layer" in hardware:
        want = str(hardware["link_layer"])
        layer = "Ethernet" if want.lower() == "roce" else want
        if not any((p.get("link_layer") or "").lower() == layer.lower() for _, p in active):
            out.append(f"{host}: dlobd_hardware.link_layer: expected {want} on an ACTIVE port, "
                       f"found {_found_ports(fp)}")
    gpus = fp["gpus"]
    if "gpus" in hardware and str(hardware["gpus"]) != str(gpus["count"]):
        out.append(f"{host}: dlobd_hardware.gpus: expected {hardware['gpus']}, found {_found_gpus(fp)}")
    if "gpu_model" in hardware:
        want = str(hardware["gpu_model"])
        models = [d["model"] for d in gpus["devices"]]
        if not models or not all(want.lower() in m.lower() for m in models):
            out.append(f"{host}: dlobd_hardware.gpu_model: expected {want}, found {_found_gpus(fp)}")
    node = (fp.get("node") or {}) if judge_size else {}
    # a node may be declared smaller than it is (the share a site gives the runs), not larger
    for field, slack in (("cores", 0.0), ("memory_gb", MEMORY_SLACK)):
        if field in hardware and node.get(field) is not None:
            try:
                too_big = float(hardware[field]) > node[field] * (1 + slack)
            except (TypeError, ValueError):
                too_big = True
            if too_big:
                out.append(f"{host}: dlobd_hardware.{field}: expected {hardware[field]}, found {node[field]}")
    if "lustre" in hardware:
        want = Path(str(hardware["lustre"]))
        lustre = fp.get("lustre") or {"mounts": [], "none_because": "not recorded"}
        if not any(want == Path(m) or Path(m) in want.parents for m in lustre["mounts"]):
            found = ", ".join(lustre["mounts"]) or lustre.get("none_because", "none")
            out.append(f"{host}: dlobd_hardware.lustre: expected {want} on a Lustre file system, found {found}")
    links = links or {}
    for network in networks or []:
        if network not in links:
            out.append(f"{host}: dlobd_networks: {network!r} is not a network of config/networks.yaml "
                       f"(known: {', '.join(sorted(links))})")
            continue
        needs = [n for n in links[network].get("needs", []) if n in HCA_NEEDS]
        if needs and not active:
            out.append(f"{host}: dlobd_networks: {network} needs {' and '.join(needs)}: expected an HCA "
                       f"with an ACTIVE port, found {_found_ports(fp)}")
    return out


# ------------------------------------------------------------------ command line

def _tools(args) -> Tools:
    found = Tools.found()
    given = {name: getattr(args, name) for name in ("ibv_devinfo", "ibstat", "nvidia_smi", "ip")}
    # "" says "not installed", so a test (or a user) can hide a command that is there
    return Tools(**{k: (v or None) if v is not None else getattr(found, k) for k, v in given.items()})


def register(parser) -> None:
    sub = parser.add_subparsers(dest="fabric_command", required=True)
    for name, help_text in (("detect", "print this host's fingerprint (JSON)"),
                            ("check", "detect, then compare with what the inventory declares; "
                                      "prints {fingerprint, mismatches}, exit status 1 on a mismatch")):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--sysfs", type=Path, default=Path("/sys"), help="root of sysfs (default /sys)")
        for tool in ("ibv-devinfo", "ibstat", "nvidia-smi", "ip"):
            p.add_argument(f"--{tool}", dest=tool.replace("-", "_"), default=None,
                           help=f"path of {tool} (default: found on PATH; '' = not installed)")
        p.add_argument("--host", default=None, help="the host's name (default: its hostname)")
        p.add_argument("--ethernet-address", default=None,
                       help="dlobd_ethernet_address: its interface's link rate is read")
        if name == "check":
            p.add_argument("--hardware", type=json.loads, default={},
                           help="dlobd_hardware as JSON, e.g. '{\"hca\": \"mlx5\", \"gpus\": 4}'")
            p.add_argument("--networks", type=json.loads, default=[],
                           help="dlobd_networks as JSON, e.g. '[\"ipoib\", \"rdma\"]'")
            p.add_argument("--links", type=json.loads, default={},
                           help="the `links` of config/networks.yaml as JSON")
            p.add_argument("--size-as-declared", action="store_true",
                           help="take dlobd_hardware's cores and memory_gb as given, unchecked "
                                "(hosts emulated on one machine)")


def run(args) -> int:
    fp = detect(args.sysfs, _tools(args), args.host, ethernet_address=args.ethernet_address)
    if args.fabric_command == "detect":
        print(json.dumps(fp, indent=1, sort_keys=True))
        return 0
    mismatches = check(fp, args.hardware, args.networks, args.links, fp["host"],
                       judge_size=not args.size_as_declared)
    print(json.dumps({"fingerprint": fp, "mismatches": mismatches}, indent=1, sort_keys=True))
    return 1 if mismatches else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fabric.py", description=__doc__.splitlines()[0])
    register(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
