"""One prefix folder shared by every host, as on NFS or Lustre: 1 master + 2 emulated workers
(tests/cluster/emulated.py --shared-prefix: no per-host mount) provisioned with site.yml over SSH,
worker2 in group gpu (--gpu-workers 1) as on a cluster where only some nodes have GPUs.

The software is installed once in the prefix; each host's configuration and state go to its own
folder (dlobd_local_dir, by default <prefix>/hosts/<host name>), which <prefix>/etc/dlobd-env.sh
reads on the host it runs on. Checked on real output: the preflight names the hosts sharing the
prefix, a second run changes nothing, every host's rendered configuration names that host, the
smoke tests pass with a DataNode and a NodeManager per worker, `hdfs dfsadmin -report` lists a
DataNode per worker with its storage in that worker's folder, and a point runs across both
workers from the master. YARN gives worker2's NodeManager the GPU node label, and executors placed
as a GPU point's (hadoop.gpu_workers) all land there, CPU executors standing in for GPU ones since
a namespace has no GPU: the ResourceManager's own record of the containers shows it.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dlobd import ROOT
from conftest import emulated_site_in, play_recap

sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated as emulated_harness  # noqa: E402  (the harness lives with the tests)
from test_emulated_provision import TF_EXPERIMENT, TF_POINT, harness, launch_on_master  # noqa: E402

# clear of the other emulated clusters' subnets (conftest, test_emulated_hosts, test_emulated_provision)
SUBNET = "10.78.8.0/24"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root"),
]


@pytest.fixture(scope="module")
def site(provisioned, tmp_path_factory):
    """The hosts (they use this machine's Debian packages, which `provisioned` installs),
    provisioned twice; their daemons stopped and the hosts removed when the module ends."""
    with emulated_site_in(tmp_path_factory.mktemp("emulated-shared-prefix"), SUBNET, shared_prefix=True,
                          gpu_workers=1) as made:
        made.playbook("site.yml", record="rerun")
        yield made


def prefix(site) -> Path:
    return site.state_dir / emulated_harness.STACK_MOUNT


def properties(path: Path) -> dict[str, str]:
    return {p.findtext("name"): p.findtext("value") for p in ET.parse(path).getroot().iter("property")}


def on_host(site, short: str, command: str) -> str:
    done = harness(site.state_dir, "exec", "--host", short, "--", "bash", "-c", command)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_host_provisions_one_prefix_and_the_preflight_says_they_share_it(site):
    rc, out, _ = site.runs["first"]
    assert rc == 0, out[-5000:]
    counts = play_recap(out)
    assert sorted(counts) == sorted(site.hosts)
    assert all(c["failed"] == 0 and c["unreachable"] == 0 and c["changed"] > 0 for c in counts.values()), counts
    flat = " ".join(out.split())
    for name in site.hosts:
        others = ", ".join(sorted(set(site.hosts) - {name}))
        assert (f"{name}: prefix {prefix(site)} is shared with {others} (one file system): its software is "
                f"installed once, the hosts one after another; configuration and state of this host: "
                f"{prefix(site)}/hosts/{name}") in flat
        # no host has a stack folder of its own: one prefix, one software
        assert not (site.state_dir / "hosts" / name / "stack").exists()
    assert (prefix(site) / "python" / "bin" / "python").exists()
    assert sorted(p.name for p in (prefix(site) / "hosts").iterdir()) == sorted(site.hosts)


def test_second_run_changes_nothing_on_any_host(site):
    rc, out, _ = site.runs["rerun"]
    assert rc == 0, out[-5000:]
    assert {name: c["changed"] for name, c in play_recap(out).items()} == {name: 0 for name in site.hosts}, out[-5000:]


def test_every_host_s_configuration_names_that_host_and_its_own_folder(site):
    for name, host in site.hosts.items():
        own, address = prefix(site) / "hosts" / name, host["address"]
        hdfs = properties(own / "etc" / "hadoop" / "hdfs-site.xml")
        assert hdfs["dfs.datanode.hostname"] == address
        assert hdfs["dfs.datanode.data.dir"] == f"file://{own}/var/hdfs/data"
        yarn = properties(own / "etc" / "hadoop" / "yarn-site.xml")
        assert yarn["yarn.nodemanager.hostname"] == address
        assert yarn["yarn.nodemanager.local-dirs"] == f"{own}/var/yarn/local"
        assert properties(own / "etc" / "hadoop" / "core-site.xml")["hadoop.tmp.dir"] == f"{own}/var/tmp/hadoop"
        defaults = (own / "etc" / "spark" / "spark-defaults.conf").read_text()
        assert re.search(rf"^spark\.driver\.host\s+{re.escape(address)}$", defaults, re.M)
        assert f"export SPARK_LOCAL_IP={address}\n" in (own / "etc" / "spark" / "spark-env.sh").read_text()
        assert json.loads((own / "etc" / "fabric.json").read_text())["host"] == name
        # the prefix's one entry point reads, on each host, that host's settings
        seen = on_host(site, name, f"source {prefix(site)}/etc/dlobd-env.sh && "
                                   'echo "$DLOBD_CLUSTER_ADDRESS $DLOBD_LOCAL_DIR $HADOOP_CONF_DIR"')
        assert seen.split() == [address, str(own), f"{own}/etc/hadoop"]


def test_smoke_tests_check_every_worker(site):
    rc, out, _ = site.playbook("smoke-test.yml")
    assert rc == 0, out[-5000:]
    workers = [site.host(f"worker{i}") for i in (1, 2)]
    live = re.search(r"2 live DataNode\(s\): ([^'\n]+)", out)
    assert live and sorted(live.group(1).split(", ")) == sorted(w["address"] for w in workers)
    running = re.search(r"2 RUNNING NodeManager\(s\): ([^'\n]+)", out)
    assert running and sorted(running.group(1).split(", ")) == sorted(w["name"] for w in workers)


def test_hdfs_has_a_datanode_per_worker_each_with_its_own_storage(site):
    rc, out, _ = site.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    report = on_host(site, "master", f"{prefix(site)}/bin/hdfs dfsadmin -report")
    assert "Live datanodes (2):" in report, report
    workers = [site.host(f"worker{i}") for i in (1, 2)]
    for worker in workers:
        assert f"Hostname: {worker['address']}" in report, report
        own = prefix(site) / "hosts" / worker["name"]
        assert (own / "var" / "hdfs" / "data" / "current" / "VERSION").is_file()
        assert sorted(p.name for p in (own / "var" / "run").glob("*.pid")) == ["datanode.pid", "nodemanager.pid"]
    master = prefix(site) / "hosts" / site.host("master")["name"]
    assert sorted(p.name for p in (master / "var" / "run").glob("*.pid")) == ["namenode.pid", "resourcemanager.pid"]


def test_a_point_runs_across_both_workers_from_the_master(site, tmp_path):
    rc, out, _ = site.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    done = harness(site.state_dir, *launch_on_master(site.state_dir, tmp_path / "runs", TF_EXPERIMENT, TF_POINT),
                   timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((Path(done.stdout.strip().splitlines()[-1]) / "run.json").read_text())
    assert record["status"] == "ok", record["reason"]
    assert {h["address"] for h in record["hosts"]} == {site.host(f"worker{i}")["address"] for i in (1, 2)}
    # each worker's fingerprint, read from its own folder
    assert {record["fabric"][h["name"]]["host"] for h in record["hosts"]} == {
        site.host(f"worker{i}")["name"] for i in (1, 2)}


# A Spark application whose two executors are placed as a GPU point's (hadoop.gpu_workers: the
# gpu group's node label) and sized so that two share a NodeManager; it reports, once both have
# registered, their hosts and the ResourceManager's record of its containers, nodes and labels.
LABELLED_APP = """
import json, os, time, urllib.request
from pyspark import SparkConf, SparkContext
sc = SparkContext(conf=SparkConf().setAppName("dlobd-labelled"))
deadline = time.time() + 180
def executors():
    hosts = str(sc._jsc.sc().getExecutorMemoryStatus().keySet().mkString(",")).split(",")
    return sorted(h for h in hosts if h.split(":")[0] != sc.getConf().get("spark.driver.host"))
def rm(path):
    with urllib.request.urlopen(os.environ["DLOBD_RESOURCEMANAGER_HTTP"].rstrip("/") + path, timeout=30) as got:
        return json.load(got)
while len(executors()) < 2 and time.time() < deadline:
    time.sleep(0.5)
app = sc.applicationId
attempt = rm(f"/ws/v1/cluster/apps/{app}/appattempts")["appAttempts"]["appAttempt"][-1]["appAttemptId"]
print("EXECUTORS " + json.dumps(executors()))
print("CONTAINERS " + json.dumps(rm(f"/ws/v1/cluster/apps/{app}/appattempts/{attempt}/containers")))
print("NODES " + json.dumps(rm("/ws/v1/cluster/nodes")))
print("LABELS " + json.dumps(rm("/ws/v1/cluster/get-node-labels")))
sc.stop()
"""
SUBMIT_LABELLED = """
import json, subprocess, sys
from dlobd.cluster import hadoop
workers, placed = hadoop.gpu_workers("the labelled application")
share = hadoop.executor_container_mb(2, 1536)
env = hadoop.stack_env()
conf = {**placed, "spark.executor.memoryOverhead": share - 512, "spark.yarn.am.memory": f"{hadoop.AM_MEMORY_MB}m",
        "spark.dynamicAllocation.enabled": "false", "spark.ui.enabled": "false"}
print("PLACED " + json.dumps({"workers": workers, "conf": placed}))
done = subprocess.run([env["SPARK_HOME"] + "/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
                       "--num-executors", "2", "--executor-cores", "1", "--executor-memory", "512m",
                       *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")], sys.argv[1]],
                      env=env, capture_output=True, text=True, timeout=400)
print("RC", done.returncode)
print(done.stdout)
print(done.stderr[-3000:], file=sys.stderr)
"""


def listed(report, key: str):
    """The entries under `key` of a YARN REST answer, a list whether it holds one or several."""
    found = (report or {}).get(key) or []
    return found if isinstance(found, list) else [found]


def test_executors_placed_as_a_gpu_point_s_land_on_the_gpu_worker_alone(site, tmp_path):
    rc, out, _ = site.playbook("cluster-up.yml")
    assert rc == 0, out[-5000:]
    gpu, cpu = site.host("worker2"), site.host("worker1")
    master_yarn = properties(prefix(site) / "hosts" / site.host("master")["name"] / "etc" / "hadoop" / "yarn-site.xml")
    assert master_yarn["yarn.node-labels.enabled"] == "true"
    app = tmp_path / "labelled.py"
    app.write_text(LABELLED_APP)
    tmp_path.chmod(0o755)
    done = harness(site.state_dir, "exec", "--host", "master", "--", "env", f"DLOBD_PREFIX={prefix(site)}",
                   sys.executable, "-c", SUBMIT_LABELLED, str(app), timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RC 0" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                 if line.split(" ", 1)[0] in {"PLACED", "EXECUTORS", "CONTAINERS", "NODES", "LABELS"})
    # the launchers' placement: the gpu group's worker, by the label the yarn role gave it
    assert json.loads(lines["PLACED"]) == {"workers": [gpu["address"]],
                                           "conf": {"spark.yarn.executor.nodeLabelExpression": "gpu"}}
    # Hadoop 3's label is non-exclusive: idle GPU nodes may run other points' containers
    labels = listed(json.loads(lines["LABELS"]), "nodeLabelInfo")
    assert [(label["name"], str(label["exclusivity"]).lower()) for label in labels] == [("gpu", "false")], labels
    # a NodeManager registers under its host's name for its address, which cluster-up labelled
    nodes = {node["nodeHostName"]: listed(node, "nodeLabels")
             for node in listed(json.loads(lines["NODES"]).get("nodes"), "node")}
    assert nodes == {gpu["name"]: ["gpu"], cpu["name"]: []}, nodes
    # both executors on the GPU worker: Spark's registry and the ResourceManager's containers
    assert [h.rsplit(":", 1)[0] for h in json.loads(lines["EXECUTORS"])] == [gpu["name"]] * 2, lines["EXECUTORS"]
    containers = listed(json.loads(lines["CONTAINERS"]), "container")
    executors = [c for c in containers if not c["containerId"].endswith("_000001")]
    assert len(executors) == 2 and {c["assignedNodeId"].rsplit(":", 1)[0] for c in executors} == {gpu["name"]}, containers
