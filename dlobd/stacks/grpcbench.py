"""grpcbench: the project's TF-gRPC-Bench suite (workloads/tf-grpc-bench/), C++ on gRPC.

Three micro-benchmarks of distributed TensorFlow's gRPC traffic without TensorFlow
(p2p-latency, p2p-bandwidth, ps-throughput) and a raw TCP baseline (tcp-pingpong,
tcp-stream) on the same path, all printing one versioned text format:

  tf-grpc-bench-output: 1
  benchmark: p2p-latency
  mode: non-serialized
  ...                                  (every parameter, the payload's buffer sizes)
  columns: kind repeat worker calls bytes seconds mean_us p50_us p99_us ser_us mb_per_s calls_per_s verified
  row worker 1 0 11552 115520 1.000054 82.495 68.002 207.728 0.000 0.116 11551.381 11552
  row total 1 all 11552 115520 1.000054 82.495 68.002 207.728 0.000 0.116 11551.381 11552
  end: ok

Parser: the `total` row of each repeat (step = repeat) gives, by benchmark,
  p2p-latency    latency_us (mean round trip), latency_p50_us, latency_p99_us; in serialized
                 mode latency_us is split into operation=serialization (protobuf encode and
                 decode on both ends) and operation=communication (the rest of the round trip)
  p2p-bandwidth  bandwidth_mb_per_s
  ps-throughput  rpc_calls_per_s and bandwidth_mb_per_s, summed over the workers
  (p2p runs with `rpc: streaming` in the header, payloads sent as messages of one open
  stream rather than as unary calls, carry operation=streaming; logs without the `rpc:`
  line are unary)
  tcp-pingpong   latency_us, latency_p50_us, latency_p99_us with operation=tcp
  tcp-stream     bandwidth_mb_per_s with operation=tcp
  grpc-floor     latency_us, latency_p50_us, latency_p99_us with operation=floor (grpc_floor:
                 the smallest unary echo of the same gRPC build, echoes not verified)
`worker` rows (one per worker process) stay in the log. The header is `meta`. The log is
finished with its `end: ok` line.

Capture (tfgrpc-fig4, the paper's Sec. 2.3): a real distributed TensorFlow run
(workloads/tensorflow/train_distributed.py, ParameterServerStrategy, every task on
loopback) with each task under `strace -f -v -e trace=sendmsg`, so the iovec buffers gRPC hands
to sendmsg are recorded as the kernel saw them (strace/<task>.txt). The parser reads those
traces: iovec_buffer_count per size_class (Table 1: small < 1 KiB <= medium < 1 MiB <=
large), one row per class and trace file.

Launcher: runs `tf_grpc_bench run` with the point's and the scale's parameters. On loopback
it first builds the suite from this checkout with CMake into
`<prefix>/build/tf-grpc-bench-<checkout>` (prefix = $DLOBD_PREFIX, default ~/dlobd-stack), and
`run` starts the parameter servers itself, on free ports.
On a network between hosts (config/networks.yaml; e.g. eth-10g-emulated on a cluster of
`make emulated-up`) the parameter servers run over ssh on the cluster's workers but the last
(`tf_grpc_bench ps`, servers/ps-<i>.log, each on a port its host picks, or one of the inventory's
dlobd_worker_ports) and `run` with the benchmark's workers on the last worker, calling them; those
hosts use the binary their grpc_bench role installed under the same prefix, in their own stack
environment (remote.ssh_argv). A network the cluster lacks is not runnable.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, provenance
from dlobd.cluster.remote import free_ports, port_range, ssh_argv, worker_ports
from dlobd.spec import networks
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, runner, text_lines

LOG_FILES = ("stdout.log", "strace/*.txt")

FORMAT_LINE = "tf-grpc-bench-output:"
FORMAT_VERSION = "1"
COLUMNS = ("kind repeat worker calls bytes seconds mean_us p50_us p99_us ser_us mb_per_s "
           "calls_per_s verified").split()
BENCHMARKS = ("p2p-latency", "p2p-bandwidth", "ps-throughput", "tcp-pingpong", "tcp-stream",
              "grpc-floor")

SOURCE_DIR = Path(__file__).resolve().parents[2] / "workloads" / "tf-grpc-bench"
BINARY = "tf_grpc_bench"
FLOOR = "grpc_floor"  # the smallest unary echo of the same gRPC build (workloads/tf-grpc-bench/README.md, "The floor")
# a parameter server on another host gets this long to print where it listens
SERVER_START_S = 30


def parse(text: str) -> ParseResult:
    try:
        lines, cut = text_lines(text)
        if not any(line.startswith(FORMAT_LINE) for _, line in lines) and \
                any(SENDMSG.match(line) for _, line in lines):
            return _parse_trace(lines, cut)
        return _parse(lines, cut)
    except LogError as e:
        return ParseResult.unparseable(str(e))


# strace -f lines: `[pid] sendmsg(fd, {..., msg_iov=[{iov_base=..., iov_len=N}, ...],
# msg_iovlen=K, ...}, flags) = bytes` (or `<unfinished ...>` when another thread ran).
SENDMSG = re.compile(r"^(?:\d+ +)?sendmsg\(\d+, \{")
IOV_LEN = re.compile(r"iov_len=(\d+)\}")
IOV_COUNT = re.compile(r"\], msg_iovlen=(\d+),")
SIZE_CLASSES = (("small", 1024), ("medium", 1024 * 1024), ("large", None))


def size_class(nbytes: int) -> str:
    return next(name for name, below in SIZE_CLASSES if below is None or nbytes < below)


def _parse_trace(lines, cut) -> ParseResult:
    counts = dict.fromkeys([name for name, _ in SIZE_CLASSES], 0)
    calls = 0
    for no, line in lines:
        if not SENDMSG.match(line):
            continue
        declared = IOV_COUNT.search(line)
        if declared is None:
            raise LogError(f"line {no}: a sendmsg line without msg_iovlen")
        lengths = [int(n) for n in IOV_LEN.findall(line)]
        if len(lengths) != int(declared[1]):
            raise LogError(f"line {no}: {len(lengths)} of {declared[1]} iovecs printed "
                           "(strace cut the array: trace with -v)")
        calls += 1
        for n in lengths:
            counts[size_class(n)] += 1
    result = ParseResult()
    result.meta["sendmsg_calls"] = calls
    result.rows = [row("iovec_buffer_count", n, size_class=name) for name, n in counts.items()]
    return result.close(cut=cut)


def _number(no: int, name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise LogError(f"line {no}: {name} {text!r} is not a number") from None


def _rows(benchmark: str, mode: str, rpc: str, values: dict, step: int) -> list[dict]:
    grpc_op = "streaming" if rpc == "streaming" else None  # unary: TF's RPC, no label
    if benchmark in ("p2p-latency", "tcp-pingpong", "grpc-floor"):
        op = {"tcp-pingpong": "tcp", "grpc-floor": "floor"}.get(benchmark, grpc_op)
        out = []
        if mode == "serialized":
            ser = values["ser_us"]
            out += [row("latency_us", ser, step=step, operation="serialization"),
                    row("latency_us", values["mean_us"] - ser, step=step, operation="communication")]
        else:
            out.append(row("latency_us", values["mean_us"], step=step, operation=op))
        return out + [row("latency_p50_us", values["p50_us"], step=step, operation=op),
                      row("latency_p99_us", values["p99_us"], step=step, operation=op)]
    if benchmark in ("p2p-bandwidth", "tcp-stream"):
        op = "tcp" if benchmark == "tcp-stream" else grpc_op
        return [row("bandwidth_mb_per_s", values["mb_per_s"], step=step, operation=op)]
    return [row("rpc_calls_per_s", values["calls_per_s"], step=step),
            row("bandwidth_mb_per_s", values["mb_per_s"], step=step)]


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    header_line = None
    columns = None
    last_repeat = 0
    end_line = None
    for no, line in lines:
        if line.startswith(FORMAT_LINE):
            if header_line is not None:
                raise LogError(f"line {no}: a second output header (line {header_line} was the "
                               "first): two logs interleaved or concatenated?")
            version = line[len(FORMAT_LINE):].strip()
            if version != FORMAT_VERSION:
                raise LogError(f"line {no}: output format version {version!r}; this parser "
                               f"reads version {FORMAT_VERSION}")
            header_line = no
        elif header_line is None:
            continue  # not ours: text before the header (none is expected)
        elif line.startswith("row "):
            if columns is None:
                raise LogError(f"line {no}: a row before the 'columns:' line")
            if end_line is not None:
                raise LogError(f"line {no}: a row after the end line (two logs concatenated?)")
            fields = line.split()[1:]
            if len(fields) != len(columns):
                raise LogError(f"line {no}: {len(fields)} fields for the {len(columns)} columns")
            rec = dict(zip(columns, fields))
            if rec["kind"] not in ("worker", "total"):
                raise LogError(f"line {no}: row kind {rec['kind']!r} is neither worker nor total")
            repeat = int(_number(no, "repeat", rec["repeat"]))
            if repeat < last_repeat or (rec["kind"] == "total" and repeat == last_repeat):
                raise LogError(f"line {no}: repeat {repeat} after repeat {last_repeat} "
                               "(two logs interleaved or concatenated?)")
            values = {k: _number(no, k, rec[k]) for k in COLUMNS[3:]}
            # the floor checks no echo by design (workloads/tf-grpc-bench/README.md, "The floor"): its verified is 0
            if values["verified"] != values["calls"] and result.meta["benchmark"] != "grpc-floor":
                raise LogError(f"line {no}: {values['verified']:.0f} of {values['calls']:.0f} "
                               "calls verified")
            if rec["kind"] == "total":
                last_repeat = repeat
                result.rows += _rows(result.meta["benchmark"], result.meta.get("mode", ""),
                                     result.meta.get("rpc", "unary"), values, repeat)
        elif line.startswith("end:"):
            end_line = no
        elif ":" in line:
            key, value = (part.strip() for part in line.split(":", 1))
            if key == "columns":
                columns = value.split()
                if columns != COLUMNS:
                    raise LogError(f"line {no}: columns {value!r} are not those of format "
                                   f"{FORMAT_VERSION}")
                if result.meta.get("benchmark") not in BENCHMARKS:
                    raise LogError(f"line {no}: header names no known benchmark "
                                   f"({result.meta.get('benchmark')!r})")
            else:
                result.meta[key] = value
        else:
            raise LogError(f"line {no}: {line[:60]!r} is neither a header, a row nor the end")
    if header_line is None:
        return ParseResult.unparseable(
            f"{NO_LINES} grpcbench's format: no '{FORMAT_LINE} {FORMAT_VERSION}' header")
    return result.close(f"no 'end: ok' line (last repeat printed: {last_repeat})"
                        if end_line is None else None, cut=cut)


# ---------------------------------------------------------------- build and launch


def grpc_root() -> str | None:
    """The prefix of a site's gRPC C++ to build against ($GRPC_ROOT, e.g. a Spack-installed
    grpc), or None for the system's (Debian's libgrpc++-dev)."""
    return os.environ.get("GRPC_ROOT") or None


def build_dir() -> Path:
    """One build directory per gRPC: a CMake cache holds the gRPC it was configured with."""
    root = grpc_root()
    if root is None:
        return provenance.build_dir("tf-grpc-bench", SOURCE_DIR)
    return provenance.build_dir("tf-grpc-bench-grpc-" + hashlib.sha1(root.encode()).hexdigest()[:8],
                                SOURCE_DIR)


CMAKE_ERROR = re.compile(r"^CMake Error[^\n]*\n((?:  .*\n?)+)", re.M)


def build(out=None) -> Path:
    """Configure and build the suite and the floor (incremental) against the system's gRPC or
    $GRPC_ROOT's; returns the suite's binary (the floor, FLOOR, is beside it).

    A lock serialises concurrent launches that share the build directory.
    """
    root = grpc_root()
    if root is not None and not Path(root).is_dir():  # before a build directory is made for it
        raise RuntimeError(f"GRPC_ROOT={root}: no such directory (the prefix of a gRPC C++ "
                           "installation, holding lib/pkgconfig/grpc++.pc)")
    bdir = build_dir()
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        steps = []
        if not (bdir / "CMakeCache.txt").is_file():
            steps.append(["cmake", "-S", str(SOURCE_DIR), "-B", str(bdir),
                          "-DCMAKE_BUILD_TYPE=Release", f"-DGRPC_ROOT={root or ''}"])
        steps.append(["cmake", "--build", str(bdir), "--parallel", str(os.cpu_count() or 1)])
        for argv in steps:
            proc = subprocess.run(argv, stdout=out or subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            if proc.returncode != 0:
                if "-S" in argv:  # a failed configure: configure again next time
                    (bdir / "CMakeCache.txt").unlink(missing_ok=True)
                text = proc.stdout or ""  # empty when it went to `out`
                error = CMAKE_ERROR.search(text)  # CMake wraps its message: one line again
                detail = " ".join(error[1].split()) if error else text[-2000:]
                raise RuntimeError(f"building tf-grpc-bench failed: {shlex.join(argv)}\n{detail}")
    return bdir / BINARY


def grpc_version(text: str) -> str:
    """The gRPC version an output's header names (the library the run used), else unknown."""
    return parse(text).meta.get("grpc_version") or "unknown"


# spec parameter (fixed or point) -> option of `tf_grpc_bench run`
OPTIONS = {
    "benchmark": "--benchmark", "mode": "--mode", "payload_scheme": "--scheme",
    "scheme": "--scheme", "iovec_buffers": "--buffers", "iovec_count": "--buffers",
    "categories": "--categories", "small_bytes": "--small-bytes",
    "medium_bytes": "--medium-bytes", "large_bytes": "--large-bytes",
    "skew_bias": "--skew-bias", "skew_mix": "--skew-mix", "payload_bytes": "--sizes",
    "warmup_s": "--warmup", "duration_s": "--duration", "repeats": "--repeats",
    "parameter_servers": "--parameter-servers", "workers": "--workers", "seed": "--seed",
    "timeout_s": "--timeout", "rpc": "--rpc",
}


def command(binary, fixed: dict, point: dict, ps: list[str] | None = None) -> list[str]:
    """The argv of one point: the scale's fixed parameters, then the point's axes. With `ps`
    (HOST:PORT of parameter servers already running) the workers call those; without, `run`
    starts its own on loopback."""
    params = {**fixed, **point}
    params.pop("network", None)
    argv = [str(binary), "run", *(["--ps", ",".join(ps)] if ps else
                                  ["--host", "127.0.0.1", "--port", "0"])]
    if "payload_bytes" in params:  # one buffer of exactly that size
        if "payload_scheme" in params or "scheme" in params:
            raise ValueError("payload_bytes gives the payload itself; it takes no scheme")
        argv += ["--scheme", "custom"]
    for key, value in params.items():
        if key not in OPTIONS:
            raise ValueError(f"parameter {key!r} is not a tf-grpc-bench option "
                             f"(known: {', '.join(sorted(OPTIONS))})")
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        argv += [OPTIONS[key], text]
    return argv


def placement(parameter_servers: int, hosts: list[str]) -> tuple[list[str], str]:
    """(host of each parameter server, host of the workers) for a point across the cluster:
    the parameter servers round-robin over every worker host but the last, the benchmark's
    workers (one `run`) on the last, so every call crosses the link between two hosts."""
    if len(hosts) < 2:
        raise NotRunnable(f"a point across hosts needs two worker hosts; the cluster has "
                          f"{', '.join(provenance.host_names(hosts)) or 'none'}")
    servers = hosts[:-1]
    return [servers[i % len(servers)] for i in range(parameter_servers)], hosts[-1]


def _listening(proc: subprocess.Popen, log_path: Path, what: str) -> str:
    """HOST:PORT a parameter server printed once it listens (it picks a free port on its host)."""
    deadline = time.monotonic() + SERVER_START_S
    while True:
        lines = log_path.read_text(errors="replace").splitlines()
        found = [ln.split()[1] for ln in lines if ln.startswith("listening ") and len(ln.split()) == 2]
        if found:
            return found[0]
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening "
                               f"({log_path.name}: {' | '.join(lines[-3:]) or 'empty'})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} is not listening after {SERVER_START_S} s ({log_path.name})")
        time.sleep(0.1)


def server_argv(host: str, port, binary: str, mode: str, adir: Path) -> list[str]:
    """A parameter server on `host` over ssh, listening on `port` (0: one its host picks)."""
    return ssh_argv(host, str(adir), {}, [binary, "ps", "--listen", f"{host}:{port}", "--mode", mode])


def server_ports(hosts: list[str], dry_run: bool) -> tuple[list, dict]:
    """The port each parameter server listens on, and how each host's were chosen: those of the
    inventory's dlobd_worker_ports where it sets them (remote.worker_ports), else 0, which the
    server binds on its host and prints (a dry run shows what the host will choose)."""
    if port_range() or dry_run:
        return worker_ports(hosts, dry_run)
    return [0] * len(hosts), {host: f"on {host}" for host in hosts}


def start_servers(hosts: list[str], commands: list[list[str]],
                  adir: Path) -> tuple[list[subprocess.Popen], list[str]]:
    """One `tf_grpc_bench ps` per host over ssh (its command of server_argv), its output in
    servers/ps-<i>.log; returns the processes (an ssh client each: ending it ends the server) and
    the addresses they listen on."""
    (adir / "servers").mkdir()
    procs: list[subprocess.Popen] = []
    addresses = []
    try:
        for i, (host, argv) in enumerate(zip(hosts, commands)):
            log_path = adir / "servers" / f"ps-{i}.log"
            with open(log_path, "xb") as log:
                procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.PIPE, start_new_session=True))
            addresses.append(_listening(procs[-1], log_path, f"parameter server {i} on {host}"))
    except BaseException:
        _stop(procs)
        raise
    return procs, addresses


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    if "capture" in ctx.fixed:
        return launch_capture(ctx)
    network = str(ctx.point.get("network", "loopback"))
    lacking = capabilities.network_missing("grpcbench", network)
    if lacking:
        raise NotRunnable(f"network {network}: " + "; ".join(lacking))
    link = networks.resolve("grpcbench", network)
    params = {**ctx.fixed, **ctx.point}
    parameter_servers, workers = int(params.get("parameter_servers", 1)), int(params.get("workers", 1))
    worker_roles = [f"worker:{w}" for w in range(workers)]
    if link.address == "loopback":
        if ctx.dry_run:
            binary = build_dir() / BINARY
        else:
            with open(ctx.attempt_dir / "build.log", "x") as log:
                binary = build(out=log)
        result = runner.run_command(ctx, command(binary, ctx.fixed, ctx.point), cwd=str(ctx.attempt_dir))
        result.hosts = [{"name": "localhost", "address": "127.0.0.1",
                         "roles": [f"ps:{i}" for i in range(parameter_servers)] + worker_roles}]
    else:
        result = _launch_across_hosts(ctx, parameter_servers, worker_roles,
                                      str(params.get("mode", "non-serialized")),
                                      capabilities.worker_addresses(link, provenance.workers()),
                                      INSTALLS[link.settings.get("grpc", "system")])
    log = Path(ctx.attempt_dir) / "stdout.log"
    grpc = grpc_version(log.read_text(errors="replace") if log.is_file() else "")
    result.versions = {"stack": f"tf-grpc-bench {FORMAT_VERSION} (grpc++ {grpc})", "grpc": grpc}
    result.labels = {"network": network, "data": "synthetic",
                     **({"emulated": "true"} if link.emulated else {})}
    return result


# the gRPC of a transport (config/networks.yaml) -> where the grpc_bench role installed the
# suite built against it, under the prefix
INSTALLS = {"system": "tf-grpc-bench", "rdma-grpc": "tf-grpc-bench-rdma"}


def _launch_across_hosts(ctx: runner.RunContext, parameter_servers: int, worker_roles: list[str],
                        mode: str, hosts: list[str], install: str = INSTALLS["system"]) -> runner.LaunchResult:
    """Parameter servers and workers on different hosts of the cluster (`hosts`: the workers'
    addresses on the point's network), each host running the tf_grpc_bench its grpc_bench role
    installed under the common prefix (`install`: the build against the transport's gRPC)."""
    server_hosts, client = placement(parameter_servers, hosts)
    binary = str(provenance.prefix() / install / "bin" / BINARY)
    adir = Path(ctx.attempt_dir).resolve()
    ports, chosen = server_ports(server_hosts, ctx.dry_run)
    commands = [server_argv(host, port, binary, mode, adir) for host, port in zip(server_hosts, ports)]

    def processes(listening: list) -> list[dict]:
        # run.json keeps them too: where each server ran and how its port was chosen
        return [{"name": f"ps:{i}", "host": host, "command": argv, "env": {}, "ports": {"listen": at},
                 "ports_chosen": chosen[host]}
                for i, (host, argv, at) in enumerate(zip(server_hosts, commands, listening))]

    if ctx.dry_run:
        addresses = [f"{host}:{port}" for host, port in zip(server_hosts, ports)]
        result = runner.run_command(ctx, ssh_argv(client, str(adir), {},
                                                command(binary, ctx.fixed, ctx.point, ps=addresses)),
                                  cwd=str(adir))
        result.extra["processes"] = processes(ports)
        return result
    servers, addresses = start_servers(server_hosts, commands, adir)
    try:
        argv = command(binary, ctx.fixed, ctx.point, ps=addresses)
        result = runner.run_command(ctx, ssh_argv(client, str(adir), {}, argv), cwd=str(adir),
                                  keep_stdin=True)
    finally:
        _stop(servers)
    result.extra["processes"] = processes([int(a.rsplit(":", 1)[1]) for a in addresses])
    result.hosts = [{"name": h, "address": h,
                     "roles": [f"ps:{i}" for i, s in enumerate(server_hosts) if s == h]}
                    for h in dict.fromkeys(server_hosts)]
    result.hosts.append({"name": client, "address": client, "roles": worker_roles})
    return result


# ---------------------------------------------------------------- capture (tfgrpc-fig4)

# how long a server over ssh gets to end by itself once its pipe is closed
PIPE_GRACE_S = 5

WORKLOAD = SOURCE_DIR.parents[1] / "workloads" / "tensorflow" / "train_distributed.py"
# spec model name -> the project's TF workload model (VGG-16 is not among them)
CAPTURE_MODELS = {"resnet50": "resnet50", "alexnet": "alexnet", "inception3": "inception_v3"}
CAPTURE_FIXED = {"capture", "parameter_servers", "workers", "batch", "steps", "image_size"}
# sendmsg of every thread; -v prints whole iovec arrays (TF's gRPC passes up to ~1000 iovecs,
# more than strace's default array limit), -s 0 leaves out the bytes themselves
STRACE_ARGS = ["-f", "-qq", "-v", "-e", "trace=sendmsg", "-s", "0"]


def _wait(procs, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def _stop(procs) -> None:
    """End processes and their groups. An ssh client's pipe is closed first, which ends its
    remote side (remote.ssh_argv); the client exits once its remote task has, so it gets
    PIPE_GRACE_S for that before SIGTERM reaches its group (a TERM first would end the client
    and leave the task still shutting down). Then SIGTERM, and SIGKILL after 10 s."""
    piped = [p for p in procs if p.stdin]
    for p in piped:
        p.stdin.close()
    _wait(piped, PIPE_GRACE_S)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    _wait(procs, 10)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def launch_capture(ctx: runner.RunContext) -> runner.LaunchResult:
    fixed = dict(ctx.fixed)
    unknown = set(fixed) - CAPTURE_FIXED
    if unknown or fixed["capture"] != "tensorflow-ps":
        raise ValueError(f"capture takes capture: tensorflow-ps and {sorted(CAPTURE_FIXED)}; "
                         f"got {fixed}")
    model = CAPTURE_MODELS.get(str(ctx.point.get("model")))
    if model is None:
        raise NotRunnable(f"model {ctx.point.get('model')}: not among the project's "
                               f"TensorFlow workloads ({', '.join(CAPTURE_MODELS)})")
    strace = shutil.which("strace")
    if strace is None:
        raise NotRunnable("strace is not installed (Debian package strace)")
    python = provenance.stack_setting("DLOBD_PYTHON")
    if not provenance.present(python):
        raise NotRunnable("no stacks' Python with TensorFlow (DLOBD_PYTHON; run `make provision`)")
    n_ps, n_workers = int(fixed.get("parameter_servers", 2)), int(fixed.get("workers", 3))
    ports = iter(free_ports(1 + n_ps + n_workers))
    cluster = {"chief": [f"127.0.0.1:{next(ports)}"],
               "ps": [f"127.0.0.1:{next(ports)}" for _ in range(n_ps)],
               "worker": [f"127.0.0.1:{next(ports)}" for _ in range(n_workers)]}
    args = [python, str(WORKLOAD), "--model", model, "--strategy", "ps",
            "--batch-size", str(fixed.get("batch", 8)), "--steps", str(fixed.get("steps", 4))]
    if "image_size" in fixed:
        args += ["--image-size", str(fixed["image_size"])]
    adir = Path(ctx.attempt_dir).resolve()  # the chief runs in it: paths must be absolute

    def traced(job, index):
        env = {**os.environ, "TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": job, "index": index}})}
        trace = adir / "strace" / f"{job}-{index}.txt"
        return [strace, *STRACE_ARGS, "-o", str(trace), *args], env

    serving = [(job, i) for job, count in (("ps", n_ps), ("worker", n_workers)) for i in range(count)]
    # every task on this host, on ports free here (run.json keeps them too)
    processes = [{"name": f"{job}:{i}", "host": "127.0.0.1", "command": traced(job, i)[0],
                  "ports": {"server": int(cluster[job][i].rsplit(":", 1)[1])}, "ports_chosen": "on 127.0.0.1"}
                 for job, i in serving]
    if ctx.dry_run:
        argv, env = traced("chief", 0)
        result = runner.run_command(ctx, argv, env=env, cwd=str(adir))
        result.extra["processes"] = processes
        return result
    (adir / "strace").mkdir()
    (adir / "tasks").mkdir()
    servers = []
    try:
        for job, i in serving:
            argv, env = traced(job, i)
            with open(adir / "tasks" / f"{job}-{i}.log", "xb") as log:
                servers.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log,
                                                start_new_session=True))
        argv, env = traced("chief", 0)
        result = runner.run_command(ctx, argv, env=env, cwd=str(adir))
    finally:
        _stop(servers)  # the PS and worker servers wait until they are ended
    result.versions = {"stack": "strace " + subprocess.run(
        [strace, "-V"], capture_output=True, text=True).stdout.split("\n")[0].split()[-1]}
    result.labels = {"data": "synthetic"}
    result.extra["processes"] = processes
    result.hosts = [{"name": "localhost", "address": "127.0.0.1",
                     "roles": [f"{job}:{i}" for job, addrs in cluster.items()
                               for i in range(len(addrs))]}]
    return result
