"""`dlobd calibrate`: the tools' outputs parsed, what runs where, the papers' clusters.

sockperf and iperf3 outputs are real (tests/data/logs/calibrate/, from `make calibrate` on this
machine over loopback). perftest and the OSU micro-benchmarks cannot run here (no HCA): their
outputs below are written in the formats of their sources, not captured:
- perftest: the header RESULT_FMT_LAT / RESULT_FMT_G and the rows REPORT_FMT_LAT / REPORT_FMT of
  linux-rdma/perftest src/perftest_parameters.h, under the RESULT_LINE rule;
- OSU: the `# OSU MPI ... Test v<version>` header, then `%-*s%*s` of "# Size" and
  "Latency (us)" / "Bandwidth (MB/s)", then `%-*d%*.*f` rows, as in osu_util of the OMB sources.
Nothing here sends traffic but to loopback: the plans for other hosts are built, never run.
"""

import json
import sys

import pytest
import yaml

from dlobd import ROOT, spec
from dlobd.cluster import calibrate, fabric, provenance
from rundirs import LOGS

DATA = LOGS / "calibrate"

IB_SEND_LAT = """\
---------------------------------------------------------------------------------------
                    Send Latency Test
 Dual-port       : OFF          Device         : mlx5_0
 Number of qps   : 1            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 64      10000          1.02           5.31         1.06     	       1.07        	0.05		1.21 		5.31   
---------------------------------------------------------------------------------------
"""
IB_WRITE_BW = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 1048576    5000             96.41              96.38		   0.011490
---------------------------------------------------------------------------------------
"""
OSU_LATENCY = "# OSU MPI Latency Test v5.9\n# Size          Latency (us)\n64                      1.42\n"
OSU_BW = "# OSU MPI Bandwidth Test v5.9\n# Size      Bandwidth (MB/s)\n1048576             12051.77\n"


def test_sockperf_and_iperf3_outputs_of_a_real_loopback_run():
    lat = calibrate.parse_sockperf((DATA / "sockperf-ping-pong-loopback.txt").read_text())
    assert lat == {"value": 7.215, "avg_us": 13.748, "p99_us": 23.96, "observations": 165330,
                   "version": "3.7-no.git"}
    bw = calibrate.parse_iperf3((DATA / "iperf3-loopback.json").read_text())
    assert round(bw["value"], 3) == 20.989 and bw["version"] == "iperf 3.12"


def test_damaged_or_failed_tool_output_is_an_error_naming_the_tool():
    text = (DATA / "sockperf-ping-pong-loopback.txt").read_text()
    with pytest.raises(calibrate.CalibrationError, match="sockperf: no latency summary"):
        calibrate.parse_sockperf(text[:text.index("percentile 50.000")])
    with pytest.raises(calibrate.CalibrationError, match="iperf3: unable to connect to server: Connection refused"):
        calibrate.parse_iperf3((DATA / "iperf3-refused.json").read_text())
    with pytest.raises(calibrate.CalibrationError, match="iperf3: output is not its JSON report"):
        calibrate.parse_iperf3((DATA / "iperf3-loopback.json").read_text()[:500])
    with pytest.raises(calibrate.CalibrationError, match="ib_send_lat: no result row"):
        calibrate.parse_ib_send_lat(IB_SEND_LAT.split(" 64 ")[0])
    with pytest.raises(calibrate.CalibrationError, match="osu_bw: no row for 1048576 bytes"):
        calibrate.parse_osu(OSU_BW.replace("1048576 ", "524288  "), 1 << 20, "osu_bw")


def test_perftest_and_osu_outputs_in_their_sources_formats():
    assert calibrate.parse_ib_send_lat(IB_SEND_LAT) == {"value": 1.06, "avg_us": 1.07, "p99_us": 1.21,
                                                       "message_bytes": 64}
    assert calibrate.parse_ib_write_bw(IB_WRITE_BW) == {"value": 96.38, "message_bytes": 1 << 20}
    mb = IB_WRITE_BW.replace("[Gb/sec]", "[MB/sec]")
    assert calibrate.parse_ib_write_bw(mb)["value"] == pytest.approx(96.38 * 8 / 1000)
    assert calibrate.parse_osu(OSU_LATENCY, 64, "osu_latency") == {"value": 1.42, "message_bytes": 64}
    assert calibrate.parse_osu(OSU_BW, 1 << 20, "osu_bw", 8 / 1000)["value"] == pytest.approx(96.414, abs=1e-3)


def fingerprint(tmp_path, host, layer="InfiniBand", ipv4="192.168.100.2"):
    fp = fabric.detect(tmp_path / "no-sys", fabric.Tools(), host=host)
    if layer:
        fp["infiniband"] = {"hcas": [{"device": "mlx5_0", "ports": [
            {"port": 1, "state": "ACTIVE", "rate_gbps": 100.0, "link_layer": layer, "netdev": "ib0",
             "ipv4": [ipv4]}]}]}
    return fp


TCP_TOOLS = {"sockperf": "/usr/bin/sockperf", "iperf3": "/usr/bin/iperf3"}
PERFTEST = {"ib_send_lat": "/usr/bin/ib_send_lat", "ib_write_bw": "/usr/bin/ib_write_bw"}


def test_one_host_measures_tcp_over_loopback_and_says_why_not_rdma(tmp_path):
    server, client = calibrate.endpoints(["127.0.0.1"])
    assert (server, client) == ("127.0.0.1", "127.0.0.1")
    ports = {"sockperf": 40001, "iperf3": 40002, "ib_send_lat": 40003, "ib_write_bw": 40004}
    p = calibrate.plan(server, client, {server: fingerprint(tmp_path, "vm", layer=None)},
                       {server: TCP_TOOLS}, ports, duration=3)
    assert p.link.startswith("loopback (one host: ")
    assert [(pr.name, pr.server, pr.client) for pr in p.probes] == [
        ("tcp_latency_us", ["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", "40001"],
         ["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", "40001", "-t", "3", "-m", "64"]),
        ("tcp_bandwidth_gbps", ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", "40002"],
         ["iperf3", "-c", "127.0.0.1", "-p", "40002", "-t", "3", "-J"])]
    reason = p.not_runnable["rdma_latency_us"]
    assert "no HCA with an ACTIVE port on " in reason and "fabric.json: no InfiniBand HCA; no GPU" in reason
    assert "neither perftest (ib_send_lat, ib_write_bw) nor the OSU micro-benchmarks" in reason
    bare = calibrate.plan(server, client, {}, {server: {}}, ports)
    assert bare.probes == [] and bare.not_runnable["tcp_bandwidth_gbps"].startswith("not installed: iperf3, sockperf")
    assert "no fabric.json: run the fabric role" in bare.not_runnable["rdma_bandwidth_gbps"]


def test_two_emulated_workers_run_each_side_over_ssh_on_their_own_host(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "is_local_address", lambda host: host.startswith("127."))
    server, client = calibrate.endpoints(["10.77.0.2", "10.77.0.3", "10.77.0.4", "10.77.0.2"])
    assert (server, client) == ("10.77.0.2", "10.77.0.3")
    fps = {h: fingerprint(tmp_path, h, layer=None) for h in (server, client)}
    p = calibrate.plan(server, client, fps, {server: TCP_TOOLS, client: TCP_TOOLS},
                       emulated="emulated Ethernet eth-10g (veth + tbf 10000mbit)")
    assert p.link == "emulated Ethernet eth-10g (veth + tbf 10000mbit) (10.77.0.2 -> 10.77.0.3)"
    for probe in p.probes:
        s_argv, c_argv = calibrate.on_host(server, probe.server), calibrate.on_host(client, probe.client)
        assert s_argv[:5] == ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"]
        assert s_argv[5] == "10.77.0.2" and c_argv[5] == "10.77.0.3"
        # the client aims at the server's cluster address, on the tool's own port
        assert "10.77.0.2" in c_argv[-1] and str(calibrate.DEFAULT_PORTS[probe.tool]) in c_argv[-1]
        assert "127.0.0.1" not in " ".join(s_argv + c_argv)
    assert "no HCA with an ACTIVE port on 10.77.0.2" in p.not_runnable["rdma_latency_us"]


def test_an_infiniband_cluster_gets_ipoib_and_perftest_or_osu(tmp_path):
    server, client = "192.168.100.2", "192.168.100.3"
    fps = {server: fingerprint(tmp_path, "node02", ipv4=server), client: fingerprint(tmp_path, "node03", ipv4=client)}
    tools = {h: {**TCP_TOOLS, **PERFTEST} for h in (server, client)}
    p = calibrate.plan(server, client, fps, tools)
    assert p.link == "IPoIB ib0 (mlx5_0 port 1 100 Gb/s; 192.168.100.2 -> 192.168.100.3)"
    assert p.not_runnable == {}
    lat, bw = (pr for pr in p.probes if pr.transport == "rdma")
    assert lat.server == ["ib_send_lat", "-d", "mlx5_0", "-i", "1", "-s", "64", "-n", "10000", "-p", "18515", "-F"]
    assert lat.client == [*lat.server, server]
    assert bw.client == ["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-s", "1048576", "-n", "5000", "--report_gbits",
                         "-p", "18516", "-F", server]
    # a RoCE port connects through rdma_cm
    roce = {h: fingerprint(tmp_path, h, layer="Ethernet", ipv4=h) for h in (server, client)}
    assert calibrate.plan(server, client, roce, tools).probes[2].server[-1] == "-R"
    # without perftest, the OSU benchmarks under the client's mpirun, one rank per host
    osu_tools = {server: TCP_TOOLS, client: {**TCP_TOOLS, "mpirun": "/usr/bin/mpirun",
                                              "osu_latency": "/opt/omb/osu_latency", "osu_bw": "/opt/omb/osu_bw"}}
    osu = [pr for pr in calibrate.plan(server, client, fps, osu_tools).probes if pr.transport == "rdma"]
    assert [pr.server for pr in osu] == [None, None]
    assert osu[0].client == ["mpirun", "-np", "2", "-host", f"{client},{server}", "/opt/omb/osu_latency", "-m", "64:64"]


def test_a_probe_retries_until_its_server_listens_then_stops_it(tmp_path):
    """A server that listens only after a pause and a client that fails until then: real processes
    on loopback, standing in for sockperf's pair."""
    from dlobd.cluster.remote import free_ports

    [port] = free_ports(1)
    server = [sys.executable, "-c", (
        "import socket, time\ntime.sleep(1)\ns = socket.socket()\n"
        f"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', {port}))\n"
        "s.listen()\nprint('listening', flush=True)\nwhile True:\n    c, _ = s.accept()\n    c.sendall(b'pong')\n    c.close()\n")]
    client = [sys.executable, "-c", (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}))\n"
        "print('sockperf: ---> percentile 50.000 = 5.500')\nprint('sockperf: ====> avg-latency=6.000 (std-dev=1.0)')\n"
        "print(s.recv(4).decode())\n")]
    probe = calibrate.Probe("tcp_latency_us", "us", "stand-in", "tcp", "test", server, client, calibrate.parse_sockperf)
    raw = tmp_path / "raw"
    raw.mkdir()
    result = calibrate.run_probe(probe, "127.0.0.1", "127.0.0.1", raw, timeout=60)
    assert result["status"] == "ok" and result["value"] == 5.5
    log = (raw / "tcp_latency_us.client.log").read_text()
    assert log.count("# attempt ") >= 2 and "Connection refused" in log
    assert "listening" in (raw / "tcp_latency_us.server.log").read_text()
    with pytest.raises(FileExistsError):  # raw logs are never overwritten
        calibrate.run_probe(probe, "127.0.0.1", "127.0.0.1", raw, timeout=60)


def test_lines_and_summary_of_the_real_record():
    record = json.loads((DATA / "calibration.json").read_text())
    lines = calibrate.lines(record)
    assert lines[:3] == ["calibration_link: loopback (one host: vm)", "tcp_latency_us: 7.215",
                         "tcp_bandwidth_gbps: 20.989"]
    assert lines[3].startswith("rdma_latency_us: not runnable: no HCA with an ACTIVE port on vm")


def test_every_cluster_a_spec_names_is_in_config_clusters_yaml():
    clusters = calibrate.paper_clusters()
    used = {}
    for eid, s in spec.load_all(ROOT).items():
        for scale, data in (s.data.get("scales") or {}).items():
            if (data or {}).get("cluster"):
                used.setdefault(data["cluster"], []).append(f"{eid} ({scale})")
    assert used, "no spec names a cluster"
    missing = {c: ids for c, ids in used.items() if c not in clusters}
    assert not missing, f"clusters named by specs but not in config/clusters.yaml: {missing}"
    for cid, cluster in clusters.items():
        for field, fact in cluster.items():
            if field not in ("name", "paper", "where"):
                assert fact["where"], (cid, field)


def test_a_clusters_file_without_where_is_refused_naming_the_place(tmp_path):
    data = yaml.safe_load((ROOT / "config/clusters.yaml").read_text())
    del data["clusters"]["dlobd-cluster-A-ri2"]["where"]
    bad = tmp_path / "clusters.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(calibrate.CalibrationError, match=r"clusters\.dlobd-cluster-A-ri2: 'where' is a required property"):
        calibrate.paper_clusters(bad)
    assert calibrate.paper_fabric("dlobd-cluster-A-ri2") == {
        "name": 'OSU RI2 ("Cluster A" of the DLoBD paper), 20 nodes',
        "network": "Mellanox single-port InfiniBand EDR HCA, 100 Gb/s",
        "gpus": "NVIDIA Tesla K80 (one per node)", "where": "DLoBD Sec. 4.1, item (1)"}
