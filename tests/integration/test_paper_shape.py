"""An emulated site shaped like a real one (tests/cluster/emulated.py --site paper-shape): the
ResourceManager and NameNode on a smaller service host, three workers declaring 48 cores and
64 GB, the last in group gpu with its cluster interface named ib1 beside the others' ib0, a
management network of its own for the Ethernet addresses (10 Gb/s declared, as a veth reports),
one prefix folder for all. Provisioned with site.yml over SSH and started.

What a real cluster would refuse, checked on the real daemons: the ResourceManager's largest
container is the largest worker's NodeManager, not the service host's share (a container of
28 GB runs, one of 50 GB is refused by Spark with the ResourceManager's maximum); each
NodeManager offers the declared size on its cluster address, the gpu worker's under YARN's GPU
label; every host's dlobd-env.sh gives the smallest worker's NodeManager and each worker's
Ethernet rate; the fabric role read 10 Gb/s on the interface holding each Ethernet address.
"""

import json
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dlobd import ROOT
from conftest import emulated_site_in, play_recap

sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated as emulated_harness  # noqa: E402  (the harness lives with the tests)
from test_emulated_provision import harness  # noqa: E402

# clear of the other emulated clusters' subnets (conftest, test_emulated_hosts, test_emulated_shared_prefix)
SUBNET = "10.78.10.0/24"
MANAGEMENT_SUBNET = "10.78.11.0/24"
WORKER, MASTER = emulated_harness.PAPER_SHAPE["worker"], emulated_harness.PAPER_SHAPE["master"]
FRACTION = emulated_harness.PAPER_SHAPE["yarn_memory_fraction"]
WORKER_NM_MB = int(WORKER["memory_gb"] * 1024 * FRACTION)
MASTER_SHARE_MB = int(MASTER["memory_gb"] * 1024 * FRACTION)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root"),
]


@pytest.fixture(scope="module")
def site(provisioned, tmp_path_factory):
    """The paper-shape site (it uses this machine's Debian packages, which `provisioned` installs),
    provisioned and started; its daemons stopped and its hosts removed when the module ends."""
    with emulated_site_in(tmp_path_factory.mktemp("paper-shape"), SUBNET, tier=emulated_harness.UNSHAPED,
                          workers=3, gpu_workers=1, site="paper-shape",
                          management_subnet=MANAGEMENT_SUBNET) as made:
        rc, out, _ = made.runs["first"]
        assert rc == 0, out[-5000:]
        rc, out, _ = made.playbook("cluster-up.yml")
        assert rc == 0, out[-5000:]
        yield made


def own_folder(site, short: str) -> Path:
    return site.state_dir / emulated_harness.STACK_MOUNT / "hosts" / site.host(short)["name"]


def exported(site, short: str) -> dict[str, str]:
    text = (own_folder(site, short) / "etc" / "dlobd-env.sh").read_text()
    return {k: v.strip('"\'') for k, _, v in (line.removeprefix("export ").partition("=")
                                              for line in text.splitlines() if line.startswith("export "))}


def test_every_host_provisions_with_its_declared_size_and_ethernet_rate(site):
    counts = play_recap(site.runs["first"][1])
    assert sorted(counts) == sorted(site.hosts)
    assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in counts.values()), counts
    for short in ("master", "worker1", "worker2", "worker3"):
        host = site.host(short)
        fingerprint = json.loads((own_folder(site, short) / "etc" / "fabric.json").read_text())
        # the management network's veth, at the rate the host declares
        assert fingerprint["ethernet"] == {"address": host["ethernet_address"], "interface": "eth0",
                                           "speed_mbps": 10000}, fingerprint["ethernet"]
        env = exported(site, short)
        # the smallest worker's NodeManager on every host, the service host's own size nowhere
        assert (env["DLOBD_YARN_MEMORY_MB"], env["DLOBD_YARN_VCORES"]) == (str(WORKER_NM_MB), str(WORKER["cores"]))
        assert env["DLOBD_CLUSTER_ADDRESS"] == host["address"]
        assert sorted(env["DLOBD_WORKERS_ETHERNET_GBPS"].split()) == sorted(
            f"{site.host(w)['address']}=10" for w in ("worker1", "worker2", "worker3"))


def test_the_resourcemanager_offers_the_largest_workers_container(site):
    rm_site = {p.findtext("name"): p.findtext("value")
               for p in ET.parse(own_folder(site, "master") / "etc" / "hadoop" / "yarn-site.xml").getroot().iter("property")}
    assert (rm_site["yarn.scheduler.maximum-allocation-mb"], rm_site["yarn.scheduler.maximum-allocation-vcores"]) == (
        str(WORKER_NM_MB), str(WORKER["cores"]))
    assert int(rm_site["yarn.scheduler.maximum-allocation-mb"]) > MASTER_SHARE_MB


# Spark on YARN from the master: the executor container's size, and the ResourceManager's record of
# the containers and of its nodes while the application runs.
SIZED_APP = """
import json, os, urllib.request
from pyspark import SparkConf, SparkContext
sc = SparkContext(conf=SparkConf().setAppName("dlobd-paper-shape"))
print("COUNT", sc.parallelize(range(1000), 2).count())
def rm(path):
    with urllib.request.urlopen(os.environ["DLOBD_RESOURCEMANAGER_HTTP"].rstrip("/") + path, timeout=30) as got:
        return json.load(got)
app = sc.applicationId
attempt = rm(f"/ws/v1/cluster/apps/{app}/appattempts")["appAttempts"]["appAttempt"][-1]["appAttemptId"]
print("CONTAINERS " + json.dumps(rm(f"/ws/v1/cluster/apps/{app}/appattempts/{attempt}/containers")))
print("NODES " + json.dumps(rm("/ws/v1/cluster/nodes")))
sc.stop()
"""


def submit(site, tmp_path, heap: str, overhead_mb: int):
    app = tmp_path / "sized.py"
    app.write_text(SIZED_APP)
    tmp_path.chmod(0o755)
    command = (f". {site.state_dir / emulated_harness.STACK_MOUNT}/etc/dlobd-env.sh && "
               f'"$SPARK_HOME/bin/spark-submit" --master yarn --deploy-mode client --num-executors 1 '
               f"--executor-cores 4 --executor-memory {heap} --conf spark.executor.memoryOverhead={overhead_mb} "
               f"--conf spark.dynamicAllocation.enabled=false --conf spark.ui.enabled=false {app}")
    return harness(site.state_dir, "exec", "--host", "master", "--", "bash", "-c", command, timeout=500)


def listed(report, key: str) -> list:
    found = (report or {}).get(key) or []
    return found if isinstance(found, list) else [found]


def test_a_container_above_the_service_hosts_share_runs_on_a_worker(site, tmp_path):
    """20 GB of heap and 8 GB of overhead: more than the service host's 24 GB share, which a
    ResourceManager sized from its own host refused; within the workers' 48 GB NodeManagers."""
    done = submit(site, tmp_path, "20g", 8192)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                 if line.split(" ", 1)[0] in {"COUNT", "CONTAINERS", "NODES"})
    assert lines["COUNT"] == "1000"
    containers = listed(json.loads(lines["CONTAINERS"]), "container")
    sizes = sorted(int(c["allocatedMB"]) for c in containers)
    assert sizes and sizes[-1] >= 28 * 1024 > MASTER_SHARE_MB, containers
    nodes = listed(json.loads(lines["NODES"]).get("nodes"), "node")
    # a NodeManager registers under its host's name for its cluster address
    workers = {key: w for w in ("worker1", "worker2", "worker3") for key in (site.host(w)["address"], site.host(w)["name"])}
    offered = {}
    for node in nodes:
        resource = node.get("totalResource") or {}
        offered[workers.get(node["nodeHostName"], node["nodeHostName"])] = (
            int(resource.get("memory", node["usedMemoryMB"] + node["availMemoryMB"])),
            int(resource.get("vCores", node["usedVirtualCores"] + node["availableVirtualCores"])),
            listed(node, "nodeLabels"))
    # one NodeManager per worker on its cluster address (ib0, ib1 on the gpu worker), the declared size
    assert offered == {"worker1": (WORKER_NM_MB, WORKER["cores"], []), "worker2": (WORKER_NM_MB, WORKER["cores"], []),
                       "worker3": (WORKER_NM_MB, WORKER["cores"], ["gpu"])}, offered


def test_a_container_above_every_nodemanager_is_refused_with_the_resourcemanager_s_maximum(site, tmp_path):
    done = submit(site, tmp_path, "50g", 1024)
    assert done.returncode != 0
    assert f"is above the max threshold ({WORKER_NM_MB} MB) of this cluster" in done.stdout + done.stderr, (
        done.stderr[-3000:])
