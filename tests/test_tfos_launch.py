"""The TensorFlowOnSpark launcher's command lines and the breakdown of a real run on YARN.

Command building needs no cluster: hadoop.spark_conf only writes into the attempt. The
breakdown is checked on tests/data/logs/tensorflowonspark-yarn/spark-mnist-1-node, a real
run of the launcher (tests/data/logs/README.md), whose event log is stored gzip-compressed.
"""

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, hadoop, networks, plan, runs
from dlobd.stacks import parse_run
from dlobd.stacks import tensorflowonspark as tfos

FIXTURE = Path(__file__).parent / "data" / "logs" / "tensorflowonspark-yarn" / "spark-mnist-1-node"
ENV = {"DLOBD_PYTHON": "/stack/bin/python", "SPARK_HOME": "/stack/spark", "DLOBD_DATA_DIR": "/data"}
URI = "hdfs://127.0.0.1:19820/dlobd/data/x"


def spec(name):
    return yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())


def context(tmp_path, experiment, point):
    data = spec(experiment)
    scale = data["scales"]["local"]
    attempt = tmp_path / "attempt-001"
    attempt.mkdir()
    return runs.RunContext(spec=data, scale="local", cluster="local", point=point, attempt_dir=attempt,
                           runs_dir=tmp_path, fixed=dict(scale["fixed"]), time_limit_s=scale["time_limit_s"])


def command_for(ctx, network="loopback"):
    return tfos.build_command(ctx, "spark-submit", URI, tfos.placement(network, ENV))


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
    # the run's YARN tag and its event log in the attempt (dlobd.hadoop)
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


def test_input_modes():
    assert tfos.input_mode({"mode": "InputMode.TENSORFLOW"}) == "tensorflow"
    assert tfos.input_mode({}) == "spark"
    with pytest.raises(runs.NotRunnable, match="'parameter server'"):
        tfos.input_mode({"mode": "parameter server"})  # fig5b's paper scale: TFoS 1.x


def test_unknown_workload_is_named(tmp_path):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "imagenet", "network": "loopback", "gpus": 1})
    with pytest.raises(ValueError, match="workload 'imagenet'"):
        command_for(ctx)


@pytest.mark.skipif(plan.capabilities()["tf-rdma"][0], reason="this cluster has TF's verbs channel")
def test_rdma_is_not_runnable_without_tf_verbs(tmp_path):
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "mnist", "network": "rdma", "gpus": 2})
    with pytest.raises(runs.NotRunnable) as caught:
        tfos.launch(ctx)  # before anything is staged or submitted
    assert "grpc+verbs" in str(caught.value) and "needs tf-rdma" in str(caught.value)
    assert list(ctx.attempt_dir.iterdir()) == []


def test_rdma_path_runs_the_verbs_python(tmp_path, monkeypatch):
    """Where tf-rdma exists, driver and executors run DLOBD_TF_RDMA_PYTHON with grpc+verbs."""
    monkeypatch.setattr(networks, "missing", lambda stack, network: [])
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["10.1.0.5"])
    env = {**ENV, "DLOBD_TF_RDMA_PYTHON": "/opt/tf-verbs/bin/python", "TFOS_SERVER_HOST": "10.1.0.1"}
    ctx = context(tmp_path, "dlobd-fig5b", {"workload": "mnist", "network": "rdma", "gpus": 2})
    cmd = tfos.build_command(ctx, "spark-submit", URI, tfos.placement("rdma", env))
    conf = confs(cmd)
    assert option(cmd, "--protocol") == "grpc+verbs"
    assert conf["spark.pyspark.python"] == conf["spark.pyspark.driver.python"] == "/opt/tf-verbs/bin/python"
    assert conf["spark.executorEnv.PYSPARK_PYTHON"] == "/opt/tf-verbs/bin/python"
    assert conf["spark.executorEnv.TFOS_SERVER_HOST"] == "10.1.0.1"
    assert option(cmd, "--node-host") == "10.1.0.5"  # the one worker's address


def test_loopback_refuses_executors_on_other_hosts(monkeypatch):
    monkeypatch.setattr(tfos.provenance, "workers", lambda: ["127.0.0.1", "192.0.2.77"])
    monkeypatch.setattr(tfos.provenance, "is_local_address", lambda host: host.startswith("127."))
    with pytest.raises(runs.NotRunnable, match="192.0.2.77"):
        tfos.placement("loopback", ENV)


# ---------------------------------------------------------------- breakdown of a real run

@pytest.fixture
def run(tmp_path):
    """The fixture run with its event log as Spark wrote it (uncompressed)."""
    out = tmp_path / "run"
    shutil.copytree(FIXTURE, out)
    packed = next((out / "spark-events").glob("*.gz"))
    packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    return out


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
