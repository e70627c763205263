"""Native distributed TensorFlow on the provisioned stack: one real point of rdmatf-fig6
(AlexNet, a chief, two workers and a parameter server on loopback) through runs.launch,
its parsed rows and monitor samples; and runs that end badly (a worker killed mid-run, the
time limit) keep their logs and leave no TF process behind."""

import copy
import csv
import json
import threading
import time

import psutil
import pytest

from dlobd import NotRunnable, spec
from dlobd.cluster import hadoop
from dlobd.execution import runs
from dlobd.results import tidy as results
from dlobd.stacks import tensorflow as tf
from dlobd.stacks.shared import tf_cluster

pytestmark = pytest.mark.integration

POINT = {"network": "loopback", "nodes": 2}


def fig6(**local):
    data = copy.deepcopy(spec.load_all()["rdmatf-fig6"].data)
    data["scales"]["local"].update(local)
    return data


def attempt_of(runs_dir):
    return runs.point_dir(runs_dir, "local", "local", "rdmatf-fig6", POINT) / "attempt-001"


class TaskWatch(threading.Thread):
    """Collects the pids of a run's TF tasks (found by the ports of its tasks.json), and
    with `kill` kills that task once the chief has printed its start line."""

    def __init__(self, attempt, kill=None):
        super().__init__(daemon=True)
        self.attempt, self.kill, self.pids, self.killed = attempt, kill, {}, None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            plan = self.attempt / tf.PLAN_FILE
            if plan.is_file():
                try:
                    tasks = json.loads(plan.read_text())["tasks"]
                except json.JSONDecodeError:  # being written
                    tasks = []
                for proc in psutil.process_iter(["cmdline"]):
                    if str(tf.WORKLOAD) not in (proc.info["cmdline"] or []):
                        continue
                    try:
                        config = json.loads(proc.environ().get("TF_CONFIG", "{}"))
                    except (psutil.Error, json.JSONDecodeError):
                        continue
                    task = config.get("task", {})
                    name = f"{task.get('type')}:{task.get('index')}"
                    if any(t["port"] and f"127.0.0.1:{t['port']}" in config["cluster"].get(t["job"], [])
                           for t in tasks):
                        self.pids[name] = proc.pid
                chief_log = self.attempt / "tasks" / "chief-0.log"
                if (self.kill and self.killed is None and self.kill in self.pids and chief_log.is_file()
                        and "DLOBD event=start" in chief_log.read_text(errors="replace")):
                    psutil.Process(self.pids[self.kill]).kill()
                    self.killed = self.kill
            time.sleep(0.3)

    def left_running(self, grace_s=10):
        """The tasks still alive after a grace period (a SIGKILLed process with many threads
        takes a moment to go)."""
        procs = {}
        for name, pid in self.pids.items():
            try:
                procs[name] = psutil.Process(pid)
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(list(procs.values()), timeout=grace_s)
        return {name: p.pid for name, p in procs.items()
                if p in alive and p.status() != psutil.STATUS_ZOMBIE}


def test_a_parameter_server_point_runs_and_parses(stack_cluster, tmp_path):
    runs_dir = tmp_path / "runs"
    watch = TaskWatch(attempt_of(runs_dir))
    watch.start()
    attempt = runs.launch(fig6(), "local", POINT, runs_dir)
    watch.stop.set()
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stdout.log").read_text())
    assert record["labels"] == {"network": "loopback", "protocol": "grpc", "strategy": "ps",
                                "data": "synthetic", "profile": "modern"}
    assert set(record["hosts"][0]["roles"]) == {"chief:0", "ps:0", "worker:0", "worker:1"}
    assert sorted(p.name for p in (attempt / "tasks").iterdir()) == [
        "chief-0.log", "ps-0.log", "worker-0.log", "worker-1.log"]
    assert set(watch.pids) == {"chief:0", "ps:0", "worker:0", "worker:1"}
    assert watch.left_running() == {}

    rows, status, reason = results.parse_attempt(runs.read_attempt(attempt, runs_dir), "tensorflow")
    assert status == "ok", reason
    run_rows = [r for r in rows if not str(r.get("log", "")).startswith("monitor/")]
    assert {r["task"] for r in run_rows} == {"chief:0"}  # the servers print no values
    steps = [r for r in run_rows if r["metric"] == "steps_per_s" and r["step"] is not None]
    assert steps and all(r["value"] > 0 for r in steps)
    assert steps[-1]["step"] == 8  # the spec's steps, warm-up excluded
    summary = {r["metric"]: r["value"] for r in run_rows if r["step"] is None and r["metric"] != "time_breakdown_s"}
    assert summary["images_per_s"] == pytest.approx(24 * summary["steps_per_s"], rel=1e-3)
    assert 0 < summary["train_time_s"] < summary["end_to_end_s"] < record_seconds(record)

    monitor = list(attempt.glob("monitor/*.csv"))
    assert monitor
    with open(monitor[0]) as fh:
        samples = list(csv.DictReader(fh))
    assert len(samples) >= 5 and max(float(s["rss_mb"]) for s in samples) > 200  # four TF processes
    assert any(r["metric"] == "cpu_util_pct" for r in rows)


def record_seconds(record):
    from datetime import datetime

    def t(s):
        return datetime.fromisoformat(s.replace("Z", "+00:00"))
    return (t(record["end"]) - t(record["start"])).total_seconds()


def test_a_killed_worker_fails_the_run_naming_it(stack_cluster, tmp_path):
    runs_dir = tmp_path / "runs"
    watch = TaskWatch(attempt_of(runs_dir), kill="worker:1")
    watch.start()
    attempt = runs.launch(fig6(), "local", POINT, runs_dir)
    watch.stop.set()
    record = json.loads((attempt / "run.json").read_text())
    assert watch.killed == "worker:1"
    assert record["status"] == "failed"
    assert "worker:1 was killed by SIGKILL" in record["reason"] and "tasks/worker-1.log" in record["reason"]
    # every task's log is kept; the chief's stops before its summary
    assert "DLOBD event=start" in (attempt / "tasks" / "chief-0.log").read_text()
    assert "event=summary" not in (attempt / "tasks" / "chief-0.log").read_text()
    assert watch.left_running() == {}
    row = results.parse_point(attempt.parent, runs_dir, "tensorflow").iloc[0]
    assert row["status"] == "failed" and "worker:1" in row["reason"]


def test_the_time_limit_ends_every_task(stack_cluster, tmp_path):
    runs_dir = tmp_path / "runs"
    watch = TaskWatch(attempt_of(runs_dir))
    watch.start()
    start = time.monotonic()
    # far more steps than 12 s allow even on an idle machine: the limit must end it
    spec_data = fig6(time_limit_s=12)
    spec_data["scales"]["local"]["fixed"]["steps"] = 100000
    attempt = runs.launch(spec_data, "local", POINT, runs_dir)
    watch.stop.set()
    assert time.monotonic() - start < 60
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "hung" and "time limit of 12" in record["reason"]
    assert (attempt / "stdout.log").read_text().count("started ") == 4
    assert len(watch.pids) == 4 and watch.left_running() == {}


def test_a_gpu_point_is_refused_in_a_tensorflow_built_without_cuda(stack_cluster):
    """The stacks' TensorFlow on this machine (PyPI's tensorflow-cpu) asked as a GPU point's launch
    asks it: refused, naming the build and version, rather than trained on the CPU and read as a
    GPU's run."""
    env = hadoop.stack_env()
    with pytest.raises(NotRunnable, match=r"^a GPU point in DLOBD_PYTHON: its TensorFlow 2\.\d+\.\d+ \(.*\) "
                                          "is built without CUDA and would train on the CPU"):
        tf_cluster.refuse_cpu_only(env["DLOBD_PYTHON"], "DLOBD_PYTHON", env, dry_run=False)
