"""One short real TensorFlowOnSpark point on the test cluster (runs.launch ->
tensorflowonspark.launch -> spark-submit on YARN -> raw logs -> parser), with its fig9
breakdown; and a TFoS run past its time limit: `hung`, its YARN application killed and no
process of it left behind."""

import copy
import csv
import json
import time
from types import SimpleNamespace

import psutil
import pytest

from dlobd import spec, stacks
from dlobd.cluster import hadoop
from dlobd.execution import runs

pytestmark = pytest.mark.integration

POINT = {"workload": "mnist", "network": "loopback", "gpus": 2}
PHASES = {"yarn_scheduling", "data_loading", "tfos_startup", "training", "spark_jobs", "tfos_shutdown"}


def tiny_spec(time_limit_s: float, images: int = 2048, epochs: int = 1) -> dict:
    """dlobd-fig5b's local scale on the first `images` MNIST images."""
    data = copy.deepcopy(spec.load_all()["dlobd-fig5b"].data)
    local = data["scales"]["local"]
    local["fixed"] = {**local["fixed"], "train_images": images, "epochs": epochs}
    local["time_limit_s"] = time_limit_s
    return data


def test_short_mnist_point_on_yarn(stack_cluster, tmp_path):
    attempt = runs.launch(tiny_spec(300), "local", POINT, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stderr.log").read_text()[-3000:])
    assert record["labels"]["data"] == "mnist" and record["labels"]["protocol"] == "grpc"
    assert "staged: hdfs://" in (attempt / "prepare.log").read_text()

    parsed = stacks.parse_run("tensorflowonspark", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    losses = [r for r in parsed.rows if r["metric"] == "loss" and r["task"] == "chief:0"]
    assert losses and losses[-1]["value"] < losses[0]["value"]  # it learns
    tasks = {r.get("task") for r in parsed.rows if r["metric"] == "images_per_s"}
    assert tasks == {"chief:0", "worker:0"}  # two TF nodes, one per executor
    # 0.8 of an even share of 2048 images over two nodes, 64 each per step: 12 steps
    assert parsed.meta["steps_per_epoch"] == "12"

    phases = {r["phase"]: r["value"] for r in parsed.rows if r["metric"] == "time_breakdown_s"}
    assert set(phases) == PHASES and all(v >= 0 for v in phases.values())
    assert phases["training"] > 0 and phases["yarn_scheduling"] > 1  # an AM and two containers
    total = [r["value"] for r in parsed.rows if r["metric"] == "end_to_end_s"]
    assert len(total) == 1 and abs(sum(phases.values()) - total[0]) < 0.01
    # the breakdown lies inside the RM's own view of the application
    app = json.loads(next((attempt / "yarn").glob("application_*.json")).read_text())
    assert total[0] <= (app["finishedTime"] - app["startedTime"]) / 1000
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED"
    assert hadoop.app_tag(SimpleNamespace(attempt_dir=attempt)) in app["applicationTags"]
    # the AM's and both executors' container logs
    assert len(list((attempt / "containers").glob("container_*/stderr"))) == 3

    monitors = list((attempt / "monitor").glob("*.csv"))
    assert monitors, "no monitor/<host>.csv"
    with open(monitors[0]) as fh:
        assert len(list(csv.DictReader(fh))) >= 10


def leftovers(app_ids: list[str], attempt) -> list[str]:
    """Processes of the run still alive: the driver (its command names the attempt) and the
    containers' JVMs, Python workers and TF nodes (their command lines or working
    directories name the application)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        if str(attempt) in text or any(a in text for a in app_ids):
            found.append(f"{proc.info['pid']}: {text[:200]}")
    return found


def test_tfos_past_its_time_limit_is_hung_and_leaves_nothing(stack_cluster, tmp_path):
    # 60 s reach YARN (submission ~20-40 s here) but not the end of 30 epochs of 10000 images
    attempt = runs.launch(tiny_spec(60, images=10000, epochs=30), "local", POINT, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "hung", record
    assert "killed after the time limit of 60 s" in record["reason"]
    tag = hadoop.app_tag(SimpleNamespace(attempt_dir=attempt))
    apps = hadoop.applications(tag)
    assert apps, f"no YARN application with tag {tag}: the run never reached YARN"
    assert all(a["state"] in hadoop.FINAL_STATES for a in apps), apps
    ids = [a["id"] for a in apps]
    assert {p.stem for p in (attempt / "yarn").glob("*.json")} == set(ids)
    # the NodeManager ends a killed application's containers within seconds
    deadline = time.monotonic() + 60
    while (left := leftovers(ids, attempt)) and time.monotonic() < deadline:
        time.sleep(2)
    assert not left, left
    parsed = stacks.parse_run("tensorflowonspark", attempt)
    assert parsed.status != "ok" or not parsed.finished  # a cut run: no breakdown
