"""`dlobd calibrate` (`make calibrate`): the cluster's links measured, beside the papers' clusters.

Point-to-point latency and bandwidth between two workers of the cluster (`DLOBD_WORKERS` of the
provisioned dlobd-env.sh; the server on the first, the client on the second, each started over
ssh as the launchers start remote tasks), or over loopback on a cluster of one host, labelled so:

- TCP over the cluster's addresses (IPoIB on an InfiniBand cluster, the emulated tier on an
  emulated one): latency with sockperf ping-pong (64-byte messages; the median of its half
  round trips), bandwidth with iperf3 (one stream, what the receiver got);
- RDMA, where both ends have an HCA with an ACTIVE port in their fingerprint (the fabric role's
  <prefix>/etc/fabric.json): perftest's ib_send_lat (64 bytes, its typical latency) and
  ib_write_bw (1 MiB messages, its average), else the OSU micro-benchmarks osu_latency and
  osu_bw under mpirun between two hosts. Where neither can run, the reason is recorded.

Every tool's raw output stays in <prefix>/var/calibration/<UTC time>/ (a new folder per run,
never overwritten); the summary goes to <prefix>/etc/calibration.json (and a copy into that
folder), which every later run.json carries (`calibration`), and is printed as `name: value`
lines. The papers' clusters come from config/clusters.yaml, one file with where each fact is
stated; the report puts each experiment's cluster beside what was measured here.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

import jsonschema
import yaml

from dlobd import ROOT
from dlobd.cluster import fabric, provenance
from dlobd.cluster.remote import free_ports, ssh_argv

CLUSTERS = ROOT / "config" / "clusters.yaml"
CLUSTERS_SCHEMA = Path(__file__).with_name("clusters.schema.json")
RAW_DIR = Path("var", "calibration")
LATENCY_BYTES = 64
BANDWIDTH_BYTES = 1 << 20
# On other hosts the tools listen on their own default ports (a loopback run picks free ones).
DEFAULT_PORTS = {"sockperf": 11111, "iperf3": 5201, "ib_send_lat": 18515, "ib_write_bw": 18516}
MEASUREMENTS = ("tcp_latency_us", "tcp_bandwidth_gbps", "rdma_latency_us", "rdma_bandwidth_gbps")
CLIENT_TRIES = 10  # the client retries while its server is still starting
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class CalibrationError(ValueError):
    """Output of a tool, or a clusters file, that cannot be read; says which and why."""


# ------------------------------------------------------------------ the papers' clusters

@functools.lru_cache(maxsize=None)
def paper_clusters(path: Path = CLUSTERS) -> dict[str, dict]:
    """cluster id -> {field: {"value", "where"}} (plus name, paper), checked against its schema."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CalibrationError(f"{path}: {exc}") from exc
    errors = sorted(jsonschema.Draft202012Validator(json.loads(CLUSTERS_SCHEMA.read_text())).iter_errors(data),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        raise CalibrationError(f"{path}: {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}")
    out = {}
    for cid, cluster in data["clusters"].items():
        facts = {k: (v if isinstance(v, dict) else {"value": v, "where": cluster["where"]})
                 for k, v in cluster.items() if k not in ("name", "paper", "where")}
        out[cid] = {"name": cluster["name"], "paper": cluster["paper"], "where": cluster["where"], **facts}
    return out


def paper_fabric(cluster_id: str | None) -> dict | None:
    """The report's row for a paper cluster: name, network, GPUs, and where the paper says so."""
    if not cluster_id:
        return None
    cluster = paper_clusters().get(cluster_id)
    if cluster is None:
        return {"name": cluster_id, "network": "not in config/clusters.yaml", "gpus": "", "where": ""}

    def value(field):
        return cluster[field]["value"] if field in cluster else None

    network = value("network")
    if value("ib_rate_gbps"):
        network += f", {value('ib_rate_gbps'):g} Gb/s"
    nodes = value("nodes")
    wheres = sorted({cluster[f]["where"] for f in ("network", "ib_rate_gbps", "gpus", "nodes") if f in cluster})
    nodes = f"{nodes} nodes" if isinstance(nodes, int) else nodes
    return {"name": cluster["name"] + (f", {nodes}" if nodes else ""),
            "network": network, "gpus": value("gpus") or "none stated", "where": "; ".join(wheres)}


# ------------------------------------------------------------------ parsers of the tools' output

def parse_sockperf(text: str) -> dict:
    """sockperf ping-pong: median, average and 99th percentile of the half round trips (us)."""
    text = _ANSI.sub("", text)
    pct = {float(p): float(v) for p, v in re.findall(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)", text)}
    avg = re.search(r"avg-latency=([\d.]+)", text)
    if 50.0 not in pct or not avg:
        raise CalibrationError("sockperf: no latency summary (avg-latency, percentile 50.000) in its output")
    observations = re.search(r"Total (\d+) observations", text)
    version = re.search(r"version #(\S+)", text)
    return {"value": pct[50.0], "avg_us": float(avg.group(1)), "p99_us": pct.get(99.0),
            "observations": int(observations.group(1)) if observations else None,
            "version": version.group(1) if version else None}


def parse_iperf3(text: str) -> dict:
    """iperf3 -J: the receiver's bits per second, in Gb/s, and the sender's retransmits."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"iperf3: output is not its JSON report ({exc})") from exc
    if doc.get("error"):
        raise CalibrationError(f"iperf3: {doc['error']}")
    try:
        received = doc["end"]["sum_received"]
    except KeyError as exc:
        raise CalibrationError("iperf3: its report has no end.sum_received") from exc
    return {"value": received["bits_per_second"] / 1e9, "seconds": received["seconds"],
            "retransmits": doc["end"].get("sum_sent", {}).get("retransmits"),
            "version": doc.get("start", {}).get("version")}


def _perftest_row(text: str, tool: str) -> dict:
    """The result row under perftest's ` #bytes #iterations ...` header, by column name."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes"):
            names = re.findall(r"#\w+|\S[^\[\]]*?\[[^\]]+\]", line)
            for row in lines[i + 1:]:
                numbers = row.split()
                if numbers and all(re.fullmatch(r"[\d.]+", n) for n in numbers):
                    return {name.strip(): float(n) for name, n in zip(names, numbers)}
            break
    raise CalibrationError(f"{tool}: no result row under a '#bytes' header in its output")


def parse_ib_send_lat(text: str) -> dict:
    row = _perftest_row(text, "ib_send_lat")
    if "t_typical[usec]" not in row:
        raise CalibrationError("ib_send_lat: its result has no t_typical[usec] column")
    return {"value": row["t_typical[usec]"], "avg_us": row.get("t_avg[usec]"),
            "p99_us": row.get("99% percentile[usec]"), "message_bytes": int(row["#bytes"])}


def parse_ib_write_bw(text: str) -> dict:
    row = _perftest_row(text, "ib_write_bw")
    if "BW average[Gb/sec]" in row:
        value = row["BW average[Gb/sec]"]
    elif "BW average[MB/sec]" in row:
        value = row["BW average[MB/sec]"] * 8 / 1000
    else:
        raise CalibrationError("ib_write_bw: its result has no 'BW average' column")
    return {"value": value, "message_bytes": int(row["#bytes"])}


def parse_osu(text: str, size: int, tool: str, scale: float = 1.0) -> dict:
    """The row of `size` bytes of osu_latency (us) or osu_bw (MB/s; scale converts to Gb/s)."""
    if "# OSU" not in text:
        raise CalibrationError(f"{tool}: no '# OSU' header in its output")
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == str(size):
            return {"value": float(fields[1]) * scale, "message_bytes": size}
    raise CalibrationError(f"{tool}: no row for {size} bytes in its output")


# ------------------------------------------------------------------ what to run where

@dataclasses.dataclass
class Probe:
    name: str              # one of MEASUREMENTS
    unit: str
    tool: str
    transport: str         # tcp | rdma
    statistic: str         # what the value is
    server: list | None    # argv on the server host (None: the client side starts both ends)
    client: list
    parse: Callable[[str], dict]


@dataclasses.dataclass
class Plan:
    link: str              # what the traffic crosses, e.g. loopback (one host: vm)
    server: str            # host (address) of the server side
    client: str
    probes: list
    not_runnable: dict     # measurement -> reason


def tcp_probes(address: str, ports: dict, duration: int) -> list[Probe]:
    return [
        Probe("tcp_latency_us", "us", "sockperf", "tcp",
              f"median of half round trips, {LATENCY_BYTES}-byte messages, TCP",
              ["sockperf", "server", "--tcp", "-i", address, "-p", str(ports["sockperf"])],
              ["sockperf", "ping-pong", "--tcp", "-i", address, "-p", str(ports["sockperf"]),
               "-t", str(duration), "-m", str(LATENCY_BYTES)], parse_sockperf),
        Probe("tcp_bandwidth_gbps", "Gb/s", "iperf3", "tcp",
              "received rate of one TCP stream",
              ["iperf3", "-s", "-1", "-B", address, "-p", str(ports["iperf3"])],
              ["iperf3", "-c", address, "-p", str(ports["iperf3"]), "-t", str(duration), "-J"], parse_iperf3),
    ]


def _active_port(fp: dict | None) -> tuple[str, dict] | None:
    for hca in ((fp or {}).get("infiniband") or {}).get("hcas") or []:
        for port in hca.get("ports") or []:
            if port.get("state") == "ACTIVE":
                return hca["device"], port
    return None


def perftest_probes(address: str, server_port: tuple, client_port: tuple, ports: dict) -> list[Probe]:
    """ib_send_lat and ib_write_bw, each end on its own HCA port; RoCE ports connect through
    rdma_cm (-R), which picks the GID."""
    def side(tool, end, extra):
        device, port = end
        roce = ["-R"] if port.get("link_layer") == "Ethernet" else []
        return [tool, "-d", device, "-i", str(port["port"]), *extra, "-p", str(ports[tool]), "-F", *roce]

    lat = ["-s", str(LATENCY_BYTES), "-n", "10000"]
    bw = ["-s", str(BANDWIDTH_BYTES), "-n", "5000", "--report_gbits"]
    return [
        Probe("rdma_latency_us", "us", "perftest ib_send_lat", "rdma",
              f"typical (median) latency, {LATENCY_BYTES}-byte sends",
              side("ib_send_lat", server_port, lat), [*side("ib_send_lat", client_port, lat), address],
              parse_ib_send_lat),
        Probe("rdma_bandwidth_gbps", "Gb/s", "perftest ib_write_bw", "rdma",
              f"average of RDMA writes of {BANDWIDTH_BYTES} bytes",
              side("ib_write_bw", server_port, bw), [*side("ib_write_bw", client_port, bw), address],
              parse_ib_write_bw),
    ]


def osu_probes(server: str, client: str, tools: dict) -> list[Probe]:
    """osu_latency and osu_bw, one rank per host, started by the client host's mpirun (the
    `-host a,b` form both OpenMPI and MPICH/MVAPICH2's hydra accept)."""
    mpirun = ["mpirun", "-np", "2", "-host", f"{client},{server}"]
    return [
        Probe("rdma_latency_us", "us", "OSU osu_latency", "rdma",
              f"osu_latency at {LATENCY_BYTES} bytes (the MPI library's RDMA path)", None,
              [*mpirun, tools["osu_latency"], "-m", f"{LATENCY_BYTES}:{LATENCY_BYTES}"],
              lambda text: parse_osu(text, LATENCY_BYTES, "osu_latency")),
        Probe("rdma_bandwidth_gbps", "Gb/s", "OSU osu_bw", "rdma",
              f"osu_bw at {BANDWIDTH_BYTES} bytes (the MPI library's RDMA path)", None,
              [*mpirun, tools["osu_bw"], "-m", f"{BANDWIDTH_BYTES}:{BANDWIDTH_BYTES}"],
              lambda text: parse_osu(text, BANDWIDTH_BYTES, "osu_bw", scale=8 / 1000)),
    ]


def _name(host: str) -> str:
    return socket.gethostname() if host.startswith("127.") else host


def link_label(server: str, client: str, server_fp: dict | None, emulated: str | None) -> str:
    if server == client:
        return f"loopback (one host: {_name(server)})"
    if emulated:
        return f"{emulated} ({server} -> {client})"
    for hca in ((server_fp or {}).get("infiniband") or {}).get("hcas") or []:
        for port in hca.get("ports") or []:
            if server in (port.get("ipv4") or []):
                kind = "IPoIB" if port.get("link_layer") == "InfiniBand" else "Ethernet (RoCE port)"
                rate = f" {port['rate_gbps']:g} Gb/s" if port.get("rate_gbps") else ""
                return f"{kind} {port.get('netdev')} ({hca['device']} port {port['port']}{rate}; {server} -> {client})"
    return f"TCP/IP, no HCA port holds {server} ({server} -> {client})"


def endpoints(workers: list[str]) -> tuple[str, str]:
    """(server, client): the first two distinct workers, else this host over loopback."""
    distinct = list(dict.fromkeys(workers))
    return (distinct[0], distinct[1]) if len(distinct) >= 2 else ("127.0.0.1", "127.0.0.1")


def plan(server: str, client: str, fabrics: dict, tools: dict, ports: dict | None = None,
         duration: int = 5, emulated: str | None = None) -> Plan:
    """What runs where. `fabrics` and `tools` are keyed by host (server and client): the host's
    fingerprint, and {tool name: path} of the tools found on it."""
    ports = ports or DEFAULT_PORTS
    not_runnable = {}
    probes = []
    missing_tcp = [t for t in ("sockperf", "iperf3") for h in {server, client} if t not in tools.get(h, {})]
    if missing_tcp:
        for name in ("tcp_latency_us", "tcp_bandwidth_gbps"):
            not_runnable[name] = ("not installed: " + ", ".join(sorted(set(missing_tcp)))
                                  + " (make calibrate-deps here; role node_basics on a cluster's hosts)")
    else:
        probes += tcp_probes(server, ports, duration)
    ends = {h: _active_port(fabrics.get(h)) for h in (server, client)}
    no_port = [f"no HCA with an ACTIVE port on {_name(h)} ({describe_fp(fabrics.get(h))})"
               for h in dict.fromkeys((server, client)) if ends[h] is None]
    have = {h: tools.get(h, {}) for h in (server, client)}
    perftest = all(t in have[h] for t in ("ib_send_lat", "ib_write_bw") for h in (server, client))
    osu = server != client and all(t in have[client] for t in ("mpirun", "osu_latency", "osu_bw"))
    why = list(no_port)
    if not perftest and not osu:
        why.append("neither perftest (ib_send_lat, ib_write_bw) nor the OSU micro-benchmarks "
                   "(osu_latency, osu_bw and mpirun, between two hosts) are installed")
    if why:
        for name in ("rdma_latency_us", "rdma_bandwidth_gbps"):
            not_runnable[name] = "; ".join(why)
    elif perftest:
        probes += perftest_probes(server, ends[server], ends[client], ports)
    else:
        probes += osu_probes(server, client, have[client])
    return Plan(link_label(server, client, fabrics.get(server), emulated), server, client, probes, not_runnable)


def describe_fp(fp: dict | None) -> str:
    if fp and fp.get("error"):
        return f"fingerprint unreadable: {fp['error']}"
    return "fabric.json: " + fabric.describe(fp) if fp else \
        "no fabric.json: run the fabric role (make calibrate does)"


# ------------------------------------------------------------------ running

def on_host(host: str, argv: list) -> list:
    """argv on `host`: here as it is, elsewhere over ssh (ended when its stdin closes)."""
    return list(argv) if provenance.is_local_address(host) else ssh_argv(host, "/tmp", {}, list(argv))


def tools_on(host: str, names: list[str]) -> dict:
    """{name: path} of the commands found on `host`'s PATH (with the stack's environment here)."""
    if provenance.is_local_address(host):
        path = provenance.stack_setting("PATH") or os.environ.get("PATH")
        return {n: p for n in names if (p := shutil.which(n, path=path))}
    script = "for t in " + " ".join(names) + '; do p=$(command -v "$t") && echo "$t $p"; done; true'
    try:
        out = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host, script],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        if proc.stdin:
            proc.stdin.close()  # an ssh_argv command ends its remote side at EOF
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run_probe(probe: Probe, server: str, client: str, raw: Path, timeout: float) -> dict:
    """One measurement; the tools' output goes to raw/<name>.{server,client}.log."""
    server_argv = on_host(server, probe.server) if probe.server else None
    client_argv = on_host(client, probe.client)
    record = {"tool": probe.tool, "transport": probe.transport, "unit": probe.unit,
              "statistic": probe.statistic, "server_command": server_argv, "client_command": client_argv,
              "log": str(raw / f"{probe.name}.client.log")}
    server_proc = None
    client_path = raw / f"{probe.name}.client.log"
    with open(client_path, "xb") as client_log:
        if server_argv:
            with open(raw / f"{probe.name}.server.log", "xb") as server_log:
                server_proc = subprocess.Popen(server_argv, stdin=subprocess.PIPE, stdout=server_log,
                                               stderr=subprocess.STDOUT, start_new_session=True)
        try:
            for attempt in range(1, CLIENT_TRIES + 1):
                client_log.write(f"# attempt {attempt}: {' '.join(client_argv)}\n".encode())
                client_log.flush()
                start = client_log.tell()
                # stdin stays open while it runs: an ssh_argv command ends its remote side at EOF
                proc = subprocess.Popen(client_argv, stdin=subprocess.PIPE, stdout=client_log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
                try:
                    code = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    _stop(proc)
                    return {**record, "status": "failed", "reason": f"{probe.tool} took longer than {timeout} s"}
                finally:
                    proc.stdin.close()
                with open(client_path, "rb") as fh:
                    fh.seek(start)
                    output = fh.read().decode(errors="replace")
                if code == 0:
                    try:
                        parsed = probe.parse(output)
                        break
                    except CalibrationError as exc:  # iperf3 -J exits 0 when it cannot connect
                        problem = str(exc)
                else:
                    problem = f"{probe.tool} exit status {code}: {output.strip()[-300:]}"
                if server_proc is None or server_proc.poll() is not None or attempt == CLIENT_TRIES:
                    return {**record, "status": "failed", "reason": problem}
                time.sleep(0.5)  # the server may still be starting
        finally:
            if server_proc is not None:
                _stop(server_proc)
    value = parsed.pop("value")
    return {**record, "status": "ok", "value": round(value, 3), "details": parsed}


def calibrate(duration: int = 5, dry_run: bool = False) -> dict:
    """Plan and (unless dry_run) run the measurements; returns the calibration record."""
    server, client = endpoints(provenance.workers())
    hosts = list(dict.fromkeys((server, client)))
    wanted = ["sockperf", "iperf3", "ib_send_lat", "ib_write_bw", "mpirun", "osu_latency", "osu_bw"]
    tools = {h: tools_on(h, wanted) for h in hosts}
    fabrics = {h: provenance.host_json(h, provenance.FABRIC_FILE, own=True) for h in hosts}
    ports = DEFAULT_PORTS
    if server == client:
        ports = dict(zip(DEFAULT_PORTS, free_ports(len(DEFAULT_PORTS))))
    p = plan(server, client, fabrics, tools, ports, duration, provenance.stack_setting("DLOBD_EMULATED_LINK"))
    stamp = _dt.datetime.now(_dt.timezone.utc)
    record = {"schema": 1, "measured": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), "link": p.link,
              "server": p.server, "client": p.client,
              "conditions": {"duration_s": duration, "load_avg_1m": round(os.getloadavg()[0], 2),
                             "cpus": os.cpu_count(), "host": socket.gethostname()},
              "results": {}}
    if dry_run:
        record["results"] = {pr.name: {"status": "planned", "tool": pr.tool,
                                       "server_command": on_host(p.server, pr.server) if pr.server else None,
                                       "client_command": on_host(p.client, pr.client)} for pr in p.probes}
    else:
        raw = provenance.prefix() / RAW_DIR / stamp.strftime("%Y%m%dT%H%M%SZ")
        raw.mkdir(parents=True)
        record["raw_dir"] = str(raw)
        for probe in p.probes:
            record["results"][probe.name] = run_probe(probe, p.server, p.client, raw, timeout=duration + 60)
    for name, reason in p.not_runnable.items():
        record["results"][name] = {"status": "not runnable", "reason": reason}
    record["results"] = {n: record["results"][n] for n in MEASUREMENTS if n in record["results"]}
    if not dry_run:
        target = provenance.prefix() / provenance.CALIBRATION_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(target)
        (Path(record["raw_dir"]) / "calibration.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def lines(record: dict) -> list[str]:
    """The record as `name: value` lines."""
    out = [f"calibration_link: {record['link']}"]
    for name, r in record["results"].items():
        if r["status"] == "ok":
            out.append(f"{name}: {r['value']:g}")
        elif r["status"] == "planned":
            out.append(f"{name}: planned: {' '.join(r['client_command'])}")
        else:
            out.append(f"{name}: {r['status']}: {r['reason']}")
    return out


def summary(record: dict | None) -> dict:
    """The report's row for a calibration: link, TCP and RDMA latency / bandwidth."""
    if not record:
        return {"link": "not measured (run.json has no calibration: run `make calibrate` before the runs)",
                "tcp": "", "rdma": "", "measured": ""}
    if record.get("error"):
        return {"link": f"calibration unreadable: {record['error']}", "tcp": "", "rdma": "", "measured": ""}
    results = record.get("results") or {}

    def pair(kind):
        lat, bw = results.get(f"{kind}_latency_us") or {}, results.get(f"{kind}_bandwidth_gbps") or {}
        if lat.get("status") == "ok" and bw.get("status") == "ok":
            return f"{lat['value']:.3g} µs / {bw['value']:.3g} Gb/s ({lat['tool']}, {bw['tool']})"
        bad = lat if lat.get("status") != "ok" else bw
        return f"{bad.get('status', 'not measured')}: {bad.get('reason', '')}".rstrip(": ")

    return {"link": record.get("link", ""), "tcp": pair("tcp"), "rdma": pair("rdma"),
            "measured": f"{record.get('measured', '')}, load {record.get('conditions', {}).get('load_avg_1m', '?')}"}


def register(parser) -> None:
    parser.add_argument("--duration", type=int, default=5, help="seconds per TCP measurement (default 5)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print where each measurement would run and its commands; run nothing")


def run(args) -> int:
    record = calibrate(args.duration, args.dry_run)
    print("\n".join(lines(record)))
    if not args.dry_run:
        print(f"calibration_file: {provenance.prefix() / provenance.CALIBRATION_FILE}")
    failed = [n for n, r in record["results"].items() if r["status"] == "failed"]
    return 1 if failed else 0
