"""site.yml over SSH on an emulated cluster of 1 master + 2 workers (network namespaces linked
by emulated Ethernet eth-1g: conftest's `emulated_site`), then its smoke tests and points spread
over both workers, launched from the master as on a real cluster.

The hosts install from the controller's package depot (they reach no registry) and use this
machine's Debian packages, which the `provisioned` fixture's local provisioning installs.
Traffic goes only to loopback and the harness's own namespace addresses.
"""

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest

from dlobd import ROOT
from conftest import EMULATED_TIER, play_recap

sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated as emulated_harness  # noqa: E402  (the harness lives with the tests)

HARNESS = ROOT / "tests" / "cluster" / "emulated.py"
ANSIBLE_PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
NETWORK = f"{EMULATED_TIER}-emulated"
LINK = emulated_harness.tier_label(EMULATED_TIER)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root"),
]

# One point of rdmatf-fig6 on the cluster's link: a PS and a chief on one worker, a worker on the other.
TF_EXPERIMENT = "rdmatf-fig6"
TF_POINT = {"network": NETWORK, "nodes": 2}
# One point of tfgrpc-fig9 (p2p latency, skew payloads): its parameter server on one worker, the
# benchmark's worker on the other.
GRPC_EXPERIMENT = "tfgrpc-fig9"
GRPC_POINT = {"network": NETWORK, "payload_scheme": "skew"}
# dlobd-fig5b's cifar10 point: 2 TF nodes (one executor on each worker) fed by Spark tasks that
# read cifar10-synthetic from HDFS (2 replicas) while the nodes train.
TFOS_EXPERIMENT = "dlobd-fig5b"
TFOS_POINT = {"workload": "cifar10", "network": NETWORK, "gpus": 2}
LAUNCH_SPEC_POINT = """
import copy, json, sys
from dlobd import spec
from dlobd.execution import runs
data = copy.deepcopy(spec.load_all()[sys.argv[3]].data)
print(runs.launch(data, "local", json.loads(sys.argv[2]), sys.argv[1], cluster="emulated"))
"""


def launch_on_master(state_dir: Path, runs_dir: Path, experiment: str, point: dict) -> list[str]:
    """The harness arguments that launch one point of `experiment` from the master, as
    `make emulated-experiments` does (it prints the attempt directory)."""
    return ["exec", "--host", "master", "--", "env", f"DLOBD_PREFIX={state_dir / 'stack'}", sys.executable,
            "-c", LAUNCH_SPEC_POINT, str(runs_dir), json.dumps(point), experiment]
# the driver's line when TFoS has reserved its nodes: training starts
TRAINING_STARTED = re.compile(r"finished: foreachPartition at \S*TFCluster.py:321")


def harness(state_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HARNESS), "--state-dir", str(state_dir), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def emulated(emulated_site):
    """The session's emulated site (conftest), provisioned a second time for the idempotence test;
    its daemons are stopped when this module ends, so test_slurm finds the hosts idle."""
    emulated_site.playbook("site.yml", record="rerun")
    yield emulated_site
    emulated_site.playbook("cluster-down.yml")


def test_site_yml_provisions_every_host_over_ssh(emulated):
    rc, out, _ = emulated.runs["first"]
    assert rc == 0, out[-5000:]
    counts = play_recap(out)
    assert sorted(counts) == sorted(emulated.hosts)
    assert all(c["failed"] == 0 and c["unreachable"] == 0 and c["changed"] > 0 for c in counts.values()), counts
    # each host installed into its own folder, seen by that host alone on the common prefix path;
    # its settings in the host's own folder of that prefix, named by the host
    for name, host in emulated.hosts.items():
        env_file = emulated.state_dir / "hosts" / name / "stack" / "hosts" / name / "etc" / "dlobd-env.sh"
        text = env_file.read_text()
        assert f"export DLOBD_CLUSTER_ADDRESS={host['address']}\n" in text
        assert f"export DLOBD_PREFIX={emulated.state_dir / 'stack'}\n" in text
        assert f"export DLOBD_EMULATED_NETWORK={NETWORK}\n" in text
        assert (emulated.state_dir / "hosts" / name / "stack" / "python" / "bin" / "python").exists()
        # the fabric role ran on the host itself: a namespace sees this machine's sysfs, which has
        # no HCA, and no nvidia-smi, so each records both as absent with the reason
        fingerprint = json.loads((env_file.parent / "fabric.json").read_text())
        assert fingerprint["host"] == name, fingerprint
        assert fingerprint["infiniband"]["hcas"] == [] and fingerprint["infiniband"]["none_because"], fingerprint
        assert fingerprint["gpus"]["count"] == 0 and fingerprint["gpus"]["none_because"], fingerprint
        assert f"{name}: {fingerprint['summary']}" in out


def test_second_run_changes_nothing_on_any_host(emulated):
    rc, out, _ = emulated.runs["rerun"]
    assert rc == 0, out[-5000:]
    counts = play_recap(out)
    assert sorted(counts) == sorted(emulated.hosts)
    assert {name: c["changed"] for name, c in counts.items()} == {name: 0 for name in emulated.hosts}, out[-5000:]


def test_smoke_tests_check_every_worker(emulated):
    rc, out, _ = emulated.playbook("smoke-test.yml")
    assert rc == 0, out[-5000:]
    workers = [emulated.host(f"worker{i}") for i in (1, 2)]

    def listed(what: str) -> list[str]:  # the reports list nodes in no fixed order
        found = re.search(rf"2 {what}\(s\): ([^'\n]+)", out)
        assert found, f"no line naming 2 {what}s"
        return sorted(found.group(1).split(", "))

    assert listed("live DataNode") == sorted(w["address"] for w in workers)
    assert listed("RUNNING NodeManager") == sorted(w["name"] for w in workers)


def test_a_point_runs_across_both_workers_from_the_master(emulated, tmp_path):
    rc, out, _ = emulated.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    runs_dir = tmp_path / "runs"
    done = harness(emulated.state_dir, *launch_on_master(emulated.state_dir, runs_dir, TF_EXPERIMENT, TF_POINT),
                   timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    attempt = Path(done.stdout.strip().splitlines()[-1])
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", record["reason"]
    assert record["cluster"] == "emulated" and record["labels"]["emulated"] == "true"
    workers = {emulated.host(f"worker{i}")["address"] for i in (1, 2)}
    assert {h["address"] for h in record["hosts"]} == workers
    assert all(h["link"] == LINK for h in record["hosts"])
    roles = sorted(r.split(":")[0] for h in record["hosts"] for r in h["roles"])
    assert roles == ["chief", "ps", "worker", "worker"]
    # every worker was sampled over ssh from the master, and every task's log came back
    for address in workers:
        rows = (attempt / "monitor" / f"{address}.csv").read_text().splitlines()
        assert len(rows) > 2, address
    logs = sorted(p.name for p in (attempt / "tasks").glob("*.log"))
    assert logs == ["chief-0.log", "ps-0.log", "worker-0.log", "worker-1.log"]
    assert "DLOBD event=summary task=chief:0" in (attempt / "tasks" / "chief-0.log").read_text()


def test_a_grpc_point_runs_its_server_and_its_worker_on_different_workers(emulated, tmp_path):
    runs_dir = tmp_path / "runs"
    done = harness(emulated.state_dir, *launch_on_master(emulated.state_dir, runs_dir, GRPC_EXPERIMENT, GRPC_POINT),
                   timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    attempt = Path(done.stdout.strip().splitlines()[-1])
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", record["reason"]
    first, second = (emulated.host(f"worker{i}")["address"] for i in (1, 2))
    assert [(h["address"], h["roles"], h["link"]) for h in record["hosts"]] == [
        (first, ["ps:0"], LINK),
        (second, ["worker:0"], LINK)]
    # the worker, started over ssh on the second worker, called the server on the first
    listening = (attempt / "servers" / "ps-0.log").read_text().split()
    assert listening[0] == "listening" and listening[1].startswith(f"{first}:")
    output = (attempt / "stdout.log").read_text()
    assert f"ps: {listening[1]}" in output.splitlines() and output.rstrip().endswith("end: ok")
    # the server ended with the run
    server = emulated.host("worker1")["name"]
    assert not [p for p in emulated_harness.namespace_processes(server)
                if "tf_grpc_bench" in " ".join(p.cmdline())]


def daemon_in(host: str, daemon: str) -> psutil.Process | None:
    """The running `daemon` (datanode, nodemanager, ...) of one emulated host."""
    for proc in emulated_harness.namespace_processes(host):
        try:
            if f"-Ddlobd.daemon={daemon}" in proc.cmdline():
                return proc
        except psutil.NoSuchProcess:
            pass
    return None


@pytest.mark.parametrize("daemon", ["datanode", "nodemanager"])
def test_a_daemon_killed_mid_run_gives_a_clear_record_and_a_restartable_cluster(emulated, tmp_path, daemon):
    from dlobd.execution import runs

    rc, out, _ = emulated.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    runs_dir = tmp_path / "runs"
    attempt = runs.point_dir(runs_dir, "emulated", "local", TFOS_EXPERIMENT, TFOS_POINT) / "attempt-001"
    run = subprocess.Popen(
        [sys.executable, str(HARNESS), "--state-dir", str(emulated.state_dir),
         *launch_on_master(emulated.state_dir, runs_dir, TFOS_EXPERIMENT, TFOS_POINT)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (attempt / "stderr.log").is_file() or not TRAINING_STARTED.search((attempt / "stderr.log").read_text()):
        assert run.poll() is None, f"the run ended before it trained: {run.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, "TFoS did not start training within 240 s"
        time.sleep(0.2)
    worker = emulated.host("worker2")
    victim = daemon_in(worker["name"], daemon)
    assert victim is not None, f"no {daemon} running on {worker['name']}"
    victim.kill()
    killed_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    record = json.loads((attempt / "run.json").read_text())
    # completed despite the loss, or failed with its cause; every log kept either way
    assert record["status"] in {"ok", "failed"}, record
    assert record["status"] == "ok" or record["reason"], record
    assert record["job_end"] > killed_at, "the run had ended before the kill"
    assert (attempt / "stderr.log").stat().st_size > 0 and list((attempt / "yarn").glob("application_*.json"))
    # the 2 TF nodes are 2 executors, one on each worker (Spark's event log, in run.json)
    on = {h["address"]: [r for r in h["roles"] if r.startswith("executor:")] for h in record["hosts"]}
    assert sorted(len(on.get(emulated.host(f"worker{i}")["address"], [])) for i in (1, 2)) == [1, 1], on
    (emulated.log_dir / f"fault-{daemon}.json").write_text(json.dumps(
        {"status": record["status"], "reason": record["reason"], "attempt": str(attempt), "killed_at": killed_at},
        indent=1))
    # make cluster-up brings the killed daemon back and waits for every worker
    rc, out, _ = emulated.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    assert daemon_in(worker["name"], daemon) is not None


# Three executors sized by hadoop.executor_container_mb to `per_node` per NodeManager on a cluster
# of two; the application reports the executors registered 20 s after the expected count
# (host:port of each).
PACKED_APP = """
import json, sys, time
from pyspark import SparkConf, SparkContext
sc = SparkContext(conf=SparkConf().setAppName("dlobd-packing"))
expected, deadline = int(sys.argv[1]), time.time() + 120
def executors():
    hosts = str(sc._jsc.sc().getExecutorMemoryStatus().keySet().mkString(",")).split(",")
    return sorted(h for h in hosts if h.split(":")[0] != sc.getConf().get("spark.driver.host"))
while len(executors()) < expected and time.time() < deadline:
    time.sleep(0.5)
time.sleep(20)  # one more container, were it allocated, registers within a few heartbeats
print("EXECUTORS " + json.dumps(executors()))
sc.stop()
"""
SUBMIT_PACKED = """
import subprocess, sys
from dlobd.cluster import hadoop
app, per_node, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3]
share = hadoop.executor_container_mb(per_node, 1536)
env = hadoop.stack_env()
done = subprocess.run([env["SPARK_HOME"] + "/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
                       "--num-executors", "3", "--executor-cores", "1", "--executor-memory", "512m",
                       "--conf", f"spark.executor.memoryOverhead={share - 512}",
                       "--conf", f"spark.yarn.am.memory={hadoop.AM_MEMORY_MB}m",
                       "--conf", "spark.dynamicAllocation.enabled=false",
                       "--conf", "spark.scheduler.minRegisteredResourcesRatio=0",
                       "--conf", "spark.ui.enabled=false", app, expected],
                      env=env, capture_output=True, text=True, timeout=300)
print("SHARE", share, "RC", done.returncode)
print(done.stdout)
print(done.stderr[-3000:], file=sys.stderr)
"""


@pytest.mark.parametrize("per_node, expected", [(1, [1, 1]), (2, [1, 2])])
def test_executors_sized_per_nodemanager_never_exceed_it(emulated, tmp_path, per_node, expected):
    """What pins GPU executors (and CaffeOnSpark's) to nodes on a real YARN, which places by
    memory alone: sized by the ResourceManager's own count of its NodeManagers' memory, three
    executors on two NodeManagers run one on each at one per node (YARN leaves the third
    unplaced), and all three, two on one, at two per node."""
    rc, out, _ = emulated.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    app = tmp_path / "packed.py"
    app.write_text(PACKED_APP)
    tmp_path.chmod(0o755)
    done = harness(emulated.state_dir, "exec", "--host", "master", "--", "env",
                   f"DLOBD_PREFIX={emulated.state_dir / 'stack'}", sys.executable, "-c", SUBMIT_PACKED, str(app),
                   str(per_node), str(sum(expected)), timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    share, rc = re.search(r"SHARE (\d+) RC (-?\d+)", done.stdout).groups()
    assert rc == "0", done.stderr[-3000:]
    listed = re.search(r"^EXECUTORS (.*)$", done.stdout, re.MULTILINE)
    assert listed, done.stdout[-2000:] + done.stderr[-3000:]
    hosts = [h.rsplit(":", 1)[0] for h in json.loads(listed.group(1))]  # the NodeManagers' host names
    workers = {emulated.host(f"worker{i}")["name"] for i in (1, 2)}
    assert set(hosts) == workers and sorted(hosts.count(w) for w in workers) == expected, (hosts, share)
