"""Dry runs of the existing launchers (RunContext.dry_run): no side effect, the real command.

Each case launches one point twice on a provisioned-looking prefix of its own: once as a dry
run, with every way of starting a program made to fail the test and the files under the test's
folder compared before and after; then for real, with the run's process, its samplers and
YARN replaced by stand-ins that record what they were given (and, where a real launch builds,
stages or starts servers on other hosts, those steps replaced by what they return). Both give
the same command, and the dry run writes nothing.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import capabilities, hadoop, inventory, provenance
from dlobd.execution import dryrun, runs
from dlobd import spec as dspec
from dlobd.stacks import bigdl, caffeonspark, grpcbench, hr_reduce, tensorflow, tensorflowonspark
from datafiles import write_idx
from inventories import EXAMPLE, write_other
from dlobd.stacks import runner

WORKERS = "127.0.0.2 127.0.0.3"


def spec(name):
    return yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())


def cifar_files(folder: Path, records: int) -> None:
    folder.mkdir(parents=True)
    for name in bigdl.TRAIN_FILES + (bigdl.TEST_FILE,):
        (folder / name).write_bytes(bytes(bigdl.RECORD_BYTES * records))


@pytest.fixture
def prefix(tmp_path, monkeypatch):
    """A prefix with the dlobd-env.sh provisioning writes and the files launchers look for."""
    pre = tmp_path / "prefix"
    python = pre / "python" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    jars = pre / "jars" / "bigdl"
    jars.mkdir(parents=True)
    for jar in ("bigdl-dllib.jar", "bigdl-core.jar"):
        (jars / jar).write_bytes(b"")
    cifar_files(pre / "data" / "cifar10-synthetic", 10)
    write_idx(pre / "data" / "mnist", 2600, 2000)  # more than the BigDL LeNet points' subsets
    env = {"DLOBD_PREFIX": pre, "DLOBD_PYTHON": python, "DLOBD_PYTHON_HOME": python.parent.parent,
           "SPARK_HOME": pre / "spark", "DLOBD_DATA_DIR": pre / "data",
           "DLOBD_BIGDL_JAR": jars / "bigdl-dllib.jar", "DLOBD_BIGDL_CORE_JAR": jars / "bigdl-core.jar",
           "DLOBD_BIGDL_VERSION": "2.4.0", "DLOBD_HDFS_URI": "hdfs://127.0.0.1:19820",
           "DLOBD_CLUSTER_ADDRESS": "127.0.0.1", "DLOBD_WORKERS": "127.0.0.1"}
    (pre / "etc").mkdir()
    (pre / "etc" / "dlobd-env.sh").write_text("".join(f"export {k}={v}\n" for k, v in env.items()))
    monkeypatch.setenv("DLOBD_PREFIX", str(pre))
    # every capability present: what is judged here is the launchers, not this machine
    monkeypatch.setattr(capabilities, "missing", lambda needs: [])
    provenance.provisioned_env.cache_clear()
    yield pre
    provenance.provisioned_env.cache_clear()


@pytest.fixture
def workers(monkeypatch):
    """Two worker hosts (addresses of this machine; no traffic is sent to them)."""
    env = {**provenance.provisioned_env(), "DLOBD_WORKERS": WORKERS}
    monkeypatch.setattr(provenance, "prefix_env", lambda: env)


def context(tmp_path, experiment, point, dry_run, scale="local"):
    data = spec(experiment)
    attempt = runs.next_attempt(tmp_path / "runs", "local", scale, experiment, point)
    if not dry_run:
        attempt.mkdir(parents=True)
    return runner.RunContext(spec=data, scale=scale, cluster="local", point=point, attempt_dir=attempt,
                           runs_dir=tmp_path / "runs", fixed=dict(data["scales"][scale]["fixed"]),
                           time_limit_s=data["scales"][scale].get("time_limit_s"), dry_run=dry_run)


def tree(root: Path) -> set:
    return {(str(p), p.stat().st_mtime_ns) for p in root.rglob("*")}


def forbidden(*args, **kwargs):
    raise AssertionError(f"a dry run started a program: {args[0] if args else kwargs}")


class Recorded:
    """A stand-in for the run's process: records its command and exits 0."""

    commands = []

    def __init__(self, argv, **kwargs):
        Recorded.commands.append(list(argv))
        self.pid, self.returncode, self.stdin = 999999, 0, None

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


def dry_and_real(tmp_path, monkeypatch, module, experiment, point, scale="local"):
    """(dry-run result, real result, command the real run started)."""
    provenance.prefix_env()  # dlobd-env.sh is read (by bash) before the guard
    before = tree(tmp_path)
    with monkeypatch.context() as guard:
        guard.setattr(subprocess, "Popen", forbidden)
        guard.setattr(subprocess, "run", forbidden)
        dry = module.launch(context(tmp_path, experiment, point, True, scale))
    assert dry.status == "dry run", dry.reason
    assert tree(tmp_path) == before, "the dry run wrote files"
    assert not (tmp_path / "runs").exists()

    Recorded.commands = []
    monkeypatch.setattr(subprocess, "Popen", Recorded)
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 0, "strace -- version 6.1\n", ""))  # version probes
    monkeypatch.setattr(runner, "start_samplers", lambda ctx, pid: [])
    monkeypatch.setattr(runner, "stop_samplers", lambda samplers: None)
    monkeypatch.setattr(hadoop, "save_applications", lambda tag, attempt_dir: [])
    real = module.launch(context(tmp_path, experiment, point, False, scale))
    assert real.status == "ok", real.reason
    return dry, real, Recorded.commands[-1]


def test_bigdl(tmp_path, monkeypatch, prefix):
    dry, real, started = dry_and_real(tmp_path, monkeypatch, bigdl, "dlobd-fig7a", {"network": "loopback"})
    assert dry.command == real.command == started
    assert dry.cwd == real.cwd
    # the subset the real run copied is where the dry run's command reads (LeNet's MNIST files)
    assert Path(dry.command[dry.command.index("-f") + 1], bigdl.IDX_TRAIN[0]).is_file()


def test_tensorflowonspark(tmp_path, monkeypatch, prefix):
    staged = []
    monkeypatch.setattr(hadoop, "hdfs_stage",
                        lambda local, path: staged.append(path) or hadoop.hdfs_uri(path))
    point = {"workload": "mnist", "network": "loopback", "gpus": 2}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, tensorflowonspark, "dlobd-fig5b", point)
    assert dry.command == real.command == started
    assert staged == ["/dlobd/data/mnist"]  # only the real run staged its data
    assert "hdfs://127.0.0.1:19820/dlobd/data/mnist" in dry.command


def test_tensorflow_across_hosts(tmp_path, monkeypatch, prefix, workers):
    # the ports are the OS's choice at launch: the stand-in gives both runs the same
    monkeypatch.setattr(tensorflow, "free_ports", lambda n: list(range(41000, 41000 + n)))
    point = {"network": "eth-10g-emulated", "nodes": 2}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, tensorflow, "dlobd-fig11", point)
    assert dry.command == real.command == started
    written = json.loads((Path(real.cwd) / tensorflow.PLAN_FILE).read_text())["tasks"]
    assert [p["command"] for p in dry.extra["processes"]] == [t["argv"] for t in written]
    assert [p["host"] for p in dry.extra["processes"]] == [t["host"] for t in written]
    assert {p["host"] for p in dry.extra["processes"]} == set(WORKERS.split())


def test_grpcbench_on_loopback(tmp_path, monkeypatch, prefix):
    monkeypatch.setattr(grpcbench, "build", lambda out=None: grpcbench.build_dir() / grpcbench.BINARY)
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench, "tfgrpc-fig7", {"network": "loopback"})
    assert dry.command == real.command == started


def test_grpcbench_across_hosts(tmp_path, monkeypatch, prefix, workers):
    servers = []

    def started_servers(hosts, binary, mode, adir, env):
        servers.extend(grpcbench.server_argv(h, binary, mode, adir, env) for h in hosts)
        return [], [f"{h}:4242" for h in hosts]

    monkeypatch.setattr(grpcbench, "start_servers", started_servers)
    point = {"network": "eth-10g-emulated", "payload_scheme": "skew"}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench, "tfgrpc-fig14", point)
    port = f":{grpcbench.PORT_AT_LAUNCH}"
    assert [a.replace(port, ":4242") for a in dry.command] == real.command == started
    assert [p["command"] for p in dry.extra["processes"]] == servers
    assert [p["host"] for p in dry.extra["processes"]] == ["127.0.0.2", "127.0.0.2"]


def test_grpcbench_capture(tmp_path, monkeypatch, prefix):
    monkeypatch.setattr(grpcbench, "_stop", lambda procs: None)
    monkeypatch.setattr(grpcbench, "free_ports", lambda n: list(range(42000, 42000 + n)))
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench, "tfgrpc-fig4", {"model": "alexnet"})
    assert dry.command == real.command == started
    # the parameter servers and workers the real run started before its chief
    assert [p["command"] for p in dry.extra["processes"]] == Recorded.commands[:-1]


def test_hr_reduce_across_hosts(tmp_path, monkeypatch, prefix, workers):
    monkeypatch.setattr(hr_reduce, "ensure_built", lambda mpi, log, gpu=False: hr_reduce.built_binary(mpi, gpu))
    dry, real, started = dry_and_real(tmp_path, monkeypatch, hr_reduce, "scaffe-fig11", {"algorithm": "cb-4"})
    assert dry.command == real.command == started
    assert dry.extra["files"]["hostfile"] == (Path(real.cwd) / "hostfile").read_text()
    assert dry.extra["files"]["hostfile"] == "127.0.0.2 slots=4\n127.0.0.3 slots=4\n"


def test_runs_launch_dry_run_writes_no_attempt(tmp_path, prefix):
    data = spec("tfgrpc-fig7")
    result = runs.launch(data, "local", {"network": "loopback"}, tmp_path / "runs", dry_run=True)
    assert result.status == "dry run" and result.command[1] == "run"
    assert Path(result.cwd) == runs.next_attempt(tmp_path / "runs", "local", "local", "tfgrpc-fig7",
                                                 {"network": "loopback"})
    assert not (tmp_path / "runs").exists()


def test_runs_launch_dry_run_gives_the_reason_of_a_point_it_cannot_run(tmp_path, monkeypatch):
    data = spec("scaffe-fig8")  # no local scale that runs: the spec says why
    reason = data["scales"]["local"]["reason"]
    result = runs.launch(data, "local", {"framework": "caffe", "gpus": 8}, tmp_path / "runs", dry_run=True)
    assert (result.status, result.reason, result.command) == ("not runnable", reason, None)
    assert not (tmp_path / "runs").exists()


def test_run_command_in_a_dry_run_opens_nothing(tmp_path):
    ctx = runner.RunContext(spec={}, scale="local", cluster="local", point={}, attempt_dir=tmp_path / "nowhere",
                          runs_dir=tmp_path, dry_run=True)
    result = runner.run_command(ctx, ("echo", "hi"), cwd="/x")
    assert (result.command, result.status, result.cwd) == (["echo", "hi"], "dry run", "/x")
    assert os.listdir(tmp_path) == []


def test_grpcbench_rdma_points_run_the_rdma_grpc_build(tmp_path, monkeypatch, prefix, workers):
    """A grpc+rdma point (paper scale) runs the suite the grpc_bench role built against the
    site's RDMA-gRPC, on every host; the other points the build against the system's gRPC."""
    servers = []

    def started_servers(hosts, binary, mode, adir, env):
        servers.extend(binary for _ in hosts)
        return [], [f"{h}:4242" for h in hosts]

    monkeypatch.setattr(grpcbench, "start_servers", started_servers)
    point = {"network": "grpc+rdma", "payload_bytes": 8}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench,
                                      "slides-rdma-grpc-latency-small", point, scale="paper")
    rdma_build = str(prefix / "tf-grpc-bench-rdma" / "bin" / grpcbench.BINARY)
    # over ssh: the binary is inside the remote command line
    assert any(rdma_build in arg for arg in started) and any(rdma_build in arg for arg in dry.command)
    assert servers == [rdma_build]
    assert [any(rdma_build in arg for arg in p["command"]) for p in dry.extra["processes"]] == [True]


# ---------------------------------------------- the paper stacks of an inventory's cluster

def inventory_dry_runs(path, tmp_path, experiments) -> dict:
    """(experiment, point id) -> dry-run result of the points of `experiments` at paper scale,
    on the cluster of the inventory at `path`; nothing is written."""
    with provenance.inventory_in_use(inventory.load(path)):
        done = dryrun.dry_runs(dspec.load_all(ROOT), "paper", tmp_path / "runs", experiments=experiments)
    assert not (tmp_path / "runs").exists()
    text = " ".join(" ".join(r.command) for *_, r in done if r.status == "dry run")
    assert not re.search(r"\b127\.\d+\.\d+\.\d+\b|\blocalhost\b", text)
    return {(eid, pid): r for eid, pid, r in done}


def caffeonspark_jar(argv) -> list:
    at = argv.index("--class")
    return argv[at + 1:at + 3]


def test_caffeonspark_and_cntk_points_of_the_example_inventory(tmp_path):
    """The example IB cluster runs the caffeonspark and mmlspark roles: CaffeOnSpark's CPU build
    and CNTK's GPU build are planned on its hosts; a device without a build names the setting
    it lacks, a GPU device the worker without a GPU that YARN may place an executor on."""
    done = inventory_dry_runs(EXAMPLE, tmp_path, ["dlobd-fig4a", "dlobd-fig4c"])
    workers = ["192.168.100.2", "192.168.100.3", "192.168.100.4"]
    cos = done["dlobd-fig4a", "device-cpu-openblas_nodes-2"]
    assert cos.status == "dry run" and cos.command[0] == "$SPARK_HOME/bin/spark-submit"
    home = "/scratch/dlobd/dlobd-stack/caffeonspark/cpu-openblas"
    assert caffeonspark_jar(cos.command) == ["com.yahoo.ml.caffe.CaffeOnSpark",
                                             f"{home}/lib/{caffeonspark.JAR}"]
    assert f"spark.executorEnv.LD_LIBRARY_PATH={home}/lib:/usr/local/cuda/lib64" in cos.command
    assert cos.command[-1].startswith("hdfs://192.168.100.1:19820/dlobd/models/")
    assert [h["address"] for h in cos.hosts] == workers
    assert ("device gpu-cudnn: YARN may place an executor on any worker, and worker(s) 192.168.100.2 "
            "have no GPU") in done["dlobd-fig4a", "device-gpu-cudnn_nodes-2"].reason
    assert "set CAFFEONSPARK_HOME_CPU_MKL" in done["dlobd-fig4a", "device-cpu-mkl_nodes-1"].reason

    cntk = done["dlobd-fig4c", "device-gpu-cudnn_nodes-2"]
    assert cntk.status == "dry run", cntk.reason
    assert cntk.command[cntk.command.index("--gpu-machine") + 1] == "192.168.100.3,2"
    remote = cntk.extra["remote_env"]
    assert remote["DLOBD_MMLSPARK_HOSTS"] == "192.168.100.3 192.168.100.4"
    assert remote["PATH"].startswith("/scratch/dlobd/dlobd-stack/libexec/mmlspark:/opt/cntk-2.2-gpu/cntk/bin:"
                                     "/opt/openmpi-1.10.3/bin:")
    # Spark 2.2's PySpark on the example's Python 3.6 (mmlspark_python), whose version provisioning finds
    assert "spark.executorEnv.PYSPARK_PYTHON=/opt/python-3.6/bin/python" in cntk.command
    assert "spark.pyspark.driver.python=/opt/python-3.6/bin/python" in cntk.command
    assert "the mmlspark role finds its version when provisioning" in cntk.extra["notes"][0]
    assert "set CNTK_HOME_CPU_OPENBLAS" in done["dlobd-fig4c", "device-cpu-openblas_nodes-1"].reason


def test_caffeonspark_and_cntk_points_of_another_inventory(tmp_path):
    """A cluster whose five workers all have GPUs, with other builds: CaffeOnSpark's GPU points
    run there (over RDMA too), its CPU points with MKL; CNTK's CPU build on the workers."""
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8),
                       dlobd_paper_stacks=["caffeonspark", "mmlspark"],
                       caffeonspark_install_method="mirror", caffeonspark_builds=["cpu-mkl", "gpu-cudnn"],
                       mmlspark_cntk_homes={"cpu-mkl": "/sw/cntk-2.2-cpu"}, mmlspark_mpi_home="/sw/openmpi-1.10",
                       mmlspark_python="/sw/python-3.6/bin/python")
    done = inventory_dry_runs(path, tmp_path, ["dlobd-fig4a", "dlobd-fig4c", "dlobd-fig5a"])
    workers = [f"172.31.7.{10 + i}" for i in range(3, 8)]
    home = "/lustre/dlobd/stack/caffeonspark"
    libs = "/usr/local/cuda/lib64:/opt/intel/mkl/lib/intel64"
    for point, build in (("device-gpu-cudnn_nodes-4", "gpu-cudnn"), ("device-cpu-mkl_nodes-4", "cpu-mkl")):
        cos = done["dlobd-fig4a", point]
        assert cos.status == "dry run", cos.reason
        assert caffeonspark_jar(cos.command) == ["com.yahoo.ml.caffe.CaffeOnSpark",
                                                 f"{home}/{build}/lib/{caffeonspark.JAR}"]
        assert f"spark.driver.extraLibraryPath={home}/{build}/lib:{libs}" in cos.command
        assert cos.command[-1].startswith("hdfs://172.31.7.11:19820/")
        assert [h["address"] for h in cos.hosts] == workers
    rdma = done["dlobd-fig5a", "device-gpu-cudnn_model-lenet_network-rdma_nodes-4"]
    assert rdma.command[rdma.command.index("-connection") + 1] == "infiniband"
    assert "set CAFFEONSPARK_HOME_CPU_OPENBLAS" in done["dlobd-fig4a", "device-cpu-openblas_nodes-2"].reason
    assert "set CAFFEONSPARK_HOME_GPU " in done["dlobd-fig4a", "device-gpu_nodes-2"].reason

    cntk = done["dlobd-fig4c", "device-cpu-mkl_nodes-4"]
    assert cntk.status == "dry run", cntk.reason
    assert cntk.extra["remote_env"]["DLOBD_MMLSPARK_HOSTS"] == " ".join(workers[:4])
    assert cntk.extra["remote_env"]["DLOBD_MMLSPARK_TCP_IF"] == "hsn0"
    assert "/sw/cntk-2.2-cpu/cntk/bin:/sw/openmpi-1.10/bin" in cntk.extra["remote_env"]["PATH"]
    assert "set CNTK_HOME_GPU_CUDNN" in done["dlobd-fig4c", "device-gpu-cudnn_nodes-2"].reason
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON=/sw/python-3.6/bin/python" in cntk.command


def test_cntk_points_without_mmlspark_python_name_it(tmp_path):
    """The mmlspark role without mmlspark_python: the stacks' Python 3.11 cannot run Spark 2.2's
    PySpark, so every CNTK point that has its build and fits the cluster names the setting."""
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8), dlobd_paper_stacks=["mmlspark"],
                       mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2-gpu"}, mmlspark_mpi_home="/sw/openmpi-1.10")
    done = inventory_dry_runs(path, tmp_path, ["dlobd-fig4c"])
    fitting = [done["dlobd-fig4c", f"device-gpu-cudnn_nodes-{n}"] for n in (1, 2, 4)]
    assert all(r.status == "not runnable" for r in fitting)
    assert all("set MMLSPARK_PYTHON (role mmlspark)" in r.reason and "mmlspark_python" in r.reason for r in fitting)


def test_dry_runs_of_a_spec_with_runs_from_are_the_other_specs_points(tmp_path):
    specs = dspec.load_all(ROOT)
    done = dryrun.dry_runs(specs, "local", tmp_path / "runs", experiments=["slides-resnet50"])
    assert sorted((eid, pid) for eid, pid, _ in done) == sorted(
        ("dlobd-fig11", pid) for pid, _ in specs["dlobd-fig11"].points("local"))
    assert not (tmp_path / "runs").exists()


TFOS_EXPERIMENTS = ["dlobd-fig5b", "dlobd-fig9"]  # every spec whose stack is (or whose axis has) TFoS


def tfos_points(done) -> dict:
    specs = dspec.load_all(ROOT)
    return {(eid, pid): r for (eid, pid), r in done.items()
            if dict(specs[eid].points("paper"))[pid].get(specs[eid].data.get("stack_axis"), specs[eid].stack("paper"))
            == "tensorflowonspark"}


# TFoS 1.0.8 registers each executor at its default-route (here Ethernet) address: train_tf1.py
# puts the TF nodes on the workers' cluster (IPoIB) addresses instead
ETH_TO_CLUSTER = ",".join(f"10.40.7.{10 + i}=172.31.7.{10 + i}" for i in range(3, 8))


def drop_the_too_big(done: dict, sized=("ipoib", "rdma")) -> None:
    """At most gpus_per_node executors on a node (cifar10 2, mnist 1), the parameter server's
    too: fig5b's cifar10 on 16 GPUs and mnist on 8 ask for 9 of write_other's 5 workers, which
    the points of the `sized` networks (those with their Python) say."""
    too_big = {(e, p) for e, p in done if "cifar10" in p and "gpus-16_" in p or "mnist" in p and "gpus-8_" in p}
    assert len(too_big) == 4
    for key in too_big:
        reason = done.pop(key).reason
        if any(f"network-{n}_" in key[1] for n in sized):
            assert reason.startswith("needs 9 worker nodes: the inventory has 5 in group workers"), key


def test_tfos_paper_points_run_tfos_1_in_the_site_python(tmp_path):
    """The paper profile's TFoS points of a cluster that gives DLOBD_TFOS_PYTHON: train_tf1.py
    (TFoS 1.0.8, TensorFlow 1.4.0) in that Python, the verbs points in DLOBD_TF_RDMA_PYTHON."""
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8), dlobd_stack_settings={
        "RDMA_GRPC_HOME": "/sw/rdma-grpc", "DLOBD_TF_RDMA_PYTHON": "/sw/tf1-verbs/bin/python",
        "TF_CNN_BENCHMARKS_HOME": "/sw/tf-benchmarks", "DLOBD_TFOS_PYTHON": "/sw/py35-tf14/bin/python"})
    done = tfos_points(inventory_dry_runs(path, tmp_path, TFOS_EXPERIMENTS))
    assert len(done) == 16  # fig5b's 14, fig9's 2 TFoS points
    train_tf1 = str(ROOT / "workloads" / "tensorflowonspark" / "train_tf1.py")
    events = (tmp_path / "runs").resolve()
    drop_the_too_big(done)
    for (eid, pid), r in done.items():
        assert r.status == "dry run", (eid, pid, r.reason)
        python = "/sw/tf1-verbs/bin/python" if "network-rdma" in pid else "/sw/py35-tf14/bin/python"
        at = r.command.index(train_tf1)
        assert r.command[0] == "$SPARK_HOME/bin/spark-submit" and f"spark.pyspark.python={python}" in r.command
        assert f"spark.executorEnv.PYSPARK_PYTHON={python}" in r.command
        assert r.command[at + 1:at + 5] == ["--model", "mnist_softmax" if "mnist" in pid or eid == "dlobd-fig9"
                                            else "cifar10_cnn", "--input-mode", "spark"]
        assert r.versions["tensorflowonspark"] == "1.0.8" and r.versions["tensorflow"] == "1.4.0"
        assert str(events) in " ".join(r.command)  # the event log goes to the attempt
    fig9 = done["dlobd-fig9", "framework-tensorflowonspark_network-ipoib"]
    head = fig9.command[:fig9.command.index(train_tf1)]
    confs = [head[i + 1] for i, a in enumerate(head) if a == "--conf"]
    assert head[:9] == ["$SPARK_HOME/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
                        "--num-executors", "4", "--executor-cores", "1"]
    # 4 executors on several workers: one per NodeManager, sized when YARN's memory is known
    assert confs[:17] == [
        "spark.dynamicAllocation.enabled=false", "spark.executor.cores=1", "spark.task.cpus=1",
        "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=600s", "spark.task.maxFailures=1",
        "spark.yarn.maxAppAttempts=1", "spark.pyspark.python=/sw/py35-tf14/bin/python",
        "spark.pyspark.driver.python=/sw/py35-tf14/bin/python",
        "spark.executorEnv.PYSPARK_PYTHON=/sw/py35-tf14/bin/python", "spark.executorEnv.TZ=UTC",
        "spark.executorEnv.TF_CPP_MIN_LOG_LEVEL=1",
        "spark.yarn.executor.memoryOverhead=<at launch: (NodeManager memory - the ApplicationMaster's) / 1, "
        "in YARN's steps, less the heap's 512 MiB>", "spark.yarn.am.memory=512m",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON=/sw/py35-tf14/bin/python",
        confs[15], "spark.eventLog.enabled=true"]
    assert fig9.command[fig9.command.index(train_tf1):] == [
        train_tf1, "--model", "mnist_softmax", "--input-mode", "spark",
        "--data-dir", "hdfs://172.31.7.11:19820/dlobd/data/mnist", "--workers", "3", "--ps", "1",
        "--num-gpus", "0", "--batch-size", "128", "--epochs", "1", "--partitions", "6", "--log-every", "10",
        "--protocol", "grpc", "--address-map", ETH_TO_CLUSTER]
    assert fig9.labels["parameter_servers"] == "1"
    cifar = done["dlobd-fig5b", "gpus-8_network-rdma_workload-cifar10"]
    assert cifar.command[cifar.command.index(train_tf1):] == [
        train_tf1, "--model", "cifar10_cnn", "--input-mode", "spark",
        "--data-dir", "hdfs://172.31.7.11:19820/dlobd/data/cifar10-synthetic", "--workers", "8", "--ps", "1",
        "--num-gpus", "1", "--batch-size", "128", "--epochs", "1", "--partitions", "16", "--log-every", "10",
        "--protocol", "grpc+verbs", "--address-map", ETH_TO_CLUSTER]
    assert "--num-executors" in cifar.command and cifar.command[cifar.command.index("--num-executors") + 1] == "9"
    # what fig5b's paper leaves unstated runs with its spec's assumed values, labelled so
    assert cifar.labels["parameter_servers"] == "1"
    assert cifar.labels["assumed"]["batch"].startswith("128, assumed, not stated by the paper (Fig. 9")


def test_tfos_paper_points_without_the_site_python_name_it(tmp_path):
    """A cluster that gives no DLOBD_TFOS_PYTHON (the example's does): every TFoS point the
    cluster's size allows, but those of TF's verbs channel (DLOBD_TF_RDMA_PYTHON), is not
    runnable, naming the setting."""
    assert "DLOBD_TFOS_PYTHON" in inventory.load(EXAMPLE).settings
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8))
    rdma_python = "/sw/tf1-verbs/bin/python"
    done = tfos_points(inventory_dry_runs(path, tmp_path, TFOS_EXPERIMENTS))
    assert len(done) == 16
    drop_the_too_big(done, sized=("rdma",))
    named = 0
    for (eid, pid), r in done.items():
        if "network-rdma" in pid:
            assert r.status == "dry run", (eid, pid, r.reason)
            assert f"spark.pyspark.python={rdma_python}" in r.command
        else:
            assert r.status == "not runnable", (eid, pid)
            assert "set DLOBD_TFOS_PYTHON in dlobd_stack_settings" in r.reason
            assert "TensorFlowOnSpark 1.0.8 runs TensorFlow 1.4.0 in a Python 3.5 or 2.7" in r.reason
            named += 1
    assert named == 6  # every IPoIB point that fits
