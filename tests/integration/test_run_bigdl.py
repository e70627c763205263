"""Short real BigDL points on the test cluster: VGG-16 on cifar10-synthetic through
spark-submit on YARN (runs.launch -> bigdl.launch -> raw logs -> parser), launched as a
rehearsal of a longer run; the same point with a time limit too short for it (`hung`, with its
YARN application killed), and LeNet-5 on the real MNIST, which must learn: the local stand-in
of the accuracy curves."""

import copy
import csv
import json
import re
from types import SimpleNamespace

import pytest

from dlobd import spec, stacks
from dlobd.cluster import hadoop
from dlobd.execution import rehearsal, runs
from dlobd.results import tidy
from dlobd.stacks import bigdl

pytestmark = pytest.mark.integration

POINT = {"network": "loopback"}
EPOCHS = 2


def tiny_spec(time_limit_s: float, epochs: int = EPOCHS) -> dict:
    """dlobd-fig7a's local scale with VGG-16 on cifar10-synthetic, cut to a few epochs over 32
    training and 16 test images: two iterations an epoch, as with one BigDL skips the
    validation after epoch 1."""
    data = copy.deepcopy(spec.load_all()["dlobd-fig7a"].data)
    local = data["scales"]["local"]
    local["fixed"] = {**local["fixed"], "model": "vgg16", "cores": 2, "batch": 16, "epochs": epochs,
                      "train_images": 32, "test_images": 16, "executor_memory": "3g"}
    local["dataset"] = "cifar10-synthetic"
    local["time_limit_s"] = time_limit_s
    return data


def test_short_vgg_point_on_yarn_as_a_rehearsal(stack_cluster, tmp_path):
    """Launched as a rehearsal (make experiments REHEARSE=1): the scale's 1,000 epochs cut to 2 by
    its `rehearsal`, the rest as the scale runs it; the run passes the rehearsal and gives no result."""
    data = tiny_spec(300, epochs=1000)
    data["scales"]["local"]["rehearsal"] = {"epochs": EPOCHS, "why": "two epochs"}
    attempt = runs.launch(data, "local", POINT, tmp_path / "runs", rehearse=True)
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stderr.log").read_text()[-3000:])
    assert record["labels"]["rehearsal"] == {"epochs": f"1000 -> {EPOCHS}"}
    lines, failing = rehearsal.summary(tmp_path / "runs", "local")
    assert failing == 0 and lines[1].startswith(f"  passed        {record['run_id']} (epochs 1000 -> {EPOCHS})")
    assert tidy.parse_attempt(runs.read_attempt(attempt, tmp_path / "runs"), "bigdl")[:2] == ([], "rehearsal")
    assert record["versions"]["stack"] == "bigdl 2.4.0"
    assert record["labels"]["data"] == "synthetic" and record["labels"]["spark"] == "vanilla"
    assert "--master" in record["command"] and "yarn" in record["command"]
    assert re.search(r"the first 32 of \d+ train and the first 16 of \d+ test records",
                     (attempt / "prepare.log").read_text())

    parsed = stacks.parse_run("bigdl", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    by_metric = {}
    for r in parsed.rows:
        by_metric.setdefault(r["metric"], []).append(r)
    epochs = by_metric["epoch_time_s"]
    assert [r["epoch"] for r in epochs] == list(range(1, EPOCHS + 1))
    assert all(0 < r["value"] < 300 for r in epochs)
    accuracy = by_metric["top1_accuracy"]
    assert [r["epoch"] for r in accuracy] == list(range(1, EPOCHS + 1))
    assert all(0 <= r["value"] <= 1 for r in accuracy)
    assert parsed.meta["test_records"] == 16 and parsed.meta["epoch_records"] == 32
    assert [r["step"] for r in by_metric["throughput_records_per_s"]] == list(range(1, 2 * EPOCHS + 1))

    monitors = list((attempt / "monitor").glob("*.csv"))
    assert monitors, "no monitor/<host>.csv"
    with open(monitors[0]) as fh:
        assert len(list(csv.DictReader(fh))) >= 5
    apps = list((attempt / "yarn").glob("application_*.json"))
    assert len(apps) == 1
    app = json.loads(apps[0].read_text())
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED"
    assert hadoop.app_tag(SimpleNamespace(attempt_dir=attempt)) in app["applicationTags"]
    # the executor's container logs are kept beside the driver's
    assert len(list((attempt / "containers").glob("container_*/stderr"))) == 2


def test_too_short_time_limit_is_hung_and_kills_the_yarn_app(stack_cluster, tmp_path):
    # long enough to reach YARN (submission takes ~10 s), far too short for 1000 VGG epochs
    attempt = runs.launch(tiny_spec(45, epochs=1000), "local", POINT, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "hung", record
    assert "killed after the time limit of 45 s" in record["reason"]
    tag = hadoop.app_tag(SimpleNamespace(attempt_dir=attempt))
    apps = hadoop.applications(tag)
    assert apps, f"no YARN application with tag {tag}: the run never reached YARN"
    assert all(a["state"] in hadoop.FINAL_STATES for a in apps), apps
    assert {p.stem for p in (attempt / "yarn").glob("*.json")} == {a["id"] for a in apps}
    # the driver's log stops where it was killed, short of the 30 epochs
    done = [r["epoch"] for r in bigdl.parse((attempt / "stderr.log").read_text()).rows
            if r["metric"] == "epoch_time_s"]
    assert max(done, default=0) < 30


def test_lenet_on_real_mnist_learns(stack_cluster, tmp_path):
    """dlobd-fig6c's local point cut to 3 epochs: BigDL's LeNet-5 on the first 2,560 MNIST
    images, validated on 2,000, must be well above chance (0.1) by the third epoch."""
    data = copy.deepcopy(spec.load_all()["dlobd-fig6c"].data)
    data["scales"]["local"]["fixed"]["epochs"] = 3
    attempt = runs.launch(data, "local", POINT, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stderr.log").read_text()[-3000:])
    assert record["labels"]["data"] == "mnist"
    assert "com.intel.analytics.bigdl.dllib.models.lenet.Train" in record["command"]
    parsed = stacks.parse_run("bigdl", attempt)
    accuracy = [r["value"] for r in parsed.rows if r["metric"] == "top1_accuracy"]
    assert len(accuracy) == 3 and parsed.meta["test_records"] == 2000
    assert accuracy[-1] > 0.3, accuracy    # measured 0.45, 0.53, 0.62 over the 3 epochs
