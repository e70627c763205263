"""The TensorFlowOnSpark launcher's command lines and the breakdown of a real run on YARN.

Command building needs no cluster: hadoop.spark_conf only writes into the attempt. The
breakdown is checked on tests/data/logs/tensorflowonspark-yarn/spark-mnist-1-node, a real
run of the launcher (tests/data/logs/README.md), whose event log is stored gzip-compressed.
"""

import ast
import contextlib
import dataclasses
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, playbook_settings
from dlobd.cluster import hadoop
from dlobd.execution import plan
from dlobd import spec as dspec
from dlobd.stacks import parse_run
from dlobd.stacks import tensorflowonspark as tfos
from pysyntax import load_program, newer_syntax
from dlobd.cluster import capabilities
from dlobd.stacks import runner
from dlobd import NotRunnable

FIXTURE = Path(__file__).parent / "data" / "logs" / "tensorflowonspark-yarn" / "spark-mnist-1-node"
PAPER_RUN = Path(__file__).parent / "data" / "logs" / "paper-profile" / "tfos-1.0.8-mnist"
ENV = {"DLOBD_PYTHON": "/stack/bin/python", "SPARK_HOME": "/stack/spark", "DLOBD_DATA_DIR": "/data"}
URI = "hdfs://127.0.0.1:19820/dlobd/data/x"
LOCAL = Path("/data/x")


def spec(name):
    return yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())


def context(tmp_path, experiment, point):
    data = spec(experiment)
    scale = data["scales"]["local"]
    attempt = tmp_path / "attempt-001"
    attempt.mkdir()
    return runner.RunContext(spec=data, scale="local", cluster="local", point=point, attempt_dir=attempt,
                           runs_dir=tmp_path, fixed=dict(scale["fixed"]), time_limit_s=scale["time_limit_s"])


def command_for(ctx, network="loopback"):
    return tfos.build_command(ctx, "spark-submit", URI, tfos.placement(network, ENV), LOCAL)


def confs(command):
    return dict(command[i + 1].split("=", 1) for i, a in enumerate(command) if a == "--conf")


def option(command, name):
    return command[command.index(name) + 1]


@pytest.mark.parametrize("workload, gpus", [("mnist", 1), ("mnist", 2), ("cifar10", 1), ("cifar10", 2)])
def test_fig5b_points_one_tf_node_per_executor(tmp_path, workload, gpus):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": workload, "network": "loopback", "gpus": gpus})
    cmd = command_for(ctx)
    conf = confs(cmd)
    assert cmd[:5] == ["spark-submit", "--master", "yarn", "--deploy-mode", "client"]
    assert option(cmd, "--num-executors") == str(gpus) == option(cmd, "--cluster-size")
    assert option(cmd, "--executor-cores") == conf["spark.executor.cores"] == conf["spark.task.cpus"] == "1"
    assert conf["spark.dynamicAllocation.enabled"] == "false"
    assert conf["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"
    assert option(cmd, "--model") == {"mnist": "mnist_softmax", "cifar10": "cifar10_cnn"}[workload]
    assert option(cmd, "--input-mode") == "spark"  # fixed mode: InputMode.SPARK
    assert option(cmd, "--train-images") == {"mnist": "10000", "cifar10": "2048"}[workload]
    assert option(cmd, "--batch-size") == "64" and option(cmd, "--epochs") == "1"
    assert option(cmd, "--data-dir") == URI
    # every TF address on loopback: the reservation server and the nodes
    assert conf["spark.executorEnv.TFOS_SERVER_HOST"] == "127.0.0.1" == option(cmd, "--node-host")
    assert option(cmd, "--protocol") == "grpc"
    assert conf["spark.pyspark.python"] == conf["spark.executorEnv.PYSPARK_PYTHON"] == "/stack/bin/python"
    # the run's YARN tag and its event log in the attempt (dlobd.cluster.hadoop)
    assert conf["spark.yarn.tags"] == hadoop.app_tag(ctx)
    assert conf["spark.eventLog.dir"] == (ctx.attempt_dir / "spark-events").resolve().as_uri()
    assert conf["spark.executorEnv.TZ"] == "UTC"


def test_fig9_workers_are_the_executors_and_no_parameter_server(tmp_path):
    ctx = context(tmp_path, "dlobd-fig9", {"framework": "tensorflowonspark", "network": "loopback"})
    assert ctx.fixed["workers"] == 2
    cmd = command_for(ctx)
    assert option(cmd, "--num-executors") == "2" == option(cmd, "--cluster-size")
    # the paper's parameter server gets no executor: MultiWorkerMirrored has none
    ctx.fixed["parameter_servers"] = 1
    assert option(command_for(ctx), "--num-executors") == "2"
    assert option(cmd, "--model") == "mnist_softmax" and option(cmd, "--batch-size") == "128"
    assert option(cmd, "--input-mode") == "spark"  # no mode fixed: TFoS's RDD feeding


def test_executor_memory_fits_yarn_beside_another_application(tmp_path):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "cifar10", "network": "loopback", "gpus": 2})
    cmd = command_for(ctx)
    per_executor = int(option(cmd, "--executor-memory").rstrip("m")) + int(
        confs(cmd)["spark.executor.memoryOverhead"].rstrip("m"))
    am = 512 + 384  # spark.yarn.am.memory of spark-defaults.conf and Spark's minimum overhead
    # the largest local point leaves a third of YARN's 6026 MB to another job
    assert 2 * per_executor + am <= 6026 * 2 / 3
    assert per_executor >= 1500  # the executor's Python processes measured ~1 GB RSS


@pytest.mark.parametrize("workers, nodes, overhead", [(1, 2, "1024"), (3, 2, str(6144 - 512)),
                                                     (2, 3, str(3072 - 512))])
def test_executors_spread_evenly_over_several_workers(tmp_path, monkeypatch, workers, nodes, overhead):
    # YARN would otherwise place by heartbeats: a worker may get two TF nodes, another none
    settings = {"DLOBD_YARN_MEMORY_MB": "7168"}  # a dry run's count of what a NodeManager offers
    where = dataclasses.replace(tfos.placement("loopback", ENV), node_host=None, server_host=None)
    monkeypatch.setattr(tfos.provenance, "workers", lambda: [f"10.0.0.{i}" for i in range(1, workers + 1)])
    monkeypatch.setattr(tfos.provenance, "stack_setting", lambda name: settings.get(name))
    ctx = dataclasses.replace(context(tmp_path, "dlobd-fig5b", {"workload": "cifar10", "network": "ipoib",
                                                                "gpus": nodes}), dry_run=True)
    conf = confs(tfos.build_command(ctx, "spark-submit", URI, where, LOCAL))
    # in YARN's default steps of 1 GiB the AM takes 1 of 7: one executor per node gets the other 6,
    # two per node 3 each, and a third would not fit beside them
    assert conf["spark.executor.memoryOverhead"] == overhead
    assert conf.get("spark.yarn.am.memory") == (None if workers == 1 else "512m")


def test_input_modes():
    assert tfos.input_mode({"mode": "InputMode.TENSORFLOW"}) == "tensorflow"
    assert tfos.input_mode({}) == "spark"
    with pytest.raises(NotRunnable, match="'parameter server'"):
        tfos.input_mode({"mode": "parameter server"})  # fig5b's paper scale: TFoS 1.x


def test_unknown_workload_is_named(tmp_path):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "imagenet", "network": "loopback", "gpus": 1})
    with pytest.raises(ValueError, match="workload 'imagenet'"):
        command_for(ctx)


@pytest.mark.skipif(capabilities.capabilities()["tf-rdma"][0], reason="this cluster has TF's verbs channel")
def test_rdma_is_not_runnable_without_tf_verbs(tmp_path):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "mnist", "network": "rdma", "gpus": 2})
    with pytest.raises(NotRunnable) as caught:
        tfos.launch(ctx)  # before anything is staged or submitted
    assert "grpc+verbs" in str(caught.value) and "needs tf-rdma" in str(caught.value)
    assert list(ctx.attempt_dir.iterdir()) == []


def test_rdma_path_runs_the_verbs_python(tmp_path, monkeypatch):
    """Where tf-rdma exists, driver and executors run DLOBD_TF_RDMA_PYTHON with grpc+verbs."""
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["10.1.0.5"])
    env = {**ENV, "DLOBD_TF_RDMA_PYTHON": "/opt/tf-verbs/bin/python", "TFOS_SERVER_HOST": "10.1.0.1"}
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "mnist", "network": "rdma", "gpus": 2})
    cmd = tfos.build_command(ctx, "spark-submit", URI, tfos.placement("rdma", env), LOCAL)
    conf = confs(cmd)
    assert option(cmd, "--protocol") == "grpc+verbs"
    assert conf["spark.pyspark.python"] == conf["spark.pyspark.driver.python"] == "/opt/tf-verbs/bin/python"
    assert conf["spark.executorEnv.PYSPARK_PYTHON"] == "/opt/tf-verbs/bin/python"
    assert conf["spark.executorEnv.TFOS_SERVER_HOST"] == "10.1.0.1"
    assert option(cmd, "--node-host") == "10.1.0.5"  # the one worker's address


def test_loopback_refuses_executors_on_other_hosts(monkeypatch):
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["127.0.0.1", "192.0.2.77"])
    monkeypatch.setattr(tfos.provenance, "is_local_address", lambda host: host.startswith("127."))
    with pytest.raises(NotRunnable, match="192.0.2.77"):
        tfos.placement("loopback", ENV)


# ---------------------------------------------------------------- breakdown of a real run

def unpacked(stored: Path, out: Path) -> Path:
    """A copy of a stored run with its event log as Spark wrote it (uncompressed)."""
    shutil.copytree(stored, out)
    packed = next((out / "spark-events").glob("*.gz"))
    packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    return out


@pytest.fixture
def run(tmp_path):
    return unpacked(FIXTURE, tmp_path / "run")


def phases(result):
    return {r["phase"]: r["value"] for r in result.rows if r["metric"] == "time_breakdown_s"}


def test_breakdown_of_a_real_yarn_run(run):
    r = parse_run("tensorflowonspark", run)
    assert (r.status, r.finished) == ("ok", True), r.reason
    got = phases(r)
    # From the records (epoch ms; the TFoS logs in UTC):
    #   RM startedTime 1795308936634           last ExecutorAdded 1795309016766
    #   'Reserving TFSparkNodes' 00:57:09.089  'Training chief:0 starts' 00:57:15.624
    #   chief's last step wall_clock_s 2.34555 'Shutting down cluster' 00:57:19.867
    #   ApplicationEnd 1795309044878
    assert got == pytest.approx({"yarn_scheduling": 80.132, "data_loading": 12.323, "tfos_startup": 6.535,
                                 "training": 2.34555, "spark_jobs": 1.89745, "tfos_shutdown": 5.011}, abs=1e-6)
    total = [x["value"] for x in r.rows if x["metric"] == "end_to_end_s"]
    assert total == [pytest.approx(108.244, abs=1e-6)]  # submission to ApplicationEnd
    assert sum(got.values()) == pytest.approx(total[0], abs=1e-6)
    # the breakdown replaces the driver's spans, the node's lifetime goes to meta
    assert not [x for x in r.rows if x["metric"] == "time_breakdown_s" and "task" in x]
    assert r.meta["node_end_to_end_s"] == {"chief:0": 10.3989}
    events = {e["event"]: e for e in r.events}
    assert events["yarn_am_launched"]["time"] == "2026-11-22T00:55:37.006"
    assert events["yarn_submitted"]["log"] == "yarn/application_1795308075658_0013.json"
    # the training rows of the node are still there
    assert [x["value"] for x in r.rows if x["metric"] == "loss" and x["task"] == "chief:0"][-1] == 1.28696


def test_event_log_without_application_end_is_not_finished(run):
    log = next((run / "spark-events").iterdir())
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(x for x in lines if '"SparkListenerApplicationEnd"' not in x))
    r = parse_run("tensorflowonspark", run)
    assert r.status == "ok" and not r.finished
    assert "ApplicationEnd" in r.reason and not phases(r)


def test_record_of_another_application_is_refused(run):
    path = next((run / "yarn").iterdir())
    record = json.loads(path.read_text())
    record["id"] = "application_1795308075658_0099"
    path.write_text(json.dumps(record))
    r = parse_run("tensorflowonspark", run)
    assert r.status == "unparseable" and "no ResourceManager record of application_1795308075658_0013" in r.reason


def test_driver_log_in_another_time_zone_is_refused(run):
    driver = run / "stdout.log"
    driver.write_text(driver.read_text().replace("2026-11-22 00:5", "2026-11-22 01:5"))  # UTC+1
    r = parse_run("tensorflowonspark", run)
    assert r.status == "unparseable" and "not UTC" in r.reason


def test_without_yarn_records_training_is_the_chief_clock(run):
    shutil.rmtree(run / "yarn")
    shutil.rmtree(run / "spark-events")
    r = parse_run("tensorflowonspark", run)
    assert r.status == "ok" and r.finished
    rows = [(x["phase"], x["task"]) for x in r.rows if x["metric"] == "time_breakdown_s"]
    assert sorted(rows) == [("tfos_shutdown", "driver"), ("tfos_startup", "driver"), ("training", "chief:0")]


def test_breakdown_of_the_paper_profiles_real_yarn_run(tmp_path):
    """TFoS 1.0.8 and TensorFlow 1.4.0 in Python 2.7, Spark 2.1.2 on YARN 2.7.3 (the paper profile's
    image): train_tf1.py's two workers and a parameter server, scored on the test set each epoch."""
    r = parse_run("tensorflowonspark", unpacked(PAPER_RUN, tmp_path / "run"))
    assert (r.status, r.finished) == ("ok", True), r.reason
    assert phases(r) == pytest.approx({"yarn_scheduling": 15.267, "data_loading": 6.177, "tfos_startup": 3.371,
                                      "training": 20.6518, "spark_jobs": 0.2912, "tfos_shutdown": 5.471}, abs=1e-6)
    total = [x["value"] for x in r.rows if x["metric"] == "end_to_end_s"]
    assert total == [pytest.approx(51.229, abs=1e-6)] and sum(phases(r).values()) == pytest.approx(total[0])
    accuracy = [(x["task"], x["epoch"], x["value"]) for x in r.rows if x["metric"] == "top1_accuracy"]
    assert accuracy == [("chief:0", 1, 0.899), ("chief:0", 2, 0.9073), ("chief:0", 3, 0.9122)]
    assert {x["task"] for x in r.rows if x["metric"] == "images_per_s"} == {"chief:0", "worker:0"}
    assert (r.meta["strategy"], r.meta["num_ps"], r.meta["tensorflow"]) == ("ps", "1", "1.4.0")


def test_tfos_1_0_shutting_down_before_the_chiefs_last_step_leaves_no_spark_jobs_phase(tmp_path):
    """TFoS 1.0.8 logs 'Shutting down cluster' as its shutdown job starts, while the one worker
    still drains its feed (dlobd-fig5b's first paper-profile run with one worker)."""
    r = parse_run("tensorflowonspark", unpacked(PAPER_RUN.with_name("tfos-1.0.8-fig5b-one-worker"), tmp_path / "run"))
    assert (r.status, r.finished) == ("ok", True), r.reason
    assert r.meta["shutdown_before_last_step_s"] == pytest.approx(0.11834)
    assert phases(r) == pytest.approx({"yarn_scheduling": 7.899, "data_loading": 4.499, "tfos_startup": 2.775,
                                      "training": 6.72334, "spark_jobs": 0.0, "tfos_shutdown": 5.36166}, abs=1e-6)
    assert sum(phases(r).values()) == pytest.approx([x["value"] for x in r.rows if x["metric"] == "end_to_end_s"][0])



REHEARSAL_RUN = PAPER_RUN.with_name("tfos-1.0.8-fig5b-rehearsal-4-workers")
WAITING_NODE = "containers/container_1796100586473_0003_01_000006/stderr"


def test_a_worker_still_waiting_for_the_chief_when_the_cluster_stopped_trained_no_step(tmp_path):
    """dlobd-fig5b's cifar10 at 4 GPUs rehearsed on the paper-shape site (41dcd60): worker:0 asked
    the parameter server a moment before the chief initialized the variables, and TF 1.x looks
    again only after 30 s; the cut work ended before that. Its log is whole: it trained no step."""
    text = (REHEARSAL_RUN / WAITING_NODE).read_text()
    node = tfos.parse(text)
    assert (node.status, node.finished) == ("ok", True), node.reason
    assert node.meta["waiting_for_chief"] == ["worker:0"]
    # the same log cut before TF's first wait: a worker that stops short of its summary
    cut = tfos.parse(text[:text.index("INFO:tensorflow:Waiting for model to be ready")])
    assert not cut.finished and "task worker:0 has no summary line (last step 0)" in cut.reason
    assert "waiting_for_chief" not in cut.meta
    # a worker that waited, looked again 30 s later and trained (dlobd-fig5b's 2-GPU MNIST point of
    # data/reference-paper): nothing to say
    joined = tfos.parse((ROOT / "data/reference-paper/local/local/dlobd-fig5b/gpus-2_network-loopback_workload-mnist"
                         "/attempt-001/containers/container_1796092285009_0016_01_000004/stderr").read_text())
    assert joined.finished and "waiting_for_chief" not in joined.meta
    # the run: the chief's executor held none of the cached partitions (all on worker:2's, beside
    # the data), so the chief trained no step either and the run has no training phase
    r = parse_run("tensorflowonspark", unpacked(REHEARSAL_RUN, tmp_path / "run"))
    assert r.status == "ok" and not r.finished
    assert r.meta["waiting_for_chief"] == ["worker:0"] and "worker:0" not in r.reason
    assert r.reason.endswith("no breakdown of the run on YARN: missing the chief:0 node's 'Training ... starts "
                             "its first step' line; the chief:0 node's DLOBD step lines (its training phase)"), r.reason


# ---------------------------------------------------------------- the paper profile: TFoS 1.0.8, TF 1.x

GROUP_VARS = playbook_settings()
PAPER_ENV = {**ENV, "DLOBD_PROFILE": "paper", "DLOBD_TFOS_PYTHON": "/opt/py35-tf14/bin/python",
             "DLOBD_TF_RDMA_PYTHON": "/opt/tf1-verbs/bin/python"}


def paper_points():
    """(experiment, point id, point) of every TFoS point at paper scale, of every spec."""
    out = []
    for name, s in dspec.load_all(ROOT).items():
        try:
            if s.data.get("data_from") or s.runs_from("paper") or not s.scale("paper").get("runnable", True):
                continue
            points = s.points("paper")
        except KeyError:
            continue  # no paper scale
        for pid, point in points:
            axis = s.data.get("stack_axis")
            if (point.get(axis) if axis and axis in point else s.stack("paper")) == "tensorflowonspark":
                out.append((name, pid, point))
    return out


PAPER_POINTS = paper_points()


def paper_context(tmp_path, experiment, point):
    data = spec(experiment)
    scale = data["scales"]["paper"]
    attempt = tmp_path / "attempt-001"
    attempt.mkdir(exist_ok=True)
    return runner.RunContext(spec=data, scale="paper", cluster="local", point=point, attempt_dir=attempt,
                           runs_dir=tmp_path, fixed=dspec.settings(data, "paper")[0],
                           time_limit_s=scale.get("time_limit_s"), dry_run=True)


def test_the_paper_points_are_those_of_fig5b_and_fig9():
    assert sorted({name for name, _, _ in PAPER_POINTS}) == ["dlobd-fig5b", "dlobd-fig9"]
    assert len(PAPER_POINTS) == 14 + 2


def test_the_launcher_s_paper_versions_are_the_version_set_s():
    tfos_set = GROUP_VARS["dlobd_profile_versions"]["paper-tfos-bigdl"]
    assert (tfos.PAPER_TENSORFLOW, tfos.PAPER_TFOS) == (tfos_set["tensorflow"], tfos_set["tensorflowonspark"])
    bounds = yaml.safe_load((ROOT / "playbooks/roles/python_env/defaults/main.yml").read_text())[
        "python_env_version_bounds"]["paper-tfos-bigdl"]
    assert bounds["pyspark_max"] == "3.5" and tfos.PAPER_PYSPARK_PYTHON == "3.5 or 2.7"


# 16 GPU workers with 32 GiB for YARN each (a quarter of 128 GiB, the default fraction)
GPU_WORKERS = [f"10.1.0.{i}" for i in range(5, 21)]
GPU_SETTINGS = {"DLOBD_GPU_WORKERS": " ".join(GPU_WORKERS), "DLOBD_CUDA_LIBRARY_PATH": "/usr/local/cuda-8.0/lib64",
                "DLOBD_YARN_MEMORY_MB": "32768", "DLOBD_GPUS_PER_NODE": "2",
                "DLOBD_HDFS_URI": "hdfs://10.1.0.1:19820"}


def gpu_cluster(monkeypatch, settings=GPU_SETTINGS, workers=GPU_WORKERS):
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])
    listed = {"DLOBD_WORKERS": " ".join(workers), **settings}
    monkeypatch.setattr(tfos.provenance, "stack_setting", lambda name: listed.get(name))


@pytest.mark.parametrize("experiment, pid, point", PAPER_POINTS, ids=[f"{e}:{p}" for e, p, _ in PAPER_POINTS])
def test_every_paper_point_runs_train_tf1_in_the_site_python(tmp_path, monkeypatch, experiment, pid, point):
    gpu_cluster(monkeypatch)
    ctx = paper_context(tmp_path, experiment, point)
    where = tfos.placement(point["network"], PAPER_ENV)
    assert where.tf1 and where.node_host is None  # several workers: TFoS 1.0 picks each one's address
    cmd = tfos.build_command(ctx, "spark-submit", URI, where, LOCAL)
    conf = confs(cmd)
    rdma = point["network"] == "rdma"
    # the site's RDMA build runs both sides of the comparison; without it, DLOBD_TFOS_PYTHON the IPoIB side
    python = "/opt/tf1-verbs/bin/python"
    if not rdma:
        without = {k: v for k, v in PAPER_ENV.items() if k != "DLOBD_TF_RDMA_PYTHON"}
        assert tfos.placement(point["network"], without).python == "/opt/py35-tf14/bin/python"
    assert cmd[:5] == ["spark-submit", "--master", "yarn", "--deploy-mode", "client"]
    assert cmd[cmd.index("spark.ui.enabled=false") + 1] == str(tfos.TRAIN_TF1)
    assert str(tfos.TRAIN) not in cmd
    for key in ("spark.pyspark.python", "spark.pyspark.driver.python", "spark.executorEnv.PYSPARK_PYTHON",
                "spark.yarn.appMasterEnv.PYSPARK_PYTHON"):
        assert conf[key] == python
    # Spark 2.1's name of the executors' overhead; the 2.3 one is not there
    assert "spark.executor.memoryOverhead" not in conf and option(cmd, "--executor-memory") == "512m"
    if experiment == "dlobd-fig5b":
        # at most gpus_per_node executors on a NodeManager: 2 (cifar10) take 15 GiB of its 32 each,
        # 1 (mnist) 31 GiB, both beside the ApplicationMaster's 1 GiB; CUDA's libraries
        share = {"cifar10": 15360, "mnist": 31744}[point["workload"]]
        assert conf["spark.yarn.executor.memoryOverhead"] == str(share - 512)
        assert conf["spark.yarn.am.memory"] == "512m"
        assert conf["spark.executor.extraLibraryPath"] == "/usr/local/cuda-8.0/lib64"
    else:
        # 4 CPU executors on 16 workers: one per NodeManager, 31 GiB of its 32 beside the AM's 1
        assert conf["spark.yarn.executor.memoryOverhead"] == str(31744 - 512)
        assert conf["spark.yarn.am.memory"] == "512m" and "spark.executor.extraLibraryPath" not in conf
    workers = point["gpus"] if experiment == "dlobd-fig5b" else 3
    assert option(cmd, "--workers") == str(workers) and option(cmd, "--ps") == "1"
    assert option(cmd, "--num-executors") == str(workers + 1) and option(cmd, "--partitions") == str(2 * workers)
    assert option(cmd, "--protocol") == ("grpc+verbs" if rdma else "grpc")
    assert option(cmd, "--input-mode") == "spark" and option(cmd, "--data-dir") == URI
    assert "--cluster-size" not in cmd and "--train-images" not in cmd and "--node-host" not in cmd
    if experiment == "dlobd-fig5b":
        assert option(cmd, "--model") == {"mnist": "mnist_softmax", "cifar10": "cifar10_cnn"}[point["workload"]]
        # batch 128 assumed, as Fig. 9's
        assert option(cmd, "--num-gpus") == "1" and option(cmd, "--batch-size") == "128"
    else:
        # fig9: 3 workers and 1 parameter server on 4 nodes, batch 128, on CPUs
        assert option(cmd, "--model") == "mnist_softmax" and option(cmd, "--batch-size") == "128"
        assert option(cmd, "--num-gpus") == "0"


@pytest.mark.parametrize("settings, workers, reason", [
    ({**GPU_SETTINGS, "DLOBD_GPU_WORKERS": " ".join(GPU_WORKERS[1:])}, GPU_WORKERS,
     "GPU TF nodes: YARN may place an executor on any worker, worker(s) 10.1.0.5 are not in group gpu, and YARN "
     "has no node label for group gpu"),
    (GPU_SETTINGS, GPU_WORKERS[:4],
     "9 executors (TF workers and parameter servers), at most 2 per node (its GPUs): 5 nodes, and the "
     "cluster has 4 GPU worker(s) (group gpu: 10.1.0.5, 10.1.0.6, 10.1.0.7, 10.1.0.8)"),
    ({k: v for k, v in GPU_SETTINGS.items() if k != "DLOBD_CUDA_LIBRARY_PATH"}, GPU_WORKERS,
     "GPU TF nodes need CUDA's libraries on the executors' library path: set dlobd_cuda_library_path (by default "
     "dlobd_cuda_home's lib64; DLOBD_CUDA_LIBRARY_PATH)"),
    ({**GPU_SETTINGS, "DLOBD_YARN_MEMORY_MB": "4096"}, GPU_WORKERS,
     "2 executor(s) per NodeManager of at least 1536 MiB each: YARN offers 4096 MiB on its smallest NodeManager"),
])
def test_a_gpu_point_the_cluster_cannot_pin_is_not_runnable(tmp_path, monkeypatch, settings, workers, reason):
    gpu_cluster(monkeypatch, settings, workers)
    monkeypatch.setattr(tfos.hadoop, "stack_env", lambda: dict(PAPER_ENV))
    ctx = paper_context(tmp_path, "dlobd-fig5b", {"workload": "cifar10", "network": "ipoib", "gpus": 8})
    with pytest.raises(NotRunnable, match="^" + re.escape(reason)):
        tfos.launch(ctx)


def test_a_gpu_point_on_a_cluster_with_some_gpu_workers_asks_for_their_node_label(tmp_path, monkeypatch):
    """Workers 10.1.0.5 and .6 without GPUs: with YARN's node label of the gpu group the executors
    ask for it, and the GPU workers alone are counted (5 nodes of 2 GPUs for 9 executors)."""
    settings = {**GPU_SETTINGS, "DLOBD_GPU_WORKERS": " ".join(GPU_WORKERS[2:]), "DLOBD_GPU_NODE_LABEL": "gpu"}
    gpu_cluster(monkeypatch, settings, GPU_WORKERS)
    monkeypatch.setattr(tfos.hadoop, "stack_env", lambda: dict(PAPER_ENV))
    ctx = paper_context(tmp_path, "dlobd-fig5b", {"workload": "cifar10", "network": "ipoib", "gpus": 8})
    assert "spark.yarn.executor.nodeLabelExpression=gpu" in tfos.launch(ctx).command
    gpu_cluster(monkeypatch, {**settings, "DLOBD_GPU_WORKERS": " ".join(GPU_WORKERS[:4])}, GPU_WORKERS)
    with pytest.raises(NotRunnable, match=r"5 nodes, and the cluster has 4 GPU worker\(s\)"):
        tfos.launch(paper_context(tmp_path, "dlobd-fig5b", {"workload": "cifar10", "network": "ipoib", "gpus": 8}))


def test_a_rehearsal_whose_cpus_stand_in_for_gpus_keeps_the_gpu_layout_and_asks_for_no_gpu(tmp_path, monkeypatch):
    """A site without GPUs whose gpu group's CPUs stand in for them (a rehearsal's only): the
    executors go where the GPU layout puts them, at most 2 a NodeManager with the gpu group's
    node label; the TF workers run --num-gpus 0 with no CUDA libraries, and the TF build is not
    asked for CUDA; labelled. Outside a rehearsal, or rehearsing another stack, the point needs
    CUDA's libraries."""
    settings = {**{k: v for k, v in GPU_SETTINGS.items() if k != "DLOBD_CUDA_LIBRARY_PATH"},
                "DLOBD_GPU_WORKERS": " ".join(GPU_WORKERS[2:]), "DLOBD_GPU_NODE_LABEL": "gpu",
                "DLOBD_REHEARSAL_STANDINS": json.dumps({"gpu": "CPU processes, no GPU"})}
    gpu_cluster(monkeypatch, settings, GPU_WORKERS)
    monkeypatch.setattr(tfos.hadoop, "stack_env", lambda: dict(PAPER_ENV))
    asked = []
    monkeypatch.setattr(tfos.tf_cluster, "refuse_cpu_only", lambda *args: asked.append(args))
    point = {"workload": "cifar10", "network": "ipoib", "gpus": 8}
    with capabilities.rehearsing("tensorflowonspark") as used:
        result = tfos.launch(paper_context(tmp_path, "dlobd-fig5b", point))
    cmd, conf = result.command, confs(result.command)
    assert used == {"gpu": "CPU processes, no GPU"} and asked == []
    assert option(cmd, "--num-gpus") == "0" and option(cmd, "--num-executors") == "9"
    assert conf["spark.yarn.executor.nodeLabelExpression"] == "gpu"
    assert conf["spark.yarn.executor.memoryOverhead"] == str(15360 - 512)
    assert "spark.executor.extraLibraryPath" not in conf
    assert result.labels["num_gpus"] == "0: a CPU process stands in for each TF worker's GPU (the rehearsal's stand-in)"
    for rehearsal in (contextlib.nullcontext(), capabilities.rehearsing("bigdl")):
        with rehearsal, pytest.raises(NotRunnable, match="^GPU TF nodes need CUDA's libraries"):
            tfos.launch(paper_context(tmp_path, "dlobd-fig5b", point))


def test_what_the_paper_leaves_unstated_is_labelled(tmp_path):
    # fig5b's unstated parameter servers, batch and epochs are its spec's assumed ones (runs.launch
    # labels them); the launcher picks only the input mode the paper's 'parameter server' leaves open
    fig5b = tfos.tf1_layout(paper_context(tmp_path, "dlobd-fig5b",
                                          {"workload": "cifar10", "network": "ipoib", "gpus": 8}))
    assert (fig5b["workers"], fig5b["ps"], fig5b["input_mode"], fig5b["batch"], fig5b["epochs"]) == (8, 1, "spark", 128, 1)
    assert fig5b["labels"] == {
        "parameter_servers": "1",
        "input_mode": "spark, TFoS's RDD feeding (the paper's mode: parameter server; the spec gives "
                      "none: the launcher's choice)"}
    fig9 = tfos.tf1_layout(paper_context(tmp_path, "dlobd-fig9", {"framework": "tensorflowonspark", "network": "ipoib"}))
    assert fig9["labels"]["parameter_servers"] == "1" and "batch" not in fig9["labels"]
    assert fig9["labels"]["input_mode"].startswith("spark, TFoS's RDD feeding (the paper's mode: not stated;")


def test_a_paper_point_without_the_site_python_is_not_runnable_naming_the_setting(tmp_path, monkeypatch):
    # neither the paper Python nor the RDMA twin's build, which an IPoIB point would run instead
    env = {k: v for k, v in PAPER_ENV.items() if k not in ("DLOBD_TFOS_PYTHON", "DLOBD_TF_RDMA_PYTHON")}
    monkeypatch.setattr(tfos.hadoop, "stack_env", lambda: dict(env))
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])  # IPoIB: an HCA this machine lacks
    ctx = paper_context(tmp_path, "dlobd-fig5b", {"workload": "mnist", "network": "ipoib", "gpus": 2})
    with pytest.raises(NotRunnable) as caught:
        tfos.launch(ctx)
    assert str(caught.value) == (
        "the paper profile's TensorFlowOnSpark 1.0.8 runs TensorFlow 1.4.0 in a Python 3.5 or 2.7 (Spark 2.1.0's "
        "PySpark fails on 3.6, SPARK-19019), not in the stacks' Python: set DLOBD_TFOS_PYTHON in "
        "dlobd_stack_settings to such a Python with tensorflow 1.4.0 and tensorflowonspark 1.0.8 "
        "(docs/new-cluster.md)")
    assert list(ctx.attempt_dir.iterdir()) == []


def test_the_modern_profile_never_reads_the_site_python():
    where = tfos.placement("loopback", {**ENV, "DLOBD_TFOS_PYTHON": "/opt/py35-tf14/bin/python"})
    assert not where.tf1 and where.python == "/stack/bin/python"


def test_a_paper_dry_run_records_the_versions_and_choices(tmp_path, monkeypatch):
    monkeypatch.setattr(tfos.hadoop, "stack_env", lambda: dict(PAPER_ENV))
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])
    monkeypatch.setattr(tfos.hadoop, "hdfs_uri", lambda path: "hdfs://10.1.0.1:19820" + path)
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["10.1.0.5"])
    ctx = paper_context(tmp_path, "dlobd-fig9", {"framework": "tensorflowonspark", "network": "ipoib"})
    result = tfos.launch(ctx)
    assert result.status == "dry run"
    assert option(result.command, "--node-host") == "10.1.0.5"  # one worker: every node on its address
    assert result.versions["tensorflow"] == "1.4.0" and result.versions["tensorflowonspark"] == "1.0.8"
    assert result.labels["parameter_servers"] == "1" and result.labels["tf_nodes"] == "3"


# ---------------------------------------------------------------- train_tf1.py, which cannot run here

TF1 = ROOT / "workloads" / "tensorflowonspark" / "train_tf1.py"


def load_tf1():
    return load_program(TF1, "train_tf1")


def test_train_tf1_is_python_3_5_and_2_7_syntax():
    source = TF1.read_text()
    tree = ast.parse(source, feature_version=(3, 5))  # no f-strings, no variable annotations
    assert newer_syntax(tree) == []
    assert "from __future__ import absolute_import, division, print_function" in source
    # of the project's helpers only the TF 1.x one (the others: Python 3.9+, TensorFlow 2)
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in imported if m.startswith(("dlobd", "psutil"))} <= {"dlobd_tf1"}


def test_train_tf1_kills_the_executors_started_beyond_those_asked_for_the_last_started():
    tf1 = load_tf1()
    assert tf1.surplus_executors(["3", "10", "1", "2", "6", "4", "5"], 5) == ["6", "10"]
    assert tf1.surplus_executors(["1", "2"], 5) == []


def test_train_tf1_finds_a_host_without_a_default_route_by_its_route_to_the_driver(monkeypatch):
    """TFoS 1.0.8's own way (a UDP socket 'connected' to 8.8.8.8) where it works; on a host without
    a default route, the source of the route to the driver (here loopback's); patched once."""
    import errno
    import types

    def unreachable():
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    util = types.SimpleNamespace(get_ip_address=unreachable)
    package = types.ModuleType("tensorflowonspark")
    package.util = util
    monkeypatch.setitem(sys.modules, "tensorflowonspark", package)
    monkeypatch.setitem(sys.modules, "tensorflowonspark.util", util)
    tf1 = load_tf1()
    tf1.pin_address("127.0.0.1")
    pinned = util.get_ip_address
    assert pinned() == "127.0.0.1" and pinned.dlobd_driver_host == "127.0.0.1"
    tf1.pin_address("10.0.0.1")
    assert util.get_ip_address is pinned
    util.get_ip_address = lambda: "10.1.0.5"  # a default route: TFoS's own answer stands
    tf1.pin_address("127.0.0.1")
    assert util.get_ip_address() == "10.1.0.5"


@pytest.mark.parametrize("python", ["python2.7", "python3.5"])
def test_train_tf1_compiles_in_an_old_python_where_one_is_installed(tmp_path, python):
    found = shutil.which(python)
    if not found or subprocess.run([found, "-c", "pass"], capture_output=True).returncode != 0:
        pytest.skip(f"no {python} here")
    copy = tmp_path / "train_tf1.py"
    copy.write_bytes(TF1.read_bytes())
    done = subprocess.run([found, "-m", "py_compile", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_train_tf1_s_lines_are_what_the_parser_reads(capsys):
    """The workload's line helper and the chief/worker/ps naming against the TFoS parser: a
    log of its lines (and TFoS 1.0.8's own driver lines) parses finished, with the chief's
    training phase and every rate."""
    w = load_tf1()
    spec_, job, index = w.node_cluster({"ps": ["h1:1"], "worker": ["h2:2", "h3:3"]}, "worker", 0, None)
    assert (spec_, job, index) == ({"ps": ["h1:1"], "chief": ["h2:2"], "worker": ["h3:3"]}, "chief", 0)
    assert w.node_cluster({"ps": ["h1:1"], "worker": ["h1:2", "h1:3"]}, "worker", 1, "127.0.0.1") == (
        {"ps": ["127.0.0.1:1"], "chief": ["127.0.0.1:2"], "worker": ["127.0.0.1:3"]}, "worker", 0)
    with pytest.raises(SystemExit, match="3 machines"):
        w.node_cluster({"ps": ["h1:1"], "worker": ["h2:2", "h3:3"]}, "ps", 0, "127.0.0.1")
    # the default-route addresses TFoS registered, mapped to the network's; others kept
    assert w.node_cluster({"ps": ["e1:1"], "worker": ["e2:2", "h3:3"]}, "worker", 1, None, "e1=i1,e2=i2") == (
        {"ps": ["i1:1"], "chief": ["i2:2"], "worker": ["h3:3"]}, "worker", 0)
    for task in ("chief:0", "worker:0"):
        w.dlobd_line("start", [("task", task), ("workload", "tensorflowonspark"), ("strategy", "ps")])
        for step in (10, 20):
            w.dlobd_line("step", [("task", task), ("step", step), ("epoch", 1), ("wall_clock_s", step / 10.0),
                                  ("loss", 2.3), ("images_per_s", 256.0), ("worker_images_per_s", 128.0),
                                  ("steps_per_s", 2.0)])
        w.dlobd_line("epoch", [("task", task), ("step", 20), ("epoch", 1), ("wall_clock_s", 2.1),
                               ("epoch_time_s", 2.05), ("top1_accuracy", None)])
        w.dlobd_line("summary", [("task", task), ("step", 20), ("epoch", 1), ("train_time_s", 2.05),
                                 ("images_per_s", 250.0), ("worker_images_per_s", 125.0),
                                 ("steps_per_s", 9.75), ("end_to_end_s", 7.5)])
    w.dlobd_line("start", [("task", "ps:0"), ("workload", "tensorflowonspark"), ("role", "server")])
    driver = ("2026-11-26 10:00:00,000 INFO (MainThread-1) DLOBD event=driver_start app_id=a input_mode=spark "
              "cluster_size=3 num_ps=1 tensorflowonspark=1.0.8\n"
              "2026-11-26 10:00:01,000 INFO (MainThread-1) Reserving TFSparkNodes \n"
              "2026-11-26 10:00:05,000 INFO (MainThread-1) All TFSparkNodes started\n"
              "2026-11-26 10:00:20,000 INFO (MainThread-1) Shutting down cluster\n"
              "2026-11-26 10:00:25,000 INFO (MainThread-1) DLOBD event=cluster_stopped app_id=a\n")
    r = tfos.parse(capsys.readouterr().out + driver)
    assert (r.status, r.finished) == ("ok", True), r.reason
    training = {x["task"]: x["value"] for x in r.rows if x["metric"] == "time_breakdown_s" and x["phase"] == "training"}
    assert training == {"chief:0": 2.0, "driver": 15.0}  # the chief leads; worker:0 is no lead
    assert {x["metric"] for x in r.rows} >= {"images_per_s", "worker_images_per_s", "steps_per_s", "loss",
                                             "train_time_s", "end_to_end_s", "epoch_time_s"}
    with pytest.raises(ValueError, match="without spaces"):
        w.dlobd_line("step", [("task", "chief 0")])


def test_train_tf1_reads_the_data_formats_train_py_reads():
    w = load_tf1()
    images = bytes([0, 0, 8, 3]) + struct.pack(">III", 2, 28, 28) + bytes(range(256)) * 6 + bytes(32)
    x = w.idx_array(images)
    assert x.shape == (2, 28, 28) and x[0, 0, 5] == 5
    pixels, labels = w.to_arrays("mnist_softmax", x.tobytes(), [3, 7])
    assert pixels.shape == (2, 28, 28, 1) and pixels.dtype.name == "float32" and labels.tolist() == [3, 7]
    record = bytes([4]) + bytes([1] * 1024 + [2] * 1024 + [3] * 1024)  # label, then R, G, B planes
    cifar, label = w.rows_to_arrays("cifar10_cnn", [(record[1:], record[0])])
    assert cifar.shape == (1, 32, 32, 3) and cifar[0, 0, 0].tolist() == pytest.approx([1 / 255, 2 / 255, 3 / 255])
    assert label.tolist() == [4]
    assert w.process_start_time() <= time.time()
    args = w.parse_args(["--model", "cifar10_cnn", "--data-dir", "/d", "--workers", "2"])
    assert (args.ps, args.num_gpus, args.input_mode) == (1, 1, "spark")
    with pytest.raises(SystemExit):
        w.parse_args(["--model", "cifar10_cnn", "--data-dir", "/d", "--workers", "2", "--ps", "0"])


@pytest.mark.parametrize("given", [True, False])
def test_on_the_paper_profile_the_cluster_s_tfos_is_the_site_python_s(tmp_path, monkeypatch, given):
    """On the head node of a paper cluster the stacks' venv has no TensorFlow or TFoS: the plan
    counts the site's Pythons (TFoS's, and the TF 1.x build native TensorFlow runs in), or says
    which setting is unset."""
    pythons = {}
    for setting in ("DLOBD_TFOS_PYTHON", "DLOBD_TF_RDMA_PYTHON"):
        pythons[setting] = tmp_path / setting / "bin" / "python"
        pythons[setting].parent.mkdir(parents=True)
        pythons[setting].write_text("")
    settings = {"DLOBD_PROFILE": "paper", **({k: str(v) for k, v in pythons.items()} if given else {})}
    monkeypatch.setattr(plan.provenance, "stack_setting", lambda name: settings.get(name))
    monkeypatch.setattr(plan.provenance, "versions", lambda: dict.fromkeys(("tensorflow", "tensorflowonspark", "bigdl")))
    capabilities.local_capabilities.cache_clear()
    try:
        caps = capabilities.local_capabilities()
    finally:
        capabilities.local_capabilities.cache_clear()
    tfos, rdma = (f"{s} {pythons[s]}" for s in ("DLOBD_TFOS_PYTHON", "DLOBD_TF_RDMA_PYTHON"))
    if given:
        assert caps["tensorflowonspark"] == (True, f"tensorflowonspark in {tfos}, {rdma}")
        assert caps["tensorflow"] == (True, f"tensorflow in {rdma}, {tfos}")
    else:
        assert caps["tensorflowonspark"] == (False, "the paper profile's tensorflowonspark runs in the Python "
                                             "DLOBD_TFOS_PYTHON or DLOBD_TF_RDMA_PYTHON names (dlobd_stack_settings): unset")
        assert caps["tensorflow"] == (False, "the paper profile's tensorflow runs in the Python "
                                      "DLOBD_TF_RDMA_PYTHON or DLOBD_TFOS_PYTHON names (dlobd_stack_settings): unset")


TF1_PYTHON = os.environ.get("DLOBD_TEST_TF1_PYTHON")


@pytest.mark.skipif(not TF1_PYTHON, reason="DLOBD_TEST_TF1_PYTHON names no Python with TensorFlow 1.x and "
                                           "TensorFlowOnSpark 1.0.8 (and numpy)")
@pytest.mark.parametrize("model, mode, gpus", [("mnist_softmax", "spark", "0"), ("cifar10_cnn", "tensorflow", "1")])
def test_train_tf1_s_nodes_train_in_a_tf1_python(tmp_path, model, mode, gpus):
    """train_tf1.py's TF nodes for real in a TensorFlow 1.x Python (tests/tf1_harness.py: one
    ps, two workers, TFoS 1.0.8's node context and feed queues, no Spark); their logs parse
    finished, with the chief's training phase. gpus=1 takes TFNode.start_cluster_server."""
    done = subprocess.run([TF1_PYTHON, "-B", str(ROOT / "tests" / "tf1_harness.py"), model, mode,
                           str(tmp_path / "logs"), str(tmp_path / "data"), gpus],
                          capture_output=True, text=True, timeout=900)
    logs = {p.name: p.read_text() for p in (tmp_path / "logs").glob("*.log")}
    assert done.returncode == 0, done.stdout + done.stderr + "".join(logs.values())[-3000:]
    assert sorted(logs) == ["ps-0.log", "worker-0.log", "worker-1.log"]
    parsed = {name: tfos.parse(text) for name, text in logs.items()}
    assert all((r.status, r.finished) == ("ok", True) for r in parsed.values()), {n: r.reason for n, r in parsed.items()}
    chief = parsed["worker-0.log"]
    assert chief.meta["model"] == model and chief.meta["input_mode"] == mode and chief.meta["strategy"] == "ps"
    assert [r["task"] for r in chief.rows if r["metric"] == "time_breakdown_s"] == ["chief:0"]
    summary = {r["metric"]: r["value"] for r in parsed["worker-1.log"].rows if r.get("step") is None}
    assert summary["train_time_s"] > 0 and summary["worker_images_per_s"] > 0
    assert "Training chief:0 starts its first step" in logs["worker-0.log"]


def test_the_address_map_takes_the_default_routes_found_at_provisioning(monkeypatch):
    """TFoS 1.0.8 registers an executor at its host's default-route address: the one Ansible's
    facts found (DLOBD_WORKERS_DEFAULT_ROUTE) where known, else the worker's Ethernet address."""
    settings = {"DLOBD_WORKERS_ETHERNET": "10.1.0.5=10.40.0.5 10.1.0.6=10.40.0.6",
                "DLOBD_WORKERS_DEFAULT_ROUTE": "10.1.0.5=10.50.0.5 10.1.0.9=10.50.0.9 "}
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["10.1.0.5", "10.1.0.6"])
    monkeypatch.setattr(tfos.provenance, "stack_setting", lambda name: settings.get(name))
    assert tfos.placement("ipoib", PAPER_ENV).address_map == (("10.40.0.6", "10.1.0.6"), ("10.50.0.5", "10.1.0.5"))
    assert tfos.placement("ipoib", ENV).address_map == ()  # TFoS 2.x takes TFOS_SERVER_HOST


@pytest.mark.parametrize("tf1", [False, True], ids=["train.py", "train_tf1.py"])
def test_evaluate_scores_the_local_test_set_and_is_off_by_default(tmp_path, tf1):
    ctx = context(tmp_path, "dlobd-fig9", {"framework": "tensorflowonspark", "network": "loopback"})
    where = tfos.placement("loopback", ENV)
    where = dataclasses.replace(where, tf1=tf1)
    assert "--eval-dir" not in tfos.build_command(ctx, "spark-submit", URI, where, LOCAL)
    ctx.fixed["evaluate"] = True
    cmd = tfos.build_command(ctx, "spark-submit", URI, where, LOCAL)
    assert option(cmd, "--eval-dir") == "/data/x" and option(cmd, "--data-dir") == URI
    assert cmd.index("--eval-dir") > cmd.index(str(tfos.TRAIN_TF1 if tf1 else tfos.TRAIN))
