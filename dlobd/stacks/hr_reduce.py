"""hr_reduce: the project's S-Caffe hierarchical-reduce micro-benchmark (workloads/hr-reduce).

Parser: reads the benchmark's stdout, OSU-style, in one of three forms chosen by its
column header line:

  # HR-Reduce latency test (dlobd hr-reduce 1.0)
  # Algorithm: chain
  # Chunks: auto (~1024 KiB each, 1..64)
  # Ranks: 4
  # MPI library: Open MPI v4.1.4, ...
  # Buffers: host
  # Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Median(us)  Iterations  Chunks  Chain  Choice
  67108864  87188.37  62580.10  112161.40  87822.47  5  64  0  chain
  # Verified: 15 sizes, the reduced result on rank 0 matched the expected sum

- latency test: one `latency_us` row per size (`message_bytes`, `operation=reduce`), the
  value the median over iterations of the slowest rank's time (avg/min/max stay in the log;
  the medians resist a loaded machine). Per-size choices of `tuned` go to meta.
- cost model (`# Size Predicted(us) Unit time(us) Factor Unit bytes Iterations`): one
  `latency_us` row per size with `operation=model-bin` or `model-cc`: the time eq. (1)/(2)
  of the paper predicts from the measured pairwise reduce time t(b) or t(c) (meta keeps
  t and the factor).
- training loop (`# Iter Loss Propagation(s) ForwardBackward(s) Aggregation(s)`): per
  iteration `loss` and `time_breakdown_s` (phases propagation, forward_backward,
  aggregation); the run's `train_time_s` from the `# Total(s):` line.

The header's fields go to meta (lower case, `_` for spaces); from the `# Buffers:` line also
`buffer_memory` (host, device or managed: which path a GPU build took) and `additions` (gpu or
host: where the received data is added), e.g. `gpu device (cudaMalloc, CUDA-aware MPI: Open
MPI v4.1.2), additions on the GPU` gives device and gpu.

Finished when the `# Verified:` line is present (the benchmark prints it only after every
reduce matched; a mismatch aborts the job before it).

Launcher: builds workloads/hr-reduce with CMake against the point's MPI (Debian OpenMPI
or MPICH, through `mpicc.openmpi` / `mpicc.mpich`; MVAPICH2 or MVAPICH2-GDR from the install
named by MVAPICH2_HOME / MVAPICH2_GDR_HOME, as they need a registered download) into
`$DLOBD_PREFIX/build/hr-reduce-<mpi>[-cuda]-<checkout>` (one per checkout, outside the git
tree; rebuilt when a source is newer than the binary; `-cuda` for `fixed.buffers: gpu`, which
needs the CUDA toolkit's nvcc and runs S-Caffe's design, `--gpu-buffers device`, unless
`fixed.gpu_buffers` says managed or auto), then runs it under that MPI's mpirun with
`fixed.processes` ranks: spread over the cluster's workers through a host file when it has
several (the paper's 160 GPUs), else on this host, oversubscribed when they outnumber the cores
(labelled so).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, provenance
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser, runner
from dlobd.stacks.shared.mpi import (
    MPIS,
    hostfile_text,
    mpi_tool,
    mpirun_prefix,
    rank_placement,
    write_hostfile,
)

LOG_FILES = ("stdout.log",)

SOURCE_DIR = Path(__file__).resolve().parents[2] / "workloads" / "hr-reduce"
TITLE = re.compile(r"^# HR-Reduce (latency test|cost model|training loop)")
HEADER_FIELD = re.compile(r"^# ([A-Za-z][A-Za-z ]*?): (.*)$")
TOTAL = re.compile(r"^# Total\(s\): train (\S+) propagation (\S+) forward_backward (\S+) "
                   r"aggregation (\S+)\s*$")
PHASES = ("propagation", "forward_backward", "aggregation")
# where a CUDA toolkit puts nvcc when it is not on PATH


# ------------------------------------------------------------------ parser


def _number(no: int, token: str, what: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise LogError(f"line {no}: {what} {token!r} is not a number") from None


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    mode = None       # 'latency', 'model' or 'train' once the column header is read
    title_seen = False
    last_key = None   # last size or iteration, which must grow
    choices = {}
    for no, line in lines:
        if TITLE.match(line):
            if title_seen:
                raise LogError(f"line {no}: a second benchmark header (two logs concatenated?)")
            title_seen = True
            result.meta["title"] = line[2:].strip()
            continue
        if line.startswith("# Size") or line.startswith("# Iter"):
            if mode is not None:
                raise LogError(f"line {no}: a second column header (two logs concatenated?)")
            if line.startswith("# Iter"):
                mode = "train"
            elif "Predicted" in line:
                mode = "model"
            else:
                mode = "latency"
            continue
        if line.startswith("# Verified:"):
            if mode is None:
                raise LogError(f"line {no}: '# Verified:' before any measurement")
            result.finished = True
            result.meta["verified"] = line[len("# Verified:"):].strip()
            continue
        total = TOTAL.match(line)
        if total:
            if mode != "train":
                raise LogError(f"line {no}: a training total in a {mode or 'header-less'} log")
            train, *parts = (_number(no, t, "total") for t in total.groups())
            result.rows.append(row("train_time_s", train))
            result.meta["phase_totals_s"] = dict(zip(PHASES, parts))
            continue
        field = HEADER_FIELD.match(line)
        if field and mode is None:
            name, value = field.group(1).lower().replace(" ", "_"), field.group(2).strip()
            result.meta[name] = value
            if name == "buffers":
                result.meta.update(_buffer_path(value))
            continue
        if line.startswith("#") or not line.strip():
            continue
        if mode is None:
            continue  # text before the benchmark's header (mpirun's own messages)
        cols = line.split()
        if mode == "train":
            if len(cols) != 5:
                raise LogError(f"line {no}: a training row needs 5 columns "
                               f"(iteration, loss, three phase times), found {len(cols)}")
            step = int(_number(no, cols[0], "iteration"))
            _check_order(no, last_key, step, "iteration")
            last_key = step
            loss = _number(no, cols[1], "loss")
            if loss == loss and abs(loss) != float("inf"):
                result.rows.append(row("loss", loss, step=step))
            else:
                result.meta.setdefault("non_finite", []).append({"step": step, "loss": cols[1]})
            for phase, token in zip(PHASES, cols[2:]):
                result.rows.append(row("time_breakdown_s", _number(no, token, phase), step=step,
                                       phase=phase))
            continue
        want = 6 if mode == "model" else 9
        if len(cols) != want:
            raise LogError(f"line {no}: a {mode} row needs {want} columns, found {len(cols)}")
        size = int(_number(no, cols[0], "size"))
        _check_order(no, last_key, size, "size")
        last_key = size
        if mode == "model":
            predicted, unit_us, factor = (_number(no, t, "value") for t in cols[1:4])
            algorithm = result.meta.get("algorithm", "model")
            result.rows.append(row("latency_us", predicted, message_bytes=size, operation=algorithm))
            result.meta.setdefault("model_terms", {})[size] = {
                "unit_time_us": unit_us, "factor": factor, "unit_bytes": int(_number(no, cols[4], "bytes"))}
        else:
            median = _number(no, cols[4], "median latency")
            for token in cols[1:4]:
                _number(no, token, "latency")
            result.rows.append(row("latency_us", median, message_bytes=size, operation="reduce"))
            choices[size] = cols[8]
    if mode is None:
        if title_seen:
            result.reason = "the benchmark header but no column header: stopped before measuring"
            return result
        raise LogError(f"{NO_LINES} hr_reduce's format: no '# HR-Reduce' header with a column header")
    if result.meta.get("algorithm") == "tuned":
        result.meta["choices"] = choices
    if not result.finished:
        result.reason = ("no '# Verified:' line: the log stops before the run's end"
                         + ("; its last line was cut mid-line and not read" if cut else ""))
    return result


def _buffer_path(value: str) -> dict:
    """buffer_memory and additions of a `# Buffers:` value; the GPU build before --gpu-buffers
    printed `gpu (CUDA managed memory)` and added on the host."""
    memory = ("device" if value.startswith("gpu device") else
              "managed" if value.startswith("gpu") else "host")
    return {"buffer_memory": memory, "additions": "gpu" if value.endswith("additions on the GPU") else "host"}


def _check_order(no: int, last, value, what: str) -> None:
    if last is not None and value <= last:
        raise LogError(f"line {no}: {what} {value} after {last} (two logs interleaved or concatenated?)")


# ------------------------------------------------------------------ build


def build_dir(mpi: str) -> Path:
    return provenance.build_dir(f"hr-reduce-{mpi}", SOURCE_DIR)


def built_binary(mpi: str, gpu: bool = False) -> Path:
    """Where ensure_built puts the benchmark binary for one MPI."""
    return build_dir(f"{mpi}-cuda" if gpu else mpi) / "hr_reduce"


def ensure_built(mpi: str, log_path: Path | None = None, gpu: bool = False) -> Path:
    """The benchmark binary for one MPI (GPU buffers: the CUDA build, for a CUDA-aware MPI),
    (re)built with CMake when missing or stale."""
    mpicc = mpi_tool(mpi, "mpicc")
    if not shutil.which("cmake"):
        raise NotRunnable("cmake not found: it builds workloads/hr-reduce")
    nvcc = capabilities.find_nvcc() if gpu else None
    if gpu and not nvcc:
        raise NotRunnable(f"hr_reduce on GPU buffers (HR_REDUCE_CUDA=ON) needs {capabilities.CUDA_NEEDS}: "
                          f"{capabilities.NO_NVCC}; install CUDA on a GPU host, or run on host buffers")
    binary = built_binary(mpi, gpu)
    bdir = binary.parent
    sources = [p for p in SOURCE_DIR.rglob("*") if p.suffix in (".c", ".cu", ".h", ".txt")]
    if binary.exists() and all(p.stat().st_mtime <= binary.stat().st_mtime for p in sources):
        return binary
    configure = ["cmake", "-S", str(SOURCE_DIR), "-B", str(bdir), f"-DMPI_C_COMPILER={mpicc}",
                 "-DCMAKE_BUILD_TYPE=Release", f"-DHR_REDUCE_CUDA={'ON' if gpu else 'OFF'}"]
    if nvcc:
        configure.append(f"-DCMAKE_CUDA_COMPILER={nvcc}")
    steps = [configure, ["cmake", "--build", str(bdir)]]
    out = []
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        out.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            if log_path:
                log_path.write_text("".join(out))
            raise RuntimeError(f"building hr_reduce with {mpi} failed: {' '.join(cmd)} exit "
                               f"{proc.returncode}: {(proc.stderr or proc.stdout).strip()[-400:]}")
    if log_path:
        log_path.write_text("".join(out))
    return binary


def benchmark_args(value: str) -> list[str]:
    """Benchmark options for an algorithm axis value of the specs."""
    v = str(value)
    if v in ("mpi-default", "none", "mv2", "mpi"):
        return ["--algorithm", "mpi"]
    if v == "hr-tuned":
        return ["--algorithm", "tuned"]
    m = re.fullmatch(r"(cb|cc)-(\d+)", v)
    if m:
        return ["--algorithm", m.group(1), "--chain", m.group(2)]
    if v in ("binomial", "chain", "tuned", "model-bin", "model-cc"):
        return ["--algorithm", v]
    raise ValueError(f"hr_reduce: algorithm {v!r} is none of mpi-default/none, binomial, chain, "
                     "cb-K, cc-K, hr-tuned, model-bin, model-cc")


def plan_point(point: dict, fixed: dict) -> tuple[str, list[str]]:
    """(MPI, benchmark options) of one matrix point."""
    mpi = str(fixed.get("mpi", "openmpi"))
    if "mpi_impl" in point:  # Fig. 12: whose reduce; `hr` is the tuned design on hr_runtime
        impl = str(point["mpi_impl"])
        if impl == "hr":
            mpi, args = str(fixed.get("hr_runtime", "openmpi")), ["--algorithm", "tuned"]
        else:
            mpi, args = impl, ["--algorithm", "mpi"]
    else:
        args = benchmark_args(point.get("algorithm", fixed.get("algorithm", "mpi")))
    mpi = mpi.lower().replace(" ", "")
    if mpi not in MPIS:
        raise ValueError(f"hr_reduce: MPI {mpi!r} is not one of {', '.join(MPIS)}")
    if "chunks" in fixed:
        args += ["--chunks", str(fixed["chunks"])]
    if str(fixed.get("buffers", "host")) == "gpu":
        # S-Caffe's design unless the spec asks otherwise: a run without a CUDA-aware MPI
        # fails with the reason instead of measuring managed-memory migration
        args += ["--gpu-buffers", str(fixed.get("gpu_buffers", "device"))]
    if fixed.get("mode") == "training loop":
        args += ["--train", str(int(fixed.get("iterations", 20))),
                 "--grad-bytes", str(int(fixed["gradient_bytes"])),
                 "--batch", str(int(fixed.get("batch", 2)))]
    else:
        args += ["--sizes", f"{int(fixed.get('min_bytes', 4))}:{int(fixed.get('max_bytes', 1 << 20))}",
                 "--iterations", str(int(fixed.get("iterations", 20))),
                 "--warmup", str(int(fixed.get("warmup", 5)))]
    return mpi, args


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    mpi, args = plan_point(ctx.point, ctx.fixed)
    processes = int(ctx.fixed.get("processes", 4))
    gpu = str(ctx.fixed.get("buffers", "host")) == "gpu"
    if ctx.dry_run:
        mpi_tool(mpi, "mpicc")  # what the build would need
        binary = built_binary(mpi, gpu)
    else:
        binary = ensure_built(mpi, ctx.attempt_dir / "build.log", gpu=gpu)
    hosts = provenance.workers()
    # more than one worker: ranks spread over them; otherwise all on this host
    placement = rank_placement(hosts, processes) if len(hosts) > 1 else None
    hostfile = ctx.attempt_dir / "hostfile" if placement else None
    if hostfile and not ctx.dry_run:
        write_hostfile(hostfile, mpi, placement)
    command = mpirun_prefix(mpi, processes, hostfile) + [str(binary), *args]
    result = runner.run_command(ctx, command, cwd=str(ctx.attempt_dir))
    if ctx.dry_run:
        if placement:
            result.extra["files"] = {"hostfile": hostfile_text(mpi, placement)}
        return result
    if placement:
        ranks = f"{processes} ranks over {len(placement)} hosts"
        oversubscribed = False
        result.hosts = [{"name": h, "address": h, "roles": ["workers"]} for h, _ in placement]
    else:
        cores = os.cpu_count() or 1
        oversubscribed = processes > cores
        ranks = (f"{processes} ranks oversubscribed on {cores} cores" if oversubscribed
                 else f"{processes} ranks on {cores} cores")
    result.labels.update({"ranks": ranks, "oversubscribed": str(oversubscribed).lower(),
                          "buffers": "gpu" if gpu else "host", "mpi": mpi})
    result.versions.update({"stack": "hr-reduce 1.0", "mpi": _mpi_version(mpi)})
    return result


def _mpi_version(mpi: str) -> str | None:
    cmd = [mpi_tool(mpi, "mpirun"), "--version"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return " ".join(text.splitlines()[:2]) if text else None


parse = line_parser(_parse)
