"""Dry runs of the existing launchers (RunContext.dry_run): no side effect, the real command.

Each case launches one point twice on a provisioned-looking prefix of its own: once as a dry
run, with every way of starting a program made to fail the test and the files under the test's
folder compared before and after; then for real, with the run's process, its samplers and
YARN replaced by stand-ins that record what they were given (and, where a real launch builds,
stages or starts servers on other hosts, those steps replaced by what they return). Both give
the same command, and the dry run writes nothing.
"""

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, NotRunnable
from dlobd.cluster import capabilities, hadoop, inventory, provenance, remote
from dlobd.execution import checks, dryrun, runs
from dlobd import spec as dspec
from dlobd.stacks import (bigdl, caffeonspark, grpcbench, hr_reduce, mmlspark, tensorflow,
                          tensorflowonspark)
from datafiles import write_idx
from inventories import EXAMPLE, OTHER_STACK_SETTINGS, PAPER_DATASETS, write_other, write_plain
import stackfakes
from dlobd.stacks import runner
from dlobd.stacks.shared import tf_cluster

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
    # each host chooses its tasks' ports at launch (the stand-in for its ssh answers 41000 on);
    # the dry run shows what it will choose
    asked = []
    monkeypatch.setattr(remote, "ports_on", lambda host, n: asked.append((host, n)) or list(range(41000, 41000 + n)))
    point = {"network": "eth-10g-emulated", "nodes": 2}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, tensorflow, "dlobd-fig11", point)
    assert dry.command == real.command == started
    assert asked == [("127.0.0.2", 3), ("127.0.0.3", 1)]  # worker:0, ps:0 and the chief on the first
    written = json.loads((Path(real.cwd) / tensorflow.PLAN_FILE).read_text())["tasks"]
    assert [p["command"] for p in real.extra["processes"]] == [t["argv"] for t in written]
    assert [p["host"] for p in dry.extra["processes"]] == [t["host"] for t in written]
    assert {p["host"] for p in dry.extra["processes"]} == set(WORKERS.split())
    assert [p["ports"]["server"] for p in real.extra["processes"]] == [41000, 41000, 41001, 41002]
    assert [p["ports"]["server"] for p in dry.extra["processes"]] == [
        "<port 1 chosen on 127.0.0.2>", "<port chosen on 127.0.0.3>", "<port 2 chosen on 127.0.0.2>",
        "<port 3 chosen on 127.0.0.2>"]
    assert all(d["ports_chosen"] == r["ports_chosen"] == f"on {d['host']}"
               for d, r in zip(dry.extra["processes"], real.extra["processes"]))
    # the commands the run started are the dry run's with each host's answer for its placeholder
    answers = {d["ports"]["server"]: str(r["ports"]["server"])
               for d, r in zip(dry.extra["processes"], real.extra["processes"])}
    for d, r in zip(dry.extra["processes"], real.extra["processes"]):
        text = json.dumps(d["command"])
        for placeholder, port in answers.items():
            text = text.replace(placeholder, port)
        assert json.loads(text) == r["command"]


def test_tensorflow_across_hosts_on_the_inventorys_worker_ports(tmp_path, monkeypatch, prefix, workers):
    """With dlobd_worker_ports the tasks' ports are the range's first on each host: the dry run
    shows the very command the run starts, and nothing is asked of the hosts."""
    monkeypatch.setitem(provenance.prefix_env(), remote.WORKER_PORTS, "40000-40999")
    monkeypatch.setattr(remote, "ports_on", forbidden)
    point = {"network": "eth-10g-emulated", "nodes": 2}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, tensorflow, "dlobd-fig11", point)
    assert dry.command == real.command == started
    assert dry.extra["processes"] == real.extra["processes"]
    assert [(p["host"], p["ports"], p["ports_chosen"]) for p in dry.extra["processes"]] == [
        ("127.0.0.2", {"server": 40000}, "from dlobd_worker_ports 40000-40999"),
        ("127.0.0.3", {"server": 40000}, "from dlobd_worker_ports 40000-40999"),
        ("127.0.0.2", {"server": 40001}, "from dlobd_worker_ports 40000-40999"),
        ("127.0.0.2", {"server": 40002}, "from dlobd_worker_ports 40000-40999")]


def test_grpcbench_on_loopback(tmp_path, monkeypatch, prefix):
    monkeypatch.setattr(grpcbench, "build", lambda out=None: grpcbench.build_dir() / grpcbench.BINARY)
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench, "tfgrpc-fig7", {"network": "loopback"})
    assert dry.command == real.command == started


def test_grpcbench_across_hosts(tmp_path, monkeypatch, prefix, workers):
    servers = []

    def started_servers(hosts, commands, adir):
        servers.extend(commands)
        return [], [f"{h}:{4242 + i}" for i, h in enumerate(hosts)]

    monkeypatch.setattr(grpcbench, "start_servers", started_servers)
    point = {"network": "eth-10g-emulated", "payload_scheme": "skew"}
    dry, real, started = dry_and_real(tmp_path, monkeypatch, grpcbench, "tfgrpc-fig14", point)
    assert real.command == started
    # each server binds port 0 on its host and prints the port it got, which the workers call
    def words(argv):  # an ssh command's remote line as its words (quoting differs with the text)
        return argv[:-1] + shlex.split(argv[-1])

    assert [w.replace("<port 1 chosen on 127.0.0.2>", "4242").replace("<port 2 chosen on 127.0.0.2>", "4243")
            for w in words(dry.command)] == words(real.command)
    assert [p["command"] for p in real.extra["processes"]] == servers
    assert all("--listen 127.0.0.2:0 " in c[-1] for c in servers)
    assert [(p["host"], p["ports"], p["ports_chosen"]) for p in dry.extra["processes"]] == [
        ("127.0.0.2", {"listen": "<port 1 chosen on 127.0.0.2>"}, "on 127.0.0.2"),
        ("127.0.0.2", {"listen": "<port 2 chosen on 127.0.0.2>"}, "on 127.0.0.2")]
    assert [p["ports"] for p in real.extra["processes"]] == [{"listen": 4242}, {"listen": 4243}]


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

    def started_servers(hosts, commands, adir):
        servers.extend(next(a for a in shlex.split(c[-1]) if a.endswith(grpcbench.BINARY)) for c in commands)
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
    it lacks. Two of its three workers have GPUs: GPU executors ask for their YARN node label,
    which Hadoop 2.7 makes exclusive, so CPU executors have the one other worker."""
    done = inventory_dry_runs(EXAMPLE, tmp_path, ["dlobd-fig4a", "dlobd-fig4c"])
    cos = done["dlobd-fig4a", "device-cpu-openblas_nodes-1"]
    # the site's Spark 1.6 beside the hosts' 2.1 (CAFFEONSPARK_SPARK_HOME)
    assert cos.status == "dry run" and cos.command[0] == "/opt/spark-1.6.2-bin-hadoop2.6/bin/spark-submit"
    home = "/scratch/dlobd/dlobd-stack/caffeonspark/cpu-openblas"
    assert caffeonspark_jar(cos.command) == ["com.yahoo.ml.caffe.CaffeOnSpark",
                                             f"{home}/lib/{caffeonspark.JAR}"]
    assert f"spark.executorEnv.LD_LIBRARY_PATH={home}/lib:/usr/local/cuda/lib64" in cos.command
    assert cos.command[-1].startswith("hdfs://192.168.100.1:19820/dlobd/models/")
    assert [h["address"] for h in cos.hosts] == ["192.168.100.2"]
    assert "nodeLabelExpression" not in " ".join(cos.command)
    assert done["dlobd-fig4a", "device-cpu-openblas_nodes-2"].reason == (
        "2 nodes: the cluster has 1 worker(s) outside group gpu (node02; YARN 2.7's node label gpu is exclusive, "
        "so CPU executors do not run on node03, node04)")
    gpu = done["dlobd-fig4a", "device-gpu-cudnn_nodes-2"]
    assert gpu.status == "dry run" and "spark.yarn.executor.nodeLabelExpression=gpu" in gpu.command
    assert [h["address"] for h in gpu.hosts] == ["192.168.100.3", "192.168.100.4"]
    assert done["dlobd-fig4a", "device-cpu-mkl_nodes-1"].reason == (
        "device cpu-mkl: no CaffeOnSpark build for it: add cpu-mkl to caffeonspark_builds (role caffeonspark, "
        "which records CAFFEONSPARK_HOME_CPU_MKL)" + capabilities.MKL_SOURCES)

    cntk = done["dlobd-fig4c", "device-gpu-cudnn_nodes-2"]
    assert cntk.status == "dry run", cntk.reason
    # one rank a node, as Fig. 4(c) runs one device a node, on hosts of 2 GPUs
    assert cntk.command[cntk.command.index("--gpu-machine") + 1] == "192.168.100.3,1"
    remote = cntk.extra["remote_env"]
    assert remote["DLOBD_MMLSPARK_HOSTS"] == "192.168.100.3 192.168.100.4"
    assert remote["PATH"].startswith("/scratch/dlobd/dlobd-stack/libexec/mmlspark:/opt/cntk-2.2-gpu/cntk/bin:"
                                     "/opt/openmpi-1.10.3/bin:")
    # Spark 2.2's PySpark on the example's Python 3.6 (mmlspark_python), whose version provisioning finds
    assert "spark.executorEnv.PYSPARK_PYTHON=/opt/python-3.6/bin/python" in cntk.command
    assert "spark.pyspark.driver.python=/opt/python-3.6/bin/python" in cntk.command
    assert "the mmlspark role finds its version when provisioning" in cntk.extra["notes"][0]
    assert done["dlobd-fig4c", "device-cpu-openblas_nodes-1"].reason.endswith(
        ": add cpu-openblas: <its install> to mmlspark_cntk_homes (role mmlspark; CNTK_HOME_CPU_OPENBLAS)")


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
    # MKL: the role's PyPI wheels in the prefix (no site MKL named)
    libs = "/usr/local/cuda/lib64:/lustre/dlobd/stack/mkl-2026.2.0/lib"
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
    assert done["dlobd-fig4a", "device-cpu-openblas_nodes-2"].reason.endswith(
        ": add cpu-openblas to caffeonspark_builds (role caffeonspark, which records CAFFEONSPARK_HOME_CPU_OPENBLAS)")
    assert done["dlobd-fig4a", "device-gpu_nodes-2"].reason.endswith(
        ": add gpu to caffeonspark_builds (role caffeonspark, which records CAFFEONSPARK_HOME_GPU)")

    cntk = done["dlobd-fig4c", "device-cpu-mkl_nodes-4"]
    assert cntk.status == "dry run", cntk.reason
    assert cntk.extra["remote_env"]["DLOBD_MMLSPARK_HOSTS"] == " ".join(workers[:4])
    # the IPoIB network, which provisioning finds, not one host's interface name
    assert cntk.extra["remote_env"]["DLOBD_MMLSPARK_TCP_IF"] == (
        "<the network of dlobd_cluster_interface, found at provisioning>")
    assert "/sw/cntk-2.2-cpu/cntk/bin:/sw/openmpi-1.10/bin" in cntk.extra["remote_env"]["PATH"]
    assert "add gpu-cudnn: <its install> to mmlspark_cntk_homes" in done["dlobd-fig4c", "device-gpu-cudnn_nodes-2"].reason
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON=/sw/python-3.6/bin/python" in cntk.command


def test_check_an_mpi_interface_that_a_host_names_otherwise(tmp_path):
    """MMLSpark's one mpirun hands btl_tcp_if_include to every host: an interface name that the
    GPU hosts call otherwise (hsn1 beside the others' hsn0) is refused, naming the host; the
    dry run prints that environment, so the command can be pasted."""
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8), dlobd_paper_stacks=["mmlspark"],
                       mmlspark_cntk_homes={"cpu-mkl": "/sw/cntk-2.2-cpu"}, mmlspark_mpi_home="/sw/openmpi-1.10",
                       mmlspark_python="/sw/python-3.6/bin/python", mmlspark_tcp_if_include="hsn0")
    hosts = yaml.safe_load(path.read_text())
    hosts["all"]["hosts"]["ibm-a6"]["dlobd_cluster_interface"] = "hsn1"
    path.write_text(yaml.safe_dump(hosts))
    specs = dspec.load_all(ROOT)
    with provenance.inventory_in_use(inventory.load(path)):
        done = dryrun.dry_runs(specs, "paper", tmp_path / "runs", experiments=["dlobd-fig4c"])
    broken = dryrun.check(done, specs, "paper", inventory.load(path))
    assert broken == [
        "dlobd-fig4c device-cpu-mkl_nodes-4: interfaces on their hosts: btl_tcp_if_include hsn0 on ibm-a6, whose "
        "cluster interface is hsn1 (mmlspark_tcp_if_include: give the network, e.g. 192.168.100.0/24, which every "
        "host has)"]
    four = next(r for _, pid, r in done if pid == "device-cpu-mkl_nodes-4")
    assert any(line.startswith("    environment on the MPI hosts: ") and "DLOBD_MMLSPARK_TCP_IF=hsn0" in line
               for line in dryrun.describe(four))


def test_a_paper_build_is_submitted_by_the_spark_it_was_built_for(tmp_path):
    """CaffeOnSpark's paper build (Spark 1.6, Scala 2.10) and MMLSpark 0.10 (Spark 2.2) on hosts
    whose Spark is the tfos-bigdl environment's 2.1: refused, naming what gives them their own;
    with the site's Spark of each named, that Spark submits them."""
    stacks = {"dlobd_paper_stacks": ["caffeonspark", "mmlspark"], "caffeonspark_install_method": "git",
              "caffeonspark_builds": ["cpu-mkl"], "mmlspark_cntk_homes": {"cpu-mkl": "/sw/cntk-2.2-cpu"},
              "mmlspark_mpi_home": "/sw/openmpi-1.10", "mmlspark_python": "/sw/python-3.6/bin/python"}
    points = {("dlobd-fig4a", "device-cpu-mkl_nodes-1"), ("dlobd-fig4c", "device-cpu-mkl_nodes-1")}
    sparks = ("CAFFEONSPARK_SPARK_HOME", "MMLSPARK_SPARK_HOME")
    none = {k: v for k, v in OTHER_STACK_SETTINGS.items() if k not in sparks}
    bare = inventory_dry_runs(write_other(tmp_path / "bare", dlobd_stack_settings=none, **stacks), tmp_path,
                              ["dlobd-fig4a", "dlobd-fig4c"])
    for (eid, pid), stack, wanted in zip(sorted(points), ("caffeonspark", "mmlspark"), ("1.6", "2.2")):
        assert bare[eid, pid].reason == (
            f"{stack}'s paper build runs on Spark {wanted}, and the cluster's Spark is 2.1.0: provision "
            f"dlobd_paper_env: {stack} (Spark {wanted}), or give a Spark {wanted} install as "
            f"{stack.upper()}_SPARK_HOME in dlobd_stack_settings")
    own = inventory_dry_runs(write_other(tmp_path / "own", **stacks), tmp_path, ["dlobd-fig4a", "dlobd-fig4c"])
    assert [own[key].command[0] for key in sorted(points)] == [
        "/sw/spark-1.6.2/bin/spark-submit", "/sw/spark-2.2.0/bin/spark-submit"]
    # on hosts provisioned with CaffeOnSpark's own environment, its Spark 1.6 is the hosts' own
    native = inventory_dry_runs(write_other(tmp_path / "native", dlobd_stack_settings=none,
                                            dlobd_paper_env="caffeonspark", **stacks), tmp_path, ["dlobd-fig4a"])
    assert native["dlobd-fig4a", "device-cpu-mkl_nodes-1"].command[0] == "$SPARK_HOME/bin/spark-submit"


def test_cntk_points_without_mmlspark_python_name_it(tmp_path):
    """The mmlspark role without mmlspark_python: the stacks' Python 3.11 cannot run Spark 2.2's
    PySpark, so every CNTK point that has its build and fits the cluster names the setting."""
    path = write_other(tmp_path / "inventory", gpu_hosts=range(3, 8), dlobd_paper_stacks=["mmlspark"],
                       mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2-gpu"}, mmlspark_mpi_home="/sw/openmpi-1.10")
    done = inventory_dry_runs(path, tmp_path, ["dlobd-fig4c"])
    fitting = [done["dlobd-fig4c", f"device-gpu-cudnn_nodes-{n}"] for n in (1, 2, 4)]
    assert all(r.status == "not runnable" for r in fitting)
    assert all(r.reason.endswith(": set mmlspark_python (role mmlspark; MMLSPARK_PYTHON)") for r in fitting)


def test_reasons_name_what_the_inventory_sets_and_its_hosts(tmp_path):
    """The plain inventory running both roles by the spack method: its GPU workers and, for CPU
    points, the workers outside YARN 2.7's exclusive label are named as the inventory names them;
    a missing CaffeOnSpark build names the role variables that give it. (The launchers are asked
    beyond the inventory's size too, as the plan asks them.)"""
    path = write_plain(tmp_path / "inventory", dlobd_paper_stacks=["caffeonspark", "mmlspark"],
                       mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2-gpu", "cpu-mkl": "/sw/cntk-2.2-cpu"},
                       mmlspark_mpi_home="/sw/openmpi-1.10", mmlspark_python="/sw/python-3.6/bin/python",
                       dlobd_stack_settings={"MMLSPARK_SPARK_HOME": "/sw/spark-2.2.0"}, **PAPER_DATASETS)
    done = inventory_dry_runs(path, tmp_path, ["dlobd-fig4c"])
    assert done["dlobd-fig4c", "device-cpu-mkl_nodes-4"].status == "dry run"
    assert done["dlobd-fig4c", "device-cpu-mkl_nodes-4"].extra["remote_env"]["DLOBD_MMLSPARK_HOSTS"] == (
        "192.168.0.2 192.168.0.3 192.168.0.4 192.168.0.5")  # ib-c1 to ib-c4, outside the GPU label

    def reason(stack, spec_id, point):
        with pytest.raises(NotRunnable) as err:
            stack.launch(stackfakes.context(tmp_path, spec_id, point))
        return str(err.value)

    cpu = ("the cluster has 4 worker(s) outside group gpu (ib-c1, ib-c2, ib-c3, ib-c4; YARN 2.7's node label gpu "
           "is exclusive, so CPU executors do not run on ib-g1, ib-g2)")
    with provenance.inventory_in_use(inventory.load(path)):
        assert reason(caffeonspark, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 8}) == f"8 nodes: {cpu}"
        # MMLSpark's CPU points count the same workers
        assert reason(mmlspark, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 8}) == f"8 nodes: {cpu}"
        assert reason(mmlspark, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 4}) == (
            "4 nodes: the cluster has 2 GPU worker(s) (group gpu: ib-g1, ib-g2)")
        # the spack method builds the head node's one device (cpu-openblas), whatever caffeonspark_builds lists
        assert reason(caffeonspark, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 1}) == (
            "device cpu-mkl: no CaffeOnSpark build for it: add cpu-mkl to caffeonspark_builds and set "
            "caffeonspark_install_method to git or mirror, as the spack method builds one device per host "
            "(role caffeonspark, which records CAFFEONSPARK_HOME_CPU_MKL)" + capabilities.MKL_SOURCES)
        assert reason(caffeonspark, "dlobd-fig4a", {"device": "gpu-cudnn", "nodes": 1}) == (
            "device gpu-cudnn: no CaffeOnSpark build for it: set caffeonspark_install_method to git or mirror, as "
            "the spack method builds one device per host (role caffeonspark, which records "
            "CAFFEONSPARK_HOME_GPU_CUDNN)")


def test_a_role_the_inventory_configures_but_does_not_run_is_what_a_reason_asks_for(tmp_path):
    """The plain inventory gives the mmlspark role's variables and lists no paper stack: a reason asks
    for the role's run, not for the variables it already has."""
    path = write_plain(tmp_path / "inventory", mmlspark_cntk_homes={"cpu-mkl": "/sw/cntk-2.2-cpu"},
                       mmlspark_mpi_home="/sw/openmpi-1.10", mmlspark_python="/sw/python-3.6/bin/python")
    with provenance.inventory_in_use(inventory.load(path)), pytest.raises(NotRunnable) as cntk:
        mmlspark.launch(stackfakes.context(tmp_path, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 1}))
    assert str(cntk.value).endswith(": the mmlspark role records it where it runs (dlobd_paper_stacks: [mmlspark]; "
                                    "CNTK_HOME_CPU_MKL)")
    with provenance.inventory_in_use(inventory.load(path)), pytest.raises(NotRunnable) as cos:
        caffeonspark.launch(stackfakes.context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1}))
    assert str(cos.value) == ("device cpu-openblas: no CaffeOnSpark build for it: the caffeonspark role builds it "
                              "where it runs (dlobd_paper_stacks: [caffeonspark]; CAFFEONSPARK_HOME_CPU_OPENBLAS)")


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
    """The paper profile's TFoS points of a cluster that gives DLOBD_TFOS_PYTHON and
    DLOBD_TF_RDMA_PYTHON: train_tf1.py (TFoS 1.0.8, TensorFlow 1.4.0); the verbs points in
    DLOBD_TF_RDMA_PYTHON, and so the IPoIB points they are compared with, labelled tf_build. Where
    the site gives no RDMA build, the IPoIB points run DLOBD_TFOS_PYTHON."""
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
        python = "/sw/tf1-verbs/bin/python"
        assert r.labels["tf_build"] == tf_cluster.RDMA_BUILD
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
        "spark.yarn.maxAppAttempts=1", "spark.pyspark.python=/sw/tf1-verbs/bin/python",
        "spark.pyspark.driver.python=/sw/tf1-verbs/bin/python",
        "spark.executorEnv.PYSPARK_PYTHON=/sw/tf1-verbs/bin/python", "spark.executorEnv.TZ=UTC",
        "spark.executorEnv.TF_CPP_MIN_LOG_LEVEL=1",
        "spark.yarn.executor.memoryOverhead=<at launch: (NodeManager memory - the ApplicationMaster's) / 1, "
        "in YARN's steps, less the heap's 512 MiB>", "spark.yarn.am.memory=512m",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON=/sw/tf1-verbs/bin/python",
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
    without = write_other(tmp_path / "without-rdma", gpu_hosts=range(3, 8), dlobd_stack_settings={
        "TF_CNN_BENCHMARKS_HOME": "/sw/tf-benchmarks", "DLOBD_TFOS_PYTHON": "/sw/py35-tf14/bin/python"})
    ipoib = inventory_dry_runs(without, tmp_path / "w", ["dlobd-fig9"])["dlobd-fig9", "framework-tensorflowonspark_network-ipoib"]
    assert "spark.pyspark.python=/sw/py35-tf14/bin/python" in ipoib.command
    assert ipoib.labels["tf_build"] == tf_cluster.TFOS_BUILD


@pytest.mark.parametrize("method", ["spack", "apptainer"])
def test_tfos_paper_points_without_the_site_python(tmp_path, method):
    """A cluster that gives no DLOBD_TFOS_PYTHON (the example's does): every TFoS point the cluster's
    size allows runs in the wrapper of the paper image's Python that role python_env writes (the
    image the spack method places for it, or the apptainer method's own). Where the site gives
    DLOBD_TF_RDMA_PYTHON, TF's verbs channel runs it, and so do the IPoIB points compared with it."""
    assert "DLOBD_TFOS_PYTHON" in inventory.load(EXAMPLE).settings
    rdma_python = "/sw/tf1-verbs/bin/python"
    wrapper = "/lustre/dlobd/stack/libexec/apptainer/tfos-python/bin/python2.7"
    for settings, python in ((OTHER_STACK_SETTINGS, rdma_python),
                             ({k: v for k, v in OTHER_STACK_SETTINGS.items() if k != "DLOBD_TF_RDMA_PYTHON"}, wrapper)):
        path = write_other(tmp_path / python.split("/")[-3], gpu_hosts=range(3, 8), dlobd_install_method=method,
                           dlobd_stack_settings=settings)
        done = tfos_points(inventory_dry_runs(path, tmp_path / python.split("/")[-3], TFOS_EXPERIMENTS))
        assert len(done) == 16
        drop_the_too_big(done, ("ipoib", "rdma") if python == rdma_python else ("ipoib",))
        for (eid, pid), r in done.items():
            if python == wrapper and "network-rdma" in pid:
                assert r.status == "not runnable" and "tf-rdma" in r.reason, (eid, pid, r.reason)
                continue
            assert r.status == "dry run", (eid, pid, r.reason)
            assert f"spark.pyspark.python={python}" in r.command, (eid, pid)


def test_the_inventorys_cluster_name_and_assumed_values_and_the_command_lines(tmp_path):
    """`dlobd dry-run --inventory`: runs go under the inventory's dlobd_cluster_name, its
    dlobd_assume replaces a value the spec assumes, and --assume replaces both; an --assume the
    experiment does not assume stops the dry run, naming it."""
    path = write_plain(tmp_path / "inventory", dlobd_cluster_name="ri2", dlobd_assume={"dlobd-fig7b": {"batch": 384}},
                       **PAPER_DATASETS)

    def dry_run(*extra):
        return subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory",
                               str(path), "--experiment", "dlobd-fig7b", "--runs", str(tmp_path / "runs"), *extra],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)

    out = dry_run().stdout
    commands = [line for line in out.splitlines() if line.startswith("  $ ")]
    # 96 cores as 4 executors of 24 over IPoIB: the 4 workers outside the gpu group's exclusive label hold them
    assert len(commands) == 1 and f"{tmp_path}/runs/ri2/paper/dlobd-fig7b/cores-96_network-ipoib/" in commands[0], out
    assert all(c.endswith("-b 384 -e 18") for c in commands), commands
    out = dry_run("--assume", "batch=96").stdout
    assert all(line.endswith("-b 96 -e 18") for line in out.splitlines() if line.startswith("  $ "))
    refused = dry_run("--assume", "epochs=3")
    assert refused.returncode == 2 and "epochs=3: dlobd-fig7b at scale paper has no assumed setting 'epochs'" in refused.stderr
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------- dlobd dry-run --check: each rule caught on a command made to break it

SUBMIT = ["/opt/spark/bin/spark-submit", "--master", "yarn", "--num-executors", "8", "--executor-cores", "24",
          "--executor-memory", "3g", "--conf", "spark.yarn.executor.memoryOverhead=1024", "--class", "X", "x.jar"]


def with_option(argv, name, value):
    out = list(argv)
    out[out.index(name) + 1] = value
    return out


def test_check_a_container_larger_than_a_nodemanager():
    node = {"vcores": 24, "memory_mb": 16384, "step_mb": 256}
    assert checks.container_errors(SUBMIT, node) == []
    assert checks.container_errors(with_option(SUBMIT, "--executor-cores", "192"), node) == [
        "--executor-cores 192 is more than the smallest NodeManager's 24 vcores"]
    assert checks.container_errors(with_option(SUBMIT, "--executor-memory", "16g"), node) == [
        "an executor container of 17408 MiB (--executor-memory 16g + memoryOverhead 1024 MiB, in YARN's 256-MiB "
        "steps) is more than the smallest NodeManager's 16384 MB"]
    # without an overhead, Spark's own: max(384 MiB, a tenth of the heap), then YARN's step
    bare = SUBMIT[:SUBMIT.index("--conf")] + SUBMIT[SUBMIT.index("--class"):]
    assert checks.container_errors(with_option(bare, "--executor-memory", "15000m"), node) == [
        "an executor container of 16640 MiB (--executor-memory 15000m + Spark's default overhead 1500 MiB, in "
        "YARN's 256-MiB steps) is more than the smallest NodeManager's 16384 MB"]
    assert checks.container_errors(with_option(bare, "--executor-memory", "14g"), node) == []
    # an overhead with a unit, as Spark 2.3 on takes spark.executor.memoryOverhead
    with_unit = with_option(bare[:-3] + ["--conf", "spark.executor.memoryOverhead=2g"] + bare[-3:],
                            "--executor-memory", "14g")
    assert checks.container_errors(with_unit, node) == []
    assert checks.container_errors([a.replace("=2g", "=3g") for a in with_unit], node) == [
        "an executor container of 17408 MiB (--executor-memory 14g + memoryOverhead 3072 MiB, in YARN's 256-MiB "
        "steps) is more than the smallest NodeManager's 16384 MB"]
    # a size only provisioning finds cannot be checked, and says so; a node of unknown size judges nothing
    assert checks.container_errors(with_option(SUBMIT, "--executor-cores", "'$DLOBD_YARN_VCORES'"), node) == [
        "--executor-cores '$DLOBD_YARN_VCORES': not a size before provisioning; declare every worker's "
        "dlobd_hardware.cores and memory_gb so that the check knows its NodeManager"]
    assert checks.container_errors(with_option(SUBMIT, "--executor-cores", "192"), {}) == []


def test_check_executors_more_than_their_nodemanagers_hold():
    """example-ib: node02 outside group gpu, node03 and node04 in it, each a NodeManager of 98304 MB.
    Executors without YARN's label gpu may only use node02, which also holds the ApplicationMaster;
    with it, only node03 and node04. Each container fits a NodeManager: the count is what breaks."""
    cluster = inventory.load(EXAMPLE)
    assert checks.placement_errors(SUBMIT, cluster) == []  # 8 of 4096 MiB
    big = with_option(with_option(SUBMIT, "--executor-memory", "40g"), "--num-executors", "3")
    big = [a.replace("memoryOverhead=1024", "memoryOverhead=4096") for a in big]
    assert checks.container_errors(big, {"vcores": 112, "memory_mb": 98304, "step_mb": 256}) == []
    assert checks.placement_errors(big, cluster) == [
        "--num-executors 3 containers of 45056 MiB (--executor-memory 40g + memoryOverhead 4096 MiB, in YARN's "
        "256-MiB steps): the 1 NodeManager(s) outside group gpu (YARN's label gpu is exclusive), node02 98304 MB, "
        "hold 2 beside the ApplicationMaster's 1024 MiB"]
    labelled = big + ["--conf", "spark.yarn.executor.nodeLabelExpression=gpu"]
    assert checks.placement_errors(labelled, cluster) == []  # 2 on each of node03 and node04
    assert checks.placement_errors(with_option(labelled, "--num-executors", "5"), cluster) == [
        "--num-executors 5 containers of 45056 MiB (--executor-memory 40g + memoryOverhead 4096 MiB, in YARN's "
        "256-MiB steps): the 2 NodeManager(s) in group gpu (YARN's label gpu), node03 98304 MB, node04 98304 MB, "
        "hold 4 beside the ApplicationMaster's 1024 MiB"]
    # not YARN's placement (a local master), or no number to count: nothing judged
    assert checks.placement_errors(with_option(big, "--master", "local[2]"), cluster) == []
    assert checks.placement_errors(with_option(big, "--num-executors", "'$N'"), cluster) == []


def sized_workers(root: Path, cores: int, memory_gb: int, **changes) -> Path:
    """write_other's inventory, every host declaring `cores` and `memory_gb`."""
    path = write_other(root, **changes)
    for host_vars in (root / "host_vars").iterdir():
        values = yaml.safe_load(host_vars.read_text())
        values["dlobd_hardware"].update(cores=cores, memory_gb=memory_gb)
        host_vars.write_text(yaml.safe_dump(values))
    return path


def test_declared_workers_size_the_commands_and_refuse_what_does_not_fit(tmp_path):
    """Where every worker declares its size, the dry run sizes executors as provisioning will
    (DLOBD_YARN_VCORES and DLOBD_YARN_MEMORY_MB of the smallest worker, not placeholders), so a
    container that no NodeManager of 16 GB x 0.25 holds is refused, naming what YARN offers."""
    path = sized_workers(tmp_path / "inventory", 48, 16, dlobd_paper_stacks=["caffeonspark"],
                         caffeonspark_install_method="git", caffeonspark_builds=["cpu-mkl", "gpu-cudnn"])
    assert {k: v for k, v in inventory.load(path).settings.items() if k.startswith("DLOBD_YARN")} == {
        "DLOBD_YARN_MEMORY_MB": "4096", "DLOBD_YARN_VCORES": "96"}
    done = inventory_dry_runs(path, tmp_path, ["dlobd-fig4a", "dlobd-fig5b"])
    refused = done[("dlobd-fig4a", "device-cpu-mkl_nodes-1")]
    assert refused.status == "not runnable" and refused.reason.startswith(
        "1 executor(s) per NodeManager of at least 14336 MiB each: YARN offers 4096 MiB on its smallest NodeManager")
    node = {"vcores": 96, "memory_mb": 4096, "step_mb": 256}
    commands = [r.command for r in done.values() if r.status == "dry run" and r.command[0].endswith("spark-submit")]
    assert commands and all(checks.container_errors(c, node) == [] for c in commands)
    roomy = sized_workers(tmp_path / "roomy", 48, 192, dlobd_paper_stacks=["caffeonspark"],
                          caffeonspark_install_method="git", caffeonspark_builds=["cpu-mkl"])
    argv = inventory_dry_runs(roomy, tmp_path, ["dlobd-fig4a"])[("dlobd-fig4a", "device-cpu-mkl_nodes-1")].command
    assert argv[argv.index("--executor-cores") + 1] == "96"


def test_a_nodemanager_is_what_role_yarn_gives_the_declared_node(tmp_path):
    """The plan and --check size a NodeManager as derived.yml does: the declared memory_gb and
    cores times dlobd_yarn_memory_fraction and dlobd_yarn_vcores_per_cpu."""
    cluster = inventory.load(EXAMPLE)  # 128 GB and 56 cores a node, fraction 0.75, 1 vcore per CPU
    manager = inventory.nodemanager(cluster.members("workers")[0], cluster.role_settings)
    assert (manager["memory_mb"], manager["vcores"]) == (98304, 56)
    assert manager["why"] == ("memory 98304 MB (128 GB x dlobd_yarn_memory_fraction 0.75); "
                              "vcores 56 (56 cores x dlobd_yarn_vcores_per_cpu 1)")
    plain = inventory.load(write_plain(tmp_path))  # no size declared: the host's own, at provisioning
    manager = inventory.nodemanager(plain.members("workers")[0], plain.role_settings)
    assert manager["memory_mb"] is None and "found at provisioning (no dlobd_hardware.memory_gb)" in manager["why"]


def test_check_executors_times_cores_against_the_points_total():
    assert checks.total_errors(SUBMIT, {"cores": 192}) == []
    assert checks.total_errors(with_option(SUBMIT, "--num-executors", "1"), {"cores": 192}) == [
        "--num-executors 1 x --executor-cores 24 is not the point's 192 cores"]
    assert checks.total_errors(SUBMIT, {"nodes": 8}) == []  # no stated total


def test_check_a_gpu_point_off_the_gpu_hosts():
    cluster = inventory.load(EXAMPLE)
    scale = {"needs": ["gpu"], "fixed": {"devices_per_node": 1}}
    gpu_host = cluster.members("gpu")[0].address
    cpu_host = next(h.address for h in cluster.members("workers") if h.name not in cluster.groups["gpu"])
    on = runner.LaunchResult(None, "dry run", "", extra={"processes": [{"name": "worker:0", "host": gpu_host}]})
    off = runner.LaunchResult(None, "dry run", "", extra={"processes": [{"name": "worker:0", "host": cpu_host}]})
    point = {"device": "gpu", "nodes": 1}
    assert checks.gpu_errors(on, point, scale, cluster, "caffeonspark") == []
    assert checks.gpu_errors(off, point, scale, cluster, "caffeonspark") == [
        f"process worker:0 of a GPU point on {cpu_host}, which is not in group gpu"]
    # example-ib has a worker without GPUs: a GPU point's executors need YARN's node label
    submit = runner.LaunchResult(SUBMIT, "dry run", "")
    assert checks.gpu_errors(submit, point, scale, cluster, "caffeonspark") == [
        "a GPU point's spark-submit without spark.yarn.executor.nodeLabelExpression on a cluster where not "
        "every worker is in group gpu"]
    labelled = runner.LaunchResult(SUBMIT + ["--conf", "spark.yarn.executor.nodeLabelExpression=gpu"], "dry run", "")
    assert checks.gpu_errors(labelled, point, scale, cluster, "caffeonspark") == []
    assert checks.gpu_errors(submit, {"device": "cpu-mkl"}, {"needs": []}, cluster, "caffeonspark") == []
    assert checks.gpu_errors(submit, point, scale, cluster, "mmlspark") == []  # its executors feed CNTK only


# ---------------------------------------------- every host's own identity, ports and folder

def own_processes(result) -> list[dict]:
    """The processes of a dry run's point on the cluster's hosts: those it lists, and its own
    command where that runs on another host over ssh (it binds no port)."""
    own = [{"name": "command", "host": result.command[-2], "command": result.command}] \
        if result.command[0] == "ssh" else []
    return list(result.extra.get("processes", [])) + own


@pytest.mark.parametrize("which", ["example-ib", "other", "other-with-worker-ports"])
def test_every_process_on_a_worker_has_its_own_identity_ports_and_folder(tmp_path, which):
    """Every process of every point of a paper-scale dry run that runs on a worker: no identity
    variable names another host (its own dlobd-env.sh gives them), its ports are chosen on its
    host or come from dlobd_worker_ports (example-ib sets them), and its folder is made there."""
    path = EXAMPLE if which == "example-ib" else write_other(
        tmp_path / "inventory", **({"dlobd_worker_ports": "40000-40999"} if which.endswith("ports") else {}))
    hosts = list(inventory.load(path).hosts.values())
    done = inventory_dry_runs(path, tmp_path, None)
    checked = spread = 0
    for (eid, pid), result in done.items():
        if result.status != "dry run":
            continue
        processes = own_processes(result)
        spread += len({p["host"] for p in processes}) > 1
        for p in processes:
            assert remote.identity_errors(p, hosts) == [], (eid, pid)
            if p["name"] != "command":
                assert remote.port_errors(p) == [], (eid, pid)
                if p["ports"]:  # a local:0 task serves none
                    assert p["ports_chosen"] == (f"on {p['host']}" if which == "other"
                                                 else "from dlobd_worker_ports 40000-40999"), (eid, pid, p)
            if p["command"][0] == "ssh":
                cwd = shlex.quote(result.cwd)
                assert p["command"][-1].startswith(f"mkdir -p {cwd} && cd {cwd} && "), (eid, pid, p["name"])
            checked += 1
    assert checked > 40 and spread > 10, (checked, spread)
    if which == "example-ib":
        # fig9's native TensorFlow: 3 workers, a parameter server and the chief beside worker 0
        assert "needs 4 worker nodes" in done["dlobd-fig9", "framework-tensorflow_network-ipoib"].reason
    else:
        fig9 = done["dlobd-fig9", "framework-tensorflow_network-ipoib"].extra["processes"]
        assert [p["name"] for p in fig9] == ["worker:0", "worker:1", "worker:2", "ps:0", "chief:0"]
        assert len({p["host"] for p in fig9}) == 4 and fig9[-1]["host"] == fig9[0]["host"]


def test_a_process_with_another_hosts_identity_or_port_is_caught(monkeypatch):
    """The checks name the process and the rule it breaks: the launch host's identity on a
    worker's command line (as the launchers once sent it), a command that does not source its
    host's dlobd-env.sh, ssh to another host, and ports chosen elsewhere or out of the range."""
    monkeypatch.setattr(provenance, "prefix", lambda: Path("/scratch/dlobd/dlobd-stack"))
    hosts = list(inventory.load(EXAMPLE).hosts.values())
    argv = [sys.executable, "train.py"]
    good = {"name": "worker:0", "host": "192.168.100.2", "env": {},
            "command": remote.ssh_argv("192.168.100.2", "/runs/a", {"TF_CONFIG": "{}"}, argv),
            "ports": {"server": "<port chosen on 192.168.100.2>"}, "ports_chosen": "on 192.168.100.2"}
    assert remote.identity_errors(good, hosts) == [] and remote.port_errors(good) == []
    # the Ethernet address names the same host
    ethernet = {**good, "host": "10.20.0.2", "env": {"SPARK_LOCAL_IP": "192.168.100.2"},
                "command": remote.ssh_argv("10.20.0.2", "/runs/a", {}, argv)}
    assert remote.identity_errors(ethernet, hosts) == []

    old = {**good, "command": ["ssh", "-o", "BatchMode=yes", "192.168.100.2",
                               "cd /runs/a && exec env DLOBD_CLUSTER_ADDRESS=192.168.100.1 "
                               "SPARK_LOCAL_IP=192.168.100.1 bash -c 'x' dlobd-task python train.py"]}
    errors = remote.identity_errors(old, hosts)
    assert len(errors) == 3 and all(e.startswith("process worker:0 on 192.168.100.2 (`ssh ") for e in errors)
    assert "DLOBD_CLUSTER_ADDRESS=192.168.100.1 is the address of node01 (rule: a process carries its own " \
           "host's identity, 192.168.100.2 or 10.20.0.2)" in errors[0]
    assert "SPARK_LOCAL_IP=192.168.100.1 is the address of node01" in errors[1]
    assert "does not source 192.168.100.2's own dlobd-env.sh (rule: a process on another host runs in " \
           "that host's stack environment)" in errors[2]
    in_env = remote.identity_errors({**good, "env": {"TFOS_SERVER_HOST": "192.168.100.3"}}, hosts)
    assert len(in_env) == 1 and "TFOS_SERVER_HOST=192.168.100.3 is the address of node03" in in_env[0]
    elsewhere = remote.identity_errors({**good, "host": "192.168.100.4"}, hosts)
    assert len(elsewhere) == 1 and "ssh runs it on 192.168.100.2, not on its host 192.168.100.4" in elsewhere[0]
    stranger = remote.identity_errors({**good, "host": "192.168.200.9"}, hosts)
    assert "its host 192.168.200.9 is none of the cluster's hosts" in stranger[0]

    assert "(rule: a port is chosen on the host that binds it)" in remote.port_errors(
        {**good, "ports": {"server": "<port chosen on 192.168.100.1>"}})[0]
    launch_host = remote.port_errors({**good, "ports": {"server": 41000}, "ports_chosen": "on 192.168.100.1"})
    assert len(launch_host) == 1 and "ports chosen 'on 192.168.100.1', neither on its host (192.168.100.2)" in launch_host[0]
    ranged = {**good, "ports": {"server": 40000}, "ports_chosen": "from dlobd_worker_ports 40000-40999"}
    assert remote.port_errors(ranged) == []
    assert "port server 41000 is outside dlobd_worker_ports 40000-40999" in remote.port_errors(
        {**ranged, "ports": {"server": 41000}})[0]
    assert "no ports and ports_chosen recorded" in remote.port_errors({"name": "ps:0", "host": "h", "command": ["x"]})[0]


@pytest.mark.parametrize("write", ["example-ib", "24-core workers, some with GPUs"])
def test_every_paper_command_passes_the_check(tmp_path, write):
    """`dlobd dry-run --scale paper --check` on the example inventory and on one of 24-core workers,
    three of five with GPUs: every command keeps every rule."""
    path = EXAMPLE
    if write != "example-ib":
        path = write_other(tmp_path / "inventory", dlobd_paper_stacks=["caffeonspark"],
                           caffeonspark_install_method="git", caffeonspark_builds=["cpu-mkl", "gpu-cudnn"])
        for host_vars in (tmp_path / "inventory" / "host_vars").iterdir():
            values = yaml.safe_load(host_vars.read_text())
            values["dlobd_hardware"].update(cores=24, memory_gb=128)
            host_vars.write_text(yaml.safe_dump(values))
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(path),
                          "--runs", str(tmp_path / "runs"), "--check"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("check: every command passes"), out.stdout[-3000:]
    commands = out.stdout.count("\n  $ ")
    assert commands > 100  # most points have a command to check
    if write != "example-ib":
        # the GPU points of CaffeOnSpark run there, on the GPU workers' node label
        assert "spark.yarn.executor.nodeLabelExpression=gpu" in out.stdout


def test_a_printed_word_keeps_its_settings_for_the_shell_to_expand():
    """Each word reads back as itself through a POSIX shell, a `$VAR` of dlobd-env.sh expanded."""
    words = ["$SPARK_HOME/bin/spark-submit", "a b", 'x"y`z\\$SPARK_HOME', "plain", "it's", "--conf=a=$DLOBD_X"]
    line = dryrun.shell_line(words)
    out = subprocess.run(["sh", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True, check=True,
                         env={"PATH": os.environ["PATH"], "SPARK_HOME": "/opt/spark", "DLOBD_X": "1"}).stdout
    assert out.splitlines() == ["/opt/spark/bin/spark-submit", "a b", 'x"y`z\\/opt/spark', "plain", "it's",
                                "--conf=a=1"]


def test_write_gives_every_point_of_the_example_its_files_and_command(tmp_path):
    """`dry-run --write` on example-ib: each point with a command gets its attempt folder with the
    files its command names and command.sh, which sources the hosts' dlobd-env.sh and runs the
    command as printed; a folder already in use is refused."""
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(EXAMPLE),
                          "--write", str(tmp_path / "w"), "--experiment", "dlobd-fig5a", "--experiment", "dlobd-fig11",
                          "--experiment", "dlobd-fig5b"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    scripts = sorted((tmp_path / "w").rglob("command.sh"))
    assert len(scripts) == out.stdout.count("\n  $ ") > 0 and "no command.sh" not in out.stdout
    for script in scripts:
        text = script.read_text()
        assert text.startswith("#!/bin/sh\n") and ". /scratch/dlobd/dlobd-stack/etc/dlobd-env.sh\n" in text
        assert subprocess.run(["sh", "-n", str(script)]).returncode == 0 and os.access(script, os.X_OK)
    fig11 = tmp_path / "w" / "example-ib" / "paper" / "dlobd-fig11" / "network-ipoib_nodes-2" / "attempt-001"
    tasks = json.loads((fig11 / "tasks.json").read_text())["tasks"]
    assert tasks and all(str(t["port"]).isdigit() for t in tasks if t["port"] is not None)
    assert f"dlobd.stacks.tensorflow supervise {fig11 / 'tasks.json'}" in (fig11 / "command.sh").read_text()
    # over TF's MPI channel: the host file the one mpirun reads, in the order of its ranks
    mpi = fig11.parent.parent / "network-mpi_nodes-2" / "attempt-001"
    plan = json.loads((mpi / "tasks.json").read_text())["mpi"]
    assert plan["command"][:3] == ["/opt/mvapich2/bin/mpirun", "-f", str(mpi / "mpi-hosts")]
    hosts = [next(t["host"] for t in json.loads((mpi / "tasks.json").read_text())["tasks"] if t["job"] + ":" + str(t["index"]) == name)
             for name in plan["ranks"]]
    assert (mpi / "mpi-hosts").read_text() == "".join(f"{h}:{hosts.count(h)}\n" for h in dict.fromkeys(hosts))
    assert "the supervisor starts them as the ranks of one mpirun: /opt/mvapich2/bin/mpirun" in out.stdout
    fig5a = next((tmp_path / "w" / "example-ib" / "paper" / "dlobd-fig5a").glob("*/attempt-001"))
    assert {p.name for p in fig5a.iterdir()} >= {"command.sh", "net.prototxt", "solver.prototxt"}
    assert str(fig5a / "solver.prototxt") in (fig5a / "command.sh").read_text()
    fig5b = (tmp_path / "w" / "example-ib" / "paper" / "dlobd-fig5b" / "gpus-2_network-ipoib_workload-cifar10"
             / "attempt-001" / "command.sh").read_text()
    assert 'exec "$SPARK_HOME/bin/spark-submit" ' in fig5b and "PYSPARK_PYTHON=/opt/tensorflow-1.x-rdma/bin/python" in fig5b
    again = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(EXAMPLE),
                            "--write", str(tmp_path / "w")], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_write_leaves_out_a_command_with_ports_chosen_at_launch(tmp_path):
    values = yaml.safe_load(EXAMPLE.read_text())
    del values["all"]["vars"]["dlobd_worker_ports"]
    path = tmp_path / "inventory" / "hosts.yml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(values))
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "dry-run", "--scale", "paper", "--inventory", str(path),
                          "--write", str(tmp_path / "w"), "--experiment", "dlobd-fig11"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "dlobd-fig11 network-ipoib_nodes-2: no command.sh: <port 1 chosen on 192.168.100.3>" in out.stdout
    assert not list((tmp_path / "w").rglob("command.sh"))


def test_check_a_setting_the_shell_would_expand_to_nothing(tmp_path):
    """`$SPARK_HOME/bin/spark-submit` and BigDL's `$DLOBD_BIGDL_JAR` are expanded by the shell on
    the launch host: a dlobd-env.sh that sets neither would run `/bin/spark-submit`. The example's
    passes; the same commands against a launch host whose file lacks them are refused, naming each."""
    specs = dspec.load_all(ROOT)
    cluster = inventory.load(EXAMPLE)
    with provenance.inventory_in_use(cluster):
        done = dryrun.dry_runs(specs, "paper", tmp_path / "runs", experiments=["dlobd-fig6c"])
    assert dryrun.check(done, specs, "paper", cluster) == []
    lacking = dataclasses.replace(cluster, settings={k: v for k, v in cluster.settings.items()
                                                     if k not in ("SPARK_HOME", "DLOBD_BIGDL_JAR")})
    broken = dryrun.check(done, specs, "paper", lacking)
    assert "dlobd-fig6c network-ipoib: settings the shell expands: $SPARK_HOME, which dlobd-env.sh on " \
           f"{cluster.launch_host} does not set" in broken, broken
    assert any("$DLOBD_BIGDL_JAR, which dlobd-env.sh" in line for line in broken), broken


def test_a_rehearsal_of_the_example_runs_every_point_at_its_layout_with_the_work_cut(tmp_path):
    """`make experiments REHEARSE=1` on example-ib, as its dry run shows it: each point with a
    command has one in the rehearsal, labelled with its cut; the executors, tasks and hosts stay
    as the scale lays them out, the work (epochs, iterations, seconds) is cut."""
    specs = dspec.load_all(ROOT)
    with provenance.inventory_in_use(inventory.load(EXAMPLE)):
        plain, rehearsed = ({(e, p): r for e, p, r in dryrun.dry_runs(specs, "paper", tmp_path / "runs", rehearse=rehearse)}
                            for rehearse in (False, True))
    ran = {k for k, r in plain.items() if r.status == "dry run"}
    assert ran == {k for k, r in rehearsed.items() if r.status == "dry run"} and len(ran) > 100
    assert all("rehearsal" in rehearsed[k].labels for k in ran)
    bigdl = ("dlobd-fig6c", "network-ipoib")
    full, cut = plain[bigdl].command, rehearsed[bigdl].command
    # the first 1,536 of the synthetic CIFAR-10's records, copied into the attempt, one epoch: all else as it is
    subset = cut[cut.index("-f") + 1]
    assert subset.endswith("/dlobd-fig6c/network-ipoib/attempt-001/data")
    assert with_option(with_option(full, "-e", "1"), "-f", subset) == cut and full[full.index("-e") + 1] == "18"
    assert rehearsed[bigdl].labels["rehearsal"] == {"dataset": "cifar10 -> cifar10-synthetic", "epochs": "18 -> 1",
                                                   "train_images": "the launcher default -> 1536",
                                                   "test_images": "the launcher default -> 768"}
    # the gRPC client, over ssh on its host: one timed second once, where the paper timed 10 s 5 times
    grpc = ("tfgrpc-fig7", "network-ipoib")
    full, cut = " ".join(plain[grpc].command), " ".join(rehearsed[grpc].command)
    assert "--warmup 2 --duration 10 --repeats 5" in full and "--warmup 0.5 --duration 1 --repeats 1" in cut
    assert full.replace("--warmup 2 --duration 10 --repeats 5", "--warmup 0.5 --duration 1 --repeats 1") == cut
    assert plain[grpc].extra["processes"] == rehearsed[grpc].extra["processes"]  # its server as it is
    # CaffeOnSpark's solver of CIFAR-10 Quick: ten iterations where it would run the model's own
    caffe = next(k for k in sorted(ran) if k[0] == "dlobd-fig4a")
    solvers = [r.extra["files"]["solver.prototxt"] for r in (plain[caffe], rehearsed[caffe])]
    assert "max_iter: 10\n" not in solvers[0] and "max_iter: 10\n" in solvers[1]
