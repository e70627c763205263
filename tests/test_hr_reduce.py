"""The hierarchical-reduce benchmark (workloads/hr-reduce) and its stack module.

Builds the benchmark with CMake against Debian's OpenMPI (and MPICH when installed), runs
every algorithm on 1 to 5 ranks with a chunk count that no size divides, and checks that
the benchmark's own verification passes, that a corrupted input and wrong options fail,
and that the parser and launcher turn real output into the documented rows.
"""

import json
import shutil
import subprocess

import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import capabilities
from dlobd.execution import runs
from dlobd.stacks import hr_reduce, parse_run
from dlobd.stacks.shared import mpi as mpi_launch
from dlobd import NotRunnable

pytestmark = pytest.mark.skipif(not (shutil.which("mpicc.openmpi") and shutil.which("cmake")),
                                reason="needs Debian's libopenmpi-dev and cmake")

# sizes 4 B .. 4 KiB: 1 to 1024 floats, none a multiple of 3 chunks, and the small ones
# have fewer elements than chunks
SIZES = "4:4096"
CHUNKS = "3"


@pytest.fixture(scope="module")
def binary():
    return hr_reduce.ensure_built("openmpi")


def bench(binary, ranks, *args, mpi="openmpi", timeout=120):
    cmd = mpi_launch.mpirun_prefix(mpi, ranks) + [str(binary), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def sweep_ok(proc, algorithm):
    assert proc.returncode == 0, proc.stderr
    result = hr_reduce.parse(proc.stdout)
    assert result.status == "ok" and result.finished, result.reason
    sizes = [r["message_bytes"] for r in result.rows]
    assert sizes == [4 << i for i in range(11)]
    assert all(r["metric"] == "latency_us" and r["value"] >= 0 for r in result.rows)
    assert result.meta["algorithm"] == algorithm
    return result


ALGORITHMS = [
    ("mpi", []), ("binomial", []), ("chain", []),
    ("cb", ["--chain", "2"]), ("cc", ["--chain", "2"]), ("tuned", []),
]


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("algorithm,extra", ALGORITHMS, ids=[a for a, _ in ALGORITHMS])
def test_every_algorithm_reduces_correctly(binary, ranks, algorithm, extra):
    if "--chain" in extra and ranks < 2:
        extra = ["--chain", "1"]
    proc = bench(binary, ranks, "--algorithm", algorithm, *extra, "--chunks", CHUNKS,
                 "--sizes", SIZES, "--iterations", "2", "--warmup", "1")
    result = sweep_ok(proc, algorithm)
    assert result.meta["ranks"] == str(ranks)
    if algorithm == "tuned":
        assert set(result.meta["choices"]) == {r["message_bytes"] for r in result.rows}


@pytest.mark.parametrize("algorithm", ["cb", "cc"])
def test_uneven_chains_of_three_on_five_ranks(binary, algorithm):
    # chains of 3 + 2 ranks: the last lower-level chain is shorter
    proc = bench(binary, 5, "--algorithm", algorithm, "--chain", "3", "--chunks", "5",
                 "--sizes", SIZES, "--iterations", "2", "--warmup", "0")
    sweep_ok(proc, algorithm)


def test_a_wrong_result_fails_loudly(binary):
    proc = bench(binary, 3, "--algorithm", "chain", "--chunks", CHUNKS, "--sizes", "4:64",
                 "--iterations", "1", "--warmup", "0", "--corrupt-input")
    assert proc.returncode != 0
    assert "VERIFICATION FAILED: chain at 4 bytes: element 0 is 7, expected 6" in proc.stderr
    assert "# Verified" not in proc.stdout
    assert hr_reduce.parse(proc.stdout).finished is False


@pytest.mark.parametrize("args,message", [
    (["--algorithm", "cb", "--chain", "5"], "--chain 5 is larger than the communicator (4 ranks)"),
    (["--algorithm", "chain", "--chunks", "0"], "--chunks '0': the chunk count must be >= 1"),
    (["--algorithm", "cc"], "--algorithm cc needs --chain K"),
    (["--algorithm", "ring"], "unknown --algorithm 'ring'"),
    (["--sizes", "6:64"], "sizes must be multiples of 4 bytes"),
    (["--gpu-buffers", "pinned"], "--gpu-buffers 'pinned': one of device, managed, auto"),
])
def test_wrong_options_fail_clearly(binary, args, message):
    proc = bench(binary, 4, *args)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_cpu_build_reports_host_buffers_and_refuses_gpu_ones(binary):
    proc = bench(binary, 2, "--gpu-buffers", "auto", "--sizes", "4:8", "--iterations", "1")
    result = sweep_ok_sizes(proc, 2)
    assert result.meta["buffers"] == "host"
    assert (result.meta["buffer_memory"], result.meta["additions"]) == ("host", "host")
    for memory in ("device", "managed"):
        proc = bench(binary, 2, "--gpu-buffers", memory, "--sizes", "4:8")
        assert proc.returncode == 2 and "# Verified" not in proc.stdout
        assert (f"--gpu-buffers {memory}: this hr_reduce was built without CUDA; rebuild it with "
                "-DHR_REDUCE_CUDA=ON") in proc.stderr


def test_gpu_build_without_nvcc_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDACXX", str(tmp_path / "nvcc"))  # no such compiler
    with pytest.raises(NotRunnable, match=r"needs the CUDA toolkit \(nvcc, the CUDA runtime\) and a CUDA-aware "
                                          r"MPI: .*: no nvcc in \$CUDACXX, on PATH"):
        hr_reduce.ensure_built("openmpi", gpu=True)


@pytest.mark.skipif(not capabilities.find_nvcc(),
                    reason="no CUDA compiler: nvcc neither in $CUDACXX, on PATH nor under "
                           "$CUDAToolkit_ROOT, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda")
def test_cuda_build_compiles_and_on_a_gpu_verifies(tmp_path):
    binary = hr_reduce.ensure_built("openmpi", tmp_path / "build.log", gpu=True)
    assert "reduce_kernel.cu" in (tmp_path / "build.log").read_text()
    if not shutil.which("nvidia-smi") or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode:
        return  # compiled and linked; running needs a GPU
    proc = bench(binary, 2, "--algorithm", "chain", "--chunks", CHUNKS, "--sizes", SIZES,
                 "--iterations", "2", "--warmup", "1")
    result = sweep_ok(proc, "chain")
    path = (result.meta["buffer_memory"], result.meta["additions"])
    assert path in {("device", "gpu"), ("managed", "host")}, result.meta["buffers"]


def test_model_predictions_follow_the_equations(binary):
    proc = bench(binary, 4, "--algorithm", "model-cc", "--chunks", CHUNKS, "--sizes", "64:1024",
                 "--iterations", "3", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    result = hr_reduce.parse(proc.stdout)
    assert result.finished and [r["operation"] for r in result.rows] == ["model-cc"] * 5
    for r in result.rows:
        m = result.meta["model_terms"][r["message_bytes"]]
        assert m["factor"] == 3 + 4 - 2          # n + P - 2
        assert m["unit_bytes"] == -(-r["message_bytes"] // 4 // 3) * 4  # the largest chunk
        assert r["value"] == pytest.approx(m["factor"] * m["unit_time_us"], rel=0.01, abs=0.02)
    proc = bench(binary, 5, "--algorithm", "model-bin", "--sizes", "64:64", "--iterations", "2")
    result = hr_reduce.parse(proc.stdout)
    assert result.meta["model_terms"][64]["factor"] == 3  # ceil(log2 5) binomial rounds


def test_tuning_table_round_trip(binary, tmp_path):
    table = tmp_path / "table.txt"
    proc = bench(binary, 4, "--algorithm", "tuned", "--table-out", str(table), "--sizes", "4:256",
                 "--iterations", "2", "--warmup", "0")
    made = sweep_ok_sizes(proc, 7)
    lines = [ln.split() for ln in table.read_text().splitlines() if not ln.startswith("#")]
    assert [int(ln[1]) for ln in lines] == [4 << i for i in range(7)]
    proc = bench(binary, 4, "--algorithm", "tuned", "--table", str(table), "--sizes", "4:256",
                 "--iterations", "2", "--warmup", "0")
    used = sweep_ok_sizes(proc, 7)
    assert used.meta["choices"] == made.meta["choices"]
    table.write_text("4 64 ring 0 1\n")
    proc = bench(binary, 4, "--algorithm", "tuned", "--table", str(table), "--sizes", "4:8")
    assert proc.returncode != 0 and "line 1: bad entry" in proc.stderr


def sweep_ok_sizes(proc, n):
    assert proc.returncode == 0, proc.stderr
    result = hr_reduce.parse(proc.stdout)
    assert result.finished and len(result.rows) == n
    return result


def test_training_loop_rows(binary):
    proc = bench(binary, 3, "--algorithm", "cb", "--chain", "2", "--train", "4",
                 "--grad-bytes", "4096", "--batch", "2")
    assert proc.returncode == 0, proc.stderr
    result = hr_reduce.parse(proc.stdout)
    assert result.finished
    losses = [r["value"] for r in result.rows if r["metric"] == "loss"]
    assert len(losses) == 4 and losses[-1] < losses[0]  # SGD descends
    agg = [r for r in result.rows if r.get("phase") == "aggregation"]
    assert [r["step"] for r in agg] == [1, 2, 3, 4]
    total = [r["value"] for r in result.rows if r["metric"] == "train_time_s"]
    phases = sum(r["value"] for r in result.rows if r["metric"] == "time_breakdown_s")
    assert total and total[0] == pytest.approx(phases, abs=1e-5)


@pytest.mark.skipif(not shutil.which("mpicc.mpich"), reason="needs Debian's libmpich-dev")
@pytest.mark.parametrize("algorithm,extra", [("mpi", []), ("cc", ["--chain", "2"]), ("chain", [])])
def test_mpich_build_reduces_correctly(algorithm, extra):
    binary = hr_reduce.ensure_built("mpich")
    proc = bench(binary, 3, "--algorithm", algorithm, *extra, "--chunks", CHUNKS, "--sizes", SIZES,
                 "--iterations", "1", "--warmup", "0", mpi="mpich")
    result = sweep_ok(proc, algorithm)
    assert result.meta["mpi_library"].startswith("MPICH")


# ---------------------------------------------------------------- parser on damaged logs

GOOD = """# HR-Reduce latency test (dlobd hr-reduce 1.0)
# Algorithm: chain
# Ranks: 4
# Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Median(us)  Iterations  Chunks  Chain  Choice
4  1.0  0.5  2.0  0.9  5  1  0  chain
8  1.1  0.6  2.1  1.0  5  1  0  chain
# Verified: 2 sizes, the reduced result on rank 0 matched the expected sum
"""


def test_parser_reads_the_median():
    result = hr_reduce.parse(GOOD)
    assert result.status == "ok" and result.finished
    assert [(r["message_bytes"], r["value"], r["operation"]) for r in result.rows] == \
        [(4, 0.9, "reduce"), (8, 1.0, "reduce")]


@pytest.mark.parametrize("text,reason", [
    ("", "empty log"),
    ("hello\n", "no line of hr_reduce's format"),
    (GOOD + GOOD, "a second benchmark header"),
    (GOOD.replace("8  1.1", "4  1.1"), "size 4 after 4"),
    (GOOD.replace("0.6  2.1", "0.6"), "needs 9 columns, found 8"),
    (GOOD.replace("1.0  5  1", "x  5  1"), "median latency 'x' is not a number"),
])
def test_parser_rejects_damaged_logs(text, reason):
    result = hr_reduce.parse(text)
    assert result.status == "unparseable" and reason in result.reason


@pytest.mark.parametrize("buffers,memory,additions", [
    ("host", "host", "host"),
    ("gpu device (cudaMalloc, CUDA-aware MPI: Open MPI v4.1.2), additions on the GPU", "device", "gpu"),
    ("gpu managed (cudaMallocManaged; MPI not CUDA-aware: MPICH Version: 4.0.2), additions on the host",
     "managed", "host"),
    ("gpu (CUDA managed memory)", "managed", "host"),  # the GPU build before --gpu-buffers
])
def test_parser_records_the_buffer_path(buffers, memory, additions):
    result = hr_reduce.parse(GOOD.replace("# Ranks: 4\n", f"# Ranks: 4\n# Buffers: {buffers}\n"))
    assert result.meta["buffers"] == buffers
    assert (result.meta["buffer_memory"], result.meta["additions"]) == (memory, additions)


def test_parser_cut_short_keeps_complete_lines():
    cut = GOOD.split("# Verified")[0] + "16  1.2  0."
    result = hr_reduce.parse(cut)
    assert result.status == "ok" and not result.finished
    assert [r["message_bytes"] for r in result.rows] == [4, 8]


# ---------------------------------------------------------------- launcher


def test_launch_records_an_oversubscribed_run(tmp_path, binary):
    spec = {"id": "scaffe-fig11", "stack": "hr_reduce", "dataset": "none",
            "scales": {"local": {"runnable": True, "needs": [], "time_limit_s": 120,
                                 "fixed": {"processes": 3, "min_bytes": 4, "max_bytes": 256,
                                           "iterations": 2, "warmup": 0, "mpi": "openmpi"}}}}
    attempt = runs.launch(spec, "local", {"algorithm": "cb-2"}, tmp_path)
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", record["reason"]
    assert "--chain" in record["command"] and "2" in record["command"]
    assert record["labels"]["ranks"].startswith("3 ranks")
    assert record["labels"]["mpi"] == "openmpi"
    parsed = parse_run("hr_reduce", attempt)
    assert parsed.finished and len(parsed.rows) == 7


def test_plan_maps_the_spec_axes():
    assert hr_reduce.plan_point({"mpi_impl": "mpich"}, {"hr_runtime": "OpenMPI"})[0] == "mpich"
    mpi, args = hr_reduce.plan_point({"mpi_impl": "hr"}, {"hr_runtime": "OpenMPI"})
    assert mpi == "openmpi" and args[:2] == ["--algorithm", "tuned"]
    assert hr_reduce.plan_point({"algorithm": "cc-8"}, {})[1][:4] == ["--algorithm", "cc", "--chain", "8"]
    mpi, args = hr_reduce.plan_point({"algorithm": "none"},
                                     {"mode": "training loop", "gradient_bytes": 64, "iterations": 3})
    assert args == ["--algorithm", "mpi", "--train", "3", "--grad-bytes", "64", "--batch", "2"]
    for fixed, memory in [({"buffers": "gpu"}, "device"),
                          ({"buffers": "gpu", "gpu_buffers": "auto"}, "auto")]:
        args = hr_reduce.plan_point({"algorithm": "cc-4"}, fixed)[1]
        assert args[args.index("--gpu-buffers") + 1] == memory
    assert "--gpu-buffers" not in hr_reduce.plan_point({"algorithm": "mv2"}, {})[1]
    with pytest.raises(ValueError, match="algorithm 'ring'"):
        hr_reduce.benchmark_args("ring")


# ------------------------------------------------------------------ paper scale: hosts, MVAPICH2


def test_ranks_spread_evenly_over_the_hosts():
    assert mpi_launch.rank_placement([f"10.0.0.{i}" for i in range(20)], 160) == \
        [(f"10.0.0.{i}", 8) for i in range(20)]
    assert mpi_launch.rank_placement(["a", "b"], 5) == [("a", 3), ("b", 2)]
    assert mpi_launch.rank_placement(["a", "b", "c"], 1) == [("a", 1)]


def test_hostfile_in_each_launchers_format(tmp_path):
    placement = mpi_launch.rank_placement(["a", "b"], 4)
    ompi = mpi_launch.write_hostfile(tmp_path / "ompi", "openmpi", placement)
    hydra = mpi_launch.write_hostfile(tmp_path / "hydra", "mpich", placement)
    assert ompi.read_text() == "a slots=2\nb slots=2\n"
    assert hydra.read_text() == "a:2\nb:2\n"


def test_mpirun_uses_the_hostfile_instead_of_oversubscribing(tmp_path):
    hostfile = tmp_path / "hostfile"
    ompi = mpi_launch.mpirun_prefix("openmpi", 160, hostfile)
    assert ["--hostfile", str(hostfile)] == ompi[ompi.index("--hostfile"):][:2]
    assert "--oversubscribe" not in ompi
    assert "--oversubscribe" in mpi_launch.mpirun_prefix("openmpi", 8)
    hydra = mpi_launch.mpirun_prefix("mpich", 160, hostfile)
    assert hydra[1:3] == ["-f", str(hostfile)] and hydra[-2:] == ["-np", "160"]


def test_mvapich2_comes_from_the_install_the_user_names(tmp_path, monkeypatch):
    monkeypatch.setattr(hr_reduce.provenance, "prefix_env", lambda: {})
    monkeypatch.delenv("MVAPICH2_GDR_HOME", raising=False)
    monkeypatch.delenv("MVAPICH2_HOME", raising=False)
    with pytest.raises(NotRunnable) as gdr:
        mpi_launch.mpi_tool("mvapich2-gdr", "mpicc")
    assert str(gdr.value) == ("mvapich2-gdr: set MVAPICH2_GDR_HOME in dlobd_stack_settings to its install directory: "
                              "MVAPICH2-GDR is a registered download (mvapich.cse.ohio-state.edu)")
    # plain MVAPICH2 is free, and the paper-tfos-bigdl Spack environment installs it
    with pytest.raises(NotRunnable) as plain:
        mpi_launch.mpi_tool("mvapich2", "mpicc")
    assert str(plain.value) == ("mvapich2: set MVAPICH2_HOME in dlobd_stack_settings to its install directory: "
                                "MVAPICH2 is a free download (mvapich.cse.ohio-state.edu), or Spack's mvapich2 "
                                "package, which the paper-tfos-bigdl Spack environment installs")
    assert "registered" not in str(plain.value)
    env = yaml.safe_load((ROOT / "spack-envs" / "paper-tfos-bigdl" / "spack.yaml").read_text())
    assert any(spec.split()[0] == "mvapich2" for spec in env["spack"]["specs"])
    monkeypatch.setenv("MVAPICH2_GDR_HOME", str(tmp_path))
    with pytest.raises(NotRunnable, match=f"no {tmp_path}/bin/mpirun"):
        mpi_launch.mpirun_prefix("mvapich2-gdr", 160)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mpirun").write_text("")
    assert mpi_launch.mpirun_prefix("mvapich2-gdr", 160)[0] == str(tmp_path / "bin" / "mpirun")


def test_paper_scale_points_name_the_papers_mpis():
    from dlobd import ROOT, spec

    specs = spec.load_all(ROOT)
    fig11, fig12 = specs["scaffe-fig11"], specs["scaffe-fig12"]
    fixed11 = fig11.scale("paper")["fixed"]
    assert {hr_reduce.plan_point(p, fixed11)[0] for _, p in fig11.points("paper")} == {"mvapich2-gdr"}
    fixed12 = fig12.scale("paper")["fixed"]
    assert {p["mpi_impl"]: hr_reduce.plan_point(p, fixed12)[0] for _, p in fig12.points("paper")} == \
        {"openmpi": "openmpi", "mvapich2": "mvapich2", "hr": "mvapich2-gdr"}
