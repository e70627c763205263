"""TF-gRPC-Bench (workloads/tf-grpc-bench): payload generation, option errors, short real
runs of every benchmark and of the TCP baseline on loopback, the grpcbench parser on their
output, and the launcher through dlobd.execution.runs. The suite is built (cmake) on first use into
the same directory the launcher uses."""

import collections
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from dlobd import stacks
from dlobd.execution import runs
from dlobd.stacks import grpcbench
from dlobd.cluster.remote import ssh_argv
from dlobd.cluster import capabilities
from dlobd import NotRunnable

ROOT = Path(__file__).resolve().parent.parent
SHORT = ["--port", "0", "--warmup", "0.2", "--duration", "0.5"]


@pytest.fixture(scope="module")
def binary():
    return grpcbench.build()


def tgb(binary, *args, timeout=60):
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def header(binary, *args) -> dict:
    proc = tgb(binary, "payload", *args)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)


def layout(binary, *args):
    h = header(binary, *args)
    return h["buffer_categories"].split(","), [int(s) for s in h["buffer_sizes"].split(",")]


# ---------------------------------------------------------------- payload generation

def test_skew_default_is_60_30_10_towards_large(binary):
    cats, sizes = layout(binary, "--scheme", "skew")
    assert collections.Counter(cats) == {"L": 6, "M": 3, "S": 1}
    assert {c: s for c, s in zip(cats, sizes)} == {"L": 1048576, "M": 10240, "S": 10}


@pytest.mark.parametrize("bias, expected", [
    ("small", {"S": 12, "M": 6, "L": 2}),
    ("medium", {"M": 12, "L": 6, "S": 2}),
    ("large", {"L": 12, "M": 6, "S": 2}),
])
def test_skew_biased_variants(binary, bias, expected):
    cats, _ = layout(binary, "--scheme", "skew", "--skew-bias", bias, "--buffers", 20)
    assert collections.Counter(cats) == expected


def test_skew_custom_mix_and_two_categories(binary):
    cats, _ = layout(binary, "--scheme", "skew", "--skew-mix", "50,30,20", "--buffers", 10)
    assert collections.Counter(cats) == {"L": 5, "M": 3, "S": 2}
    cats, _ = layout(binary, "--scheme", "skew", "--categories", "small,large", "--buffers", 9)
    assert collections.Counter(cats) == {"L": 6, "S": 3}  # 60:30 of nine buffers


def test_uniform_spreads_the_chosen_categories_evenly(binary):
    cats, sizes = layout(binary, "--scheme", "uniform")
    assert cats == ["S", "M", "L"] * 3 + ["S"]
    assert sizes[:3] == [10, 10240, 1048576]
    cats, sizes = layout(binary, "--categories", "large", "--buffers", 4, "--large-bytes", 2097152)
    assert cats == ["L"] * 4 and sizes == [2097152] * 4


def test_random_is_seeded_and_spreads_all_categories(binary):
    a = layout(binary, "--scheme", "random", "--buffers", 3000, "--seed", 7)
    assert a == layout(binary, "--scheme", "random", "--buffers", 3000, "--seed", 7)
    assert a != layout(binary, "--scheme", "random", "--buffers", 3000, "--seed", 8)
    counts = collections.Counter(a[0])
    assert set(counts) == {"S", "M", "L"}
    assert all(abs(n / 3000 - 1 / 3) < 0.04 for n in counts.values())
    cats, _ = layout(binary, "--scheme", "random", "--categories", "small,medium", "--buffers", 50)
    assert set(cats) == {"S", "M"}


def test_custom_sizes_and_counts(binary):
    cats, sizes = layout(binary, "--scheme", "custom", "--sizes", "2,2048,8388608")
    assert (cats, sizes) == (["S", "M", "L"], [2, 2048, 8388608])
    h = header(binary, "--scheme", "custom", "--counts", "small=1,large=2")
    assert h["buffer_sizes"] == "10,1048576,1048576" and h["payload_bytes"] == "2097162"


@pytest.mark.parametrize("args, message", [
    (["--scheme", "zipf"], "unknown payload scheme 'zipf'"),
    (["--small-bytes", 1024], "--small-bytes 1024: outside the small category's range [1, 1023]"),
    (["--medium-bytes", 1023], "outside the medium category's range [1024, 1048575]"),
    (["--large-bytes", 10485761], "outside the large category's range [1048576, 10485760]"),
    (["--buffers", 0], "--buffers 0: a payload needs at least one iovec buffer"),
    (["--scheme", "custom", "--sizes", "0"], "--sizes 0: outside every category's range"),
    (["--scheme", "random", "--categories", "large"], "needs at least two buffer categories"),
    (["--scheme", "skew", "--skew-mix", "50,40"], "--skew-mix needs three percentages"),
    (["--benchmark", "p2p-echo"], "unknown benchmark 'p2p-echo'"),
    (["--workers", 3], "p2p-latency is point-to-point"),
    (["--duration", 0], "--duration"),
    (["--rpc", "rdma"], "unknown rpc 'rdma' (expected unary or streaming)"),
    (["--rpc", "streaming", "--mode", "serialized"],
     "--rpc streaming: only with --mode non-serialized"),
    (["--rpc", "streaming", "--benchmark", "ps-throughput"],
     "--rpc streaming: only for p2p-latency and p2p-bandwidth"),
])
def test_bad_options_fail_with_a_clear_message(binary, args, message):
    for command in ("payload", "run"):
        proc = tgb(binary, command, *args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith("error: ") and message in proc.stderr


def test_unreachable_ps_fails_within_the_timeout_naming_it(binary):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = tgb(binary, "run", "--ps", f"127.0.0.1:{port}", "--timeout", "1.5")
    took = time.monotonic() - start
    assert proc.returncode == 2
    assert f"cannot reach parameter server 127.0.0.1:{port} within 1.5 s" in proc.stderr
    assert 1.4 < took < 4


# ---------------------------------------------------------------- real runs, parsed

def run_parsed(binary, *args, command="run"):
    proc = tgb(binary, command, *SHORT, *args)
    assert proc.returncode == 0, proc.stderr
    result = grpcbench.parse(proc.stdout)
    assert (result.status, result.finished, result.reason) == ("ok", True, None)
    return proc.stdout, result


def values(result, metric, **where):
    return [r["value"] for r in result.rows if r["metric"] == metric
            and all(r.get(k) == v for k, v in where.items())]


def test_p2p_latency_skew_runs_and_parses(binary):
    text, r = run_parsed(binary, "--scheme", "skew", "--repeats", 2)
    assert r.meta["benchmark"] == "p2p-latency" and r.meta["payload_bytes"] == "6322186"
    mean, p50, p99 = (values(r, m) for m in ("latency_us", "latency_p50_us", "latency_p99_us"))
    assert len(mean) == len(p50) == len(p99) == 2
    assert all(0 < a <= b for a, b in zip(p50, p99))
    assert [row["step"] for row in r.rows if row["metric"] == "latency_us"] == [1, 2]
    rows = [line.split() for line in text.splitlines() if line.startswith("row total")]
    assert all(int(f[4]) > 0 and f[4] == f[13] for f in rows)  # every call verified


def test_p2p_latency_serialized_splits_serialization(binary):
    _, r = run_parsed(binary, "--mode", "serialized", "--scheme", "custom", "--sizes", 65536)
    ser = values(r, "latency_us", operation="serialization")
    comm = values(r, "latency_us", operation="communication")
    assert len(ser) == len(comm) == 1 and ser[0] > 0 and comm[0] > 0


def test_p2p_bandwidth_runs_and_parses(binary):
    _, r = run_parsed(binary, "--benchmark", "p2p-bandwidth", "--scheme", "uniform",
                      "--categories", "large", "--buffers", 4)
    (mb,) = values(r, "bandwidth_mb_per_s")
    assert mb > 10


def test_ps_throughput_two_ps_three_workers(binary):
    text, r = run_parsed(binary, "--benchmark", "ps-throughput", "--parameter-servers", 2,
                         "--workers", 3, "--scheme", "random", "--buffers", 4)
    assert len(r.meta["ps"].split(",")) == 2
    workers = [line.split() for line in text.splitlines() if line.startswith("row worker")]
    assert [w[3] for w in workers] == ["0", "1", "2"]
    (calls,) = values(r, "rpc_calls_per_s")
    assert calls == pytest.approx(sum(float(w[12]) for w in workers), rel=1e-3)
    assert all(int(w[4]) % 2 == 0 for w in workers)  # each round calls both servers


def test_tcp_baseline_runs_and_parses(binary):
    _, ping = run_parsed(binary, "--scheme", "custom", "--sizes", 10, command="tcp-pingpong")
    assert values(ping, "latency_p50_us", operation="tcp")[0] > 0
    _, stream = run_parsed(binary, "--categories", "large", "--buffers", 2, command="tcp-stream")
    assert values(stream, "bandwidth_mb_per_s", operation="tcp")[0] > 10


class CorruptingProxy(threading.Thread):
    """A loopback TCP relay that flips one byte of the client's stream past `offset`."""

    def __init__(self, target_port, offset):
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target_port, self.offset = target_port, offset

    def pump(self, src, dst, corrupt):
        seen = 0
        try:
            while data := src.recv(65536):
                if corrupt and seen <= self.offset < seen + len(data):
                    i = self.offset - seen
                    data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
                seen += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            dst.close()

    def run(self):
        client, _ = self.listener.accept()
        server = socket.create_connection(("127.0.0.1", self.target_port))
        threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()
        self.pump(client, server, True)


@pytest.mark.parametrize("rpc, benchmark, what", [
    ("unary", "p2p-latency", "echo"),
    ("streaming", "p2p-latency", "echo"),
    ("streaming", "p2p-bandwidth", "acknowledgement"),  # the PS's checksum of what came
])
def test_a_corrupted_echo_is_caught_by_the_checksum(binary, rpc, benchmark, what):
    ps = subprocess.Popen([str(binary), "ps", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                          text=True)
    try:
        port = int(ps.stdout.readline().split(":")[-1])
        proxy = CorruptingProxy(port, offset=300_000)  # inside the first payload's data
        proxy.start()
        proc = tgb(binary, "run", *SHORT[2:], "--ps", f"127.0.0.1:{proxy.port}", "--rpc", rpc,
                   "--benchmark", benchmark, "--categories", "large", "--buffers", 1)
        assert proc.returncode == 2
        assert re.search(rf"{what} from 127.0.0.1:{proxy.port}: checksum mismatch", proc.stderr)
    finally:
        ps.terminate()
        ps.wait(timeout=10)


def test_streaming_p2p_runs_parse_labelled(binary):
    _, unary = run_parsed(binary, "--scheme", "custom", "--sizes", 10)
    assert unary.meta["rpc"] == "unary"
    assert all("operation" not in r for r in unary.rows)
    text, lat = run_parsed(binary, "--rpc", "streaming", "--scheme", "custom", "--sizes", 10)
    assert lat.meta["rpc"] == "streaming"
    assert {r["operation"] for r in lat.rows} == {"streaming"}
    assert 0 < values(lat, "latency_p50_us")[0] <= values(lat, "latency_p99_us")[0]
    rows = [line.split() for line in text.splitlines() if line.startswith("row total")]
    assert all(int(f[4]) > 0 and f[4] == f[13] for f in rows)  # every message verified
    _, bw = run_parsed(binary, "--rpc", "streaming", "--benchmark", "p2p-bandwidth",
                       "--categories", "large", "--buffers", 2)
    assert values(bw, "bandwidth_mb_per_s", operation="streaming")[0] > 10


@pytest.mark.parametrize("rpc, message", [
    ("unary", "call to parameter server {} failed: Deadline Exceeded"),
    ("streaming", "stream to parameter server(s) {}: no reply within 1.5 s"),
])
def test_a_ps_that_stops_answering_fails_within_the_timeout(binary, rpc, message):
    ps = subprocess.Popen([str(binary), "ps", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                          text=True)
    try:
        address = ps.stdout.readline().split()[-1]
        worker = subprocess.Popen([str(binary), "worker", "--ps", address, "--rpc", rpc,
                                   "--warmup", "0.3", "--duration", "5", "--timeout", "1.5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.6)  # calls are flowing
        ps.send_signal(signal.SIGSTOP)
        start = time.monotonic()
        _, err = worker.communicate(timeout=30)
        took = time.monotonic() - start
        assert worker.returncode == 2 and message.format(address) in err, err
        assert took < 4  # the 1.5 s timeout, not the 5 s duration
    finally:
        ps.send_signal(signal.SIGCONT)
        ps.terminate()
        ps.wait(timeout=10)


# ---------------------------------------------------------------- parser on damaged output

@pytest.fixture(scope="module")
def real_output(binary):
    proc = tgb(binary, "run", *SHORT[:2], "--warmup", "0.1", "--duration", "0.3",
               "--repeats", 2, "--scheme", "custom", "--sizes", 100)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cut_output_keeps_complete_repeats(real_output):
    lines = real_output.splitlines(keepends=True)
    whole = grpcbench.parse(real_output)
    cut = grpcbench.parse("".join(lines[:-1]))  # without `end: ok`
    assert cut.status == "ok" and not cut.finished and "no 'end: ok' line" in cut.reason
    assert cut.rows == whole.rows
    half = grpcbench.parse("".join(lines[:-2]) + lines[-2][:20])
    assert "cut mid-line" in half.reason and len(half.rows) == len(whole.rows) // 2


def test_concatenated_or_other_version_output_is_unparseable(real_output):
    twice = grpcbench.parse(real_output + real_output)
    assert twice.status == "unparseable" and "interleaved or concatenated" in twice.reason
    other = grpcbench.parse(real_output.replace("tf-grpc-bench-output: 1", "tf-grpc-bench-output: 2"))
    assert other.status == "unparseable" and "format version '2'" in other.reason
    bad = grpcbench.parse(real_output.replace("row total 1 all ", "row total 1 all x", 1))
    assert bad.status == "unparseable" and re.search(r"line \d+: calls 'x\d+'", bad.reason)


# ---------------------------------------------------------------- launcher

def spec(name):
    return yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())


def test_launcher_maps_points_to_options():
    data = spec("slides-rdma-grpc-latency-small")
    argv = grpcbench.command("tgb", data["scales"]["local"]["fixed"],
                             {"network": "loopback", "payload_bytes": 32})
    assert argv[argv.index("--scheme") + 1] == "custom" and argv[argv.index("--sizes") + 1] == "32"
    assert argv[2:6] == ["--host", "127.0.0.1", "--port", "0"]
    across = grpcbench.command("tgb", {"parameter_servers": 2}, {"network": "eth-10g-emulated"},
                               ps=["10.0.0.2:5001", "10.0.0.3:5002"])
    assert across[1:4] == ["run", "--ps", "10.0.0.2:5001,10.0.0.3:5002"] and "--host" not in across
    with pytest.raises(ValueError, match="parameter 'colour' is not a tf-grpc-bench option"):
        grpcbench.command("tgb", {"colour": "red"}, {"network": "loopback"})


def test_launch_one_point_end_to_end(binary, tmp_path):
    data = spec("tfgrpc-fig13")
    data["scales"]["local"]["fixed"].update(warmup_s=0.2, duration_s=0.5, repeats=1)
    attempt = runs.launch(data, "local", {"network": "loopback", "payload_scheme": "skew"},
                          tmp_path, cluster="local")
    record = runs.read_attempt(attempt, tmp_path).record
    assert record["status"] == "ok", record.get("reason")
    version = tgb(binary.parent / grpcbench.FLOOR, "version").stdout.split(": ")[1].strip()
    assert record["versions"]["grpc"] == version  # the library the run's programs ran with
    assert record["versions"]["stack"] == f"tf-grpc-bench 1 (grpc++ {version})"
    assert "--parameter-servers" in record["command"] and record["labels"]["data"] == "synthetic"
    assert record["hosts"] == [{"name": "localhost", "address": "127.0.0.1",
                                "roles": ["ps:0", "ps:1", "worker:0", "worker:1", "worker:2"]}]
    result = stacks.parse_run("grpcbench", attempt)
    assert result.finished and [r["metric"] for r in result.rows] == [
        "rpc_calls_per_s", "bandwidth_mb_per_s"]
    assert result.meta["scheme"] == "skew" and result.meta["workers"] == "3"


def test_placement_keeps_parameter_servers_and_workers_on_different_hosts():
    assert grpcbench.placement(1, ["a", "b"]) == (["a"], "b")
    assert grpcbench.placement(2, ["a", "b", "c"]) == (["a", "b"], "c")
    assert grpcbench.placement(3, ["a", "b", "c"]) == (["a", "b", "a"], "c")
    with pytest.raises(NotRunnable, match="needs two worker hosts; the cluster has a$"):
        grpcbench.placement(1, ["a"])


@pytest.fixture
def two_host_cluster(monkeypatch, tmp_path):
    """A cluster of two workers linked by eth-10g-emulated whose hosts are 127.0.0.2 and
    127.0.0.3 of this machine: the launcher's ssh commands run here through bash."""
    from dlobd.cluster import provenance

    env = {"DLOBD_WORKERS": "127.0.0.2 127.0.0.3", "DLOBD_EMULATED_NETWORK": "eth-10g-emulated",
           "DLOBD_EMULATED_LINK": "emulated Ethernet eth-10g (veth + tbf 10000mbit)"}
    monkeypatch.setattr(provenance, "prefix_env", lambda: env)
    monkeypatch.setattr(provenance, "prefix", lambda: tmp_path / "prefix")
    # the hosts' own dlobd-env.sh, which their commands source
    (tmp_path / "prefix" / "etc").mkdir(parents=True)
    (tmp_path / "prefix" / "etc" / "dlobd-env.sh").write_text("export DLOBD_PREFIX=" + str(tmp_path / "prefix") + "\n")
    hosts = []

    def ssh_here(host, cwd, env, argv):
        hosts.append(host)
        return ["bash", "-c", ssh_argv(host, cwd, env, argv)[-1]]

    monkeypatch.setattr(grpcbench, "ssh_argv", ssh_here)
    capabilities.local_capabilities.cache_clear()
    yield hosts
    capabilities.local_capabilities.cache_clear()


def test_a_point_across_hosts_runs_servers_on_one_host_and_workers_on_another(
        binary, tmp_path, two_host_cluster):
    (tmp_path / "prefix" / "tf-grpc-bench" / "bin").mkdir(parents=True)
    (tmp_path / "prefix" / "tf-grpc-bench" / "bin" / grpcbench.BINARY).symlink_to(binary)
    data = spec("tfgrpc-fig14")
    data["scales"]["local"]["fixed"].update(warmup_s=0.2, duration_s=0.5, repeats=1)
    runs_dir = tmp_path / "runs"
    attempt = runs.launch(data, "local", {"network": "eth-10g-emulated", "payload_scheme": "skew"},
                          runs_dir, cluster="emulated")
    record = runs.read_attempt(attempt, runs_dir).record
    assert record["status"] == "ok", record.get("reason")
    assert two_host_cluster == ["127.0.0.2", "127.0.0.2", "127.0.0.3"]
    assert [(h["address"], h["roles"]) for h in record["hosts"]] == [
        ("127.0.0.2", ["ps:0", "ps:1"]), ("127.0.0.3", ["worker:0", "worker:1", "worker:2"])]
    assert record["labels"]["emulated"] == "true" and record["labels"]["network"] == "eth-10g-emulated"
    result = stacks.parse_run("grpcbench", attempt)
    assert result.finished and result.meta["workers"] == "3"
    # the workers called the servers the launcher started, each on the port its host picked
    listening = [(attempt / "servers" / f"ps-{i}.log").read_text().split()[1] for i in range(2)]
    assert all(a.startswith("127.0.0.2:") for a in listening)
    assert result.meta["ps"] == ",".join(listening)
    # the servers ended with the run
    assert not [p for p in psutil.process_iter(["cmdline"])
                if "127.0.0.2:0" in (p.info["cmdline"] or [])]


def test_a_server_that_cannot_start_fails_the_point_naming_its_host(tmp_path, two_host_cluster):
    # no tf_grpc_bench under the prefix of the server's host
    data = spec("tfgrpc-fig9")
    runs_dir = tmp_path / "runs"
    attempt = runs.launch(data, "local", {"network": "eth-10g-emulated", "payload_scheme": "skew"},
                          runs_dir, cluster="emulated")
    record = runs.read_attempt(attempt, runs_dir).record
    assert record["status"] == "failed"
    assert "parameter server 0 on 127.0.0.2 exited with status 127 before listening" in record["reason"]
    assert (attempt / "servers" / "ps-0.log").is_file()


def test_a_tier_the_cluster_lacks_is_not_runnable(tmp_path, two_host_cluster):
    data = spec("rdmatf-fig1")
    attempt = runs.launch(data, "local", {"network": "eth-1g-emulated", "workers": 2},
                          tmp_path, cluster="emulated")
    record = runs.read_attempt(attempt, tmp_path).record
    assert record["status"] == "not runnable"
    assert "needs eth-1g-emulated: the hosts are linked by emulated Ethernet eth-10g" in record["reason"]


# ---------------------------------------------------------------- iovec capture (tfgrpc-fig4)

@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_iovec_capture_counts_what_grpc_hands_to_sendmsg(binary, tmp_path):
    trace = tmp_path / "trace.txt"
    proc = subprocess.run(["strace", *grpcbench.STRACE_ARGS, "-o", str(trace), str(binary), "run",
                           *SHORT, "--scheme", "custom", "--sizes", "10,2000000"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = trace.read_text()
    r = grpcbench.parse(text)
    assert (r.status, r.finished) == ("ok", True) and r.meta["sendmsg_calls"] > 0
    counts = {row["size_class"]: row["value"] for row in r.rows}
    # the worker's 2 MB buffer goes out as one iovec per call; nothing else is that large
    assert counts["large"] == text.count("iov_len=2000000}") > 0
    assert counts["small"] > 0 and sum(counts.values()) == len(re.findall(r"iov_len=\d+", text))
    cut = text.replace("msg_iovlen=2,", "msg_iovlen=3,", 1)
    assert "iovecs printed" in grpcbench.parse(cut).reason


# ---------------------------------------------------------------- the floor and make bench-grpc

def floor_server(binary):
    proc = subprocess.Popen([str(binary.parent / grpcbench.FLOOR), "serve", "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening 127.0.0.1:"), line
    return proc, line.split()[1]


def test_floor_echoes_what_it_is_sent(binary):
    proc = tgb(binary.parent / grpcbench.FLOOR, "run", "--warmup", "0.1", "--duration", "0.3",
               "--message", "floor-echo-\u00e9-42")
    assert proc.returncode == 0, proc.stderr
    result = grpcbench.parse(proc.stdout)
    assert result.status == "ok" and result.finished, result.reason
    assert result.meta["benchmark"] == "grpc-floor" and result.meta["reply"] == "floor-echo-\u00e9-42"
    assert result.meta["payload_bytes"] == str(len("floor-echo-\u00e9-42".encode()))
    p50 = values(result, "latency_p50_us", operation="floor")
    assert len(p50) == 1 and p50[0] > 0


def test_floor_server_echoes_every_byte_the_suite_checks(binary):
    # the suite's worker checks each echo against its payload's checksum (ten buffers, 1 MiB
    # among them), so the floor's server is verified byte for byte by code it does not share
    server, address = floor_server(binary)
    try:
        proc = tgb(binary, "worker", "--ps", address, "--benchmark", "p2p-latency",
                   "--scheme", "skew", "--warmup", "0.1", "--duration", "0.3")
    finally:
        server.terminate()
        assert server.wait(timeout=10) == 0
    assert proc.returncode == 0, proc.stderr
    calls, verified = (int(proc.stdout.split()[i]) for i in (1, 8))
    assert calls > 0 and verified == calls


def test_floor_fails_clearly_on_an_unreachable_server(binary):
    proc = tgb(binary.parent / grpcbench.FLOOR, "ping", "--ps", f"127.0.0.1:{free_port()}",
               "--timeout", "1")
    assert proc.returncode == 2 and "cannot reach 127.0.0.1:" in proc.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BENCH_RATIOS = ("p2p_latency_small_vs_grpc_floor_ratio", "p2p_latency_small_vs_tcp_ratio",
                "p2p_latency_small_streaming_vs_tcp_ratio", "p2p_bandwidth_large_vs_tcp_ratio")


def test_bench_grpc_prints_every_ratio_against_the_floor_and_tcp(binary, tmp_path):
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "python"),
                           str(ROOT / "benchmarks" / "grpc" / "bench_grpc.py"),
                           "--repeats", "2", "--warmup", "0.1", "--duration", "0.3",
                           "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    got = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    pairs = {"p2p_latency_small_vs_grpc_floor_ratio": ("p2p_latency_small_p50_us",
                                                       "grpc_floor_small_p50_us"),
             "p2p_latency_small_vs_tcp_ratio": ("p2p_latency_small_p50_us",
                                                "tcp_pingpong_small_p50_us"),
             "p2p_latency_small_streaming_vs_tcp_ratio": ("p2p_latency_small_streaming_p50_us",
                                                          "tcp_pingpong_small_p50_us"),
             "p2p_bandwidth_large_vs_tcp_ratio": ("p2p_bandwidth_large_mb_per_s",
                                                  "tcp_stream_large_mb_per_s")}
    for ratio in BENCH_RATIOS:  # a ratio of the medians, inside the per-repeat range
        num, den = pairs[ratio]
        assert float(got[ratio]) == pytest.approx(float(got[num]) / float(got[den]), rel=1e-2)
        low, high = map(float, got[f"{ratio}_min_max"].split())
        assert low - 1e-3 <= float(got[ratio]) <= high + 1e-3
        for measured in (num, den):
            low, high = map(float, got[f"{measured}_min_max"].split())
            assert 0 < low <= float(got[measured]) <= high
    goals = {"p2p_latency_small_vs_grpc_floor_ratio": ("<= 1.15", lambda r: r <= 1.15),
             "p2p_latency_small_streaming_vs_tcp_ratio": ("<= 2.0", lambda r: r <= 2.0),
             "p2p_bandwidth_large_vs_tcp_ratio": (">= 0.70", lambda r: r >= 0.70)}
    for ratio, (goal, met) in goals.items():
        verdict = "met" if met(float(got[ratio])) else "missed"
        assert got[f"{ratio}_goal"] == f"{verdict} ({goal})"
    assert "p2p_latency_small_vs_tcp_ratio_goal" not in got  # reported, not judged
    version = tgb(binary.parent / grpcbench.FLOOR, "version").stdout.split(": ")[1].strip()
    assert got["grpc_version"] == version and got["repeats"] == "2"
    assert len(got["loadavg_1_5_15_start"].split()) == 3
    for name in ("grpc_floor_small", "p2p_latency_small_streaming", "tcp_stream_large"):
        for rep in (1, 2):
            kept = (tmp_path / "out" / f"{name}-{rep}.txt").read_text()
            assert kept.startswith("tf-grpc-bench-output: 1") and "end: ok" in kept


# ---------------------------------------------------------------- GRPC_ROOT

def test_a_missing_grpc_root_is_named_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path / "prefix"))
    monkeypatch.setenv("GRPC_ROOT", str(tmp_path / "no-such-grpc"))
    with pytest.raises(RuntimeError, match=f"GRPC_ROOT={tmp_path}/no-such-grpc: no such directory"):
        grpcbench.build()
    assert not (tmp_path / "prefix").exists()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "python"),
                           str(ROOT / "benchmarks" / "grpc" / "bench_grpc.py"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 1 and f"GRPC_ROOT={tmp_path}/no-such-grpc: no such" in proc.stderr
    assert not (tmp_path / "out").exists()  # no empty output directory left behind


def test_a_prefix_without_grpc_fails_the_build_naming_it(tmp_path, monkeypatch):
    (tmp_path / "site" / "lib" / "pkgconfig").mkdir(parents=True)  # a prefix, but no grpc++.pc
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path / "prefix"))
    monkeypatch.setenv("GRPC_ROOT", str(tmp_path / "site"))
    with pytest.raises(RuntimeError) as failed:
        grpcbench.build()
    assert (f"GRPC_ROOT={tmp_path}/site: not a gRPC C++ prefix (no lib/pkgconfig/grpc++.pc"
            in str(failed.value))
    assert not (grpcbench.build_dir() / "CMakeCache.txt").exists()  # configured again next time


def test_cmake_takes_grpc_from_grpc_root_before_the_system(tmp_path):
    # a prefix whose grpc++.pc (Debian's, relabelled) says another version: CMake must find
    # gRPC through it, in lib64 as some installs have it (configure only: a build takes minutes)
    system_pc = subprocess.run(["pkg-config", "--variable=pcfiledir", "grpc++"],
                               capture_output=True, text=True, check=True).stdout.strip()
    pc_dir = tmp_path / "site" / "lib64" / "pkgconfig"
    pc_dir.mkdir(parents=True)
    text = (Path(system_pc) / "grpc++.pc").read_text()
    (pc_dir / "grpc++.pc").write_text(re.sub(r"(?m)^Version: .*$", "Version: 9.99.0-site", text))
    proc = subprocess.run(["cmake", "-S", str(grpcbench.SOURCE_DIR), "-B", str(tmp_path / "build"),
                           f"-DGRPC_ROOT={tmp_path / 'site'}"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "GRPCPP_VERSION:INTERNAL=9.99.0-site" in (tmp_path / "build" / "CMakeCache.txt").read_text()
