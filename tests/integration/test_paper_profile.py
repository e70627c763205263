"""The paper profile's TensorFlowOnSpark and BigDL set for real, from registries alone: the image of
containers/paper-tfos-bigdl.def built (or reused from the cache when its inputs are unchanged), its
%test and labels; then this machine provisioned with the apptainer method from it
(playbooks/install.yml, dlobd_profile: paper), HDFS and YARN 2.7.3 started from the image
(cluster-up.yml) and the smoke tests run on them (smoke-test.yml: HDFS put/get, every DataNode and
NodeManager live, Spark 2.1's word count on YARN, BigDL's classes from its jar with Java 8). The
same image serves a paper inventory of the spack or registry method that names no
DLOBD_TFOS_PYTHON: the preflight says it reuses it, role python_env places it and writes the
wrapper of its Python, which imports TensorFlow 1.4.0 and TensorFlowOnSpark 1.0.8.

On that cluster the paper software then trains for real through the experiments' own launchers
(runs.launch): TensorFlowOnSpark 1.0.8's train_tf1.py on MNIST (dlobd-fig9's local point: two TF
workers and a parameter server, one executor each) to a test accuracy of 0.9 with fig9's phases
parsed, and BigDL 0.3.0's LeNet-5 on MNIST (dlobd-fig6c's local point, more images) past 0.9.
An executor Spark kills (as train_tf1.py kills those Spark 2.1 starts beyond the ones asked) is
stopped by the NodeManager (role hadoop's `kill` for Hadoop 2).

`make test-paper-profile` runs it; it is no part of `make test` (a cold image build takes tens of
minutes here). Apptainer comes from $APPTAINER, PATH or $DLOBD_APPTAINER_TARBALL. DLOBD_TEST_IMAGES:
the image cache (default $DLOBD_PREFIX/images).
"""

import copy
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from conftest import port_free, stack_environment
from dlobd import ROOT, playbook_settings, spec, stacks
from dlobd.cluster import provenance
from dlobd.execution import apptainer, runs

pytestmark = pytest.mark.integration

IMAGES = Path(os.environ.get("DLOBD_TEST_IMAGES") or apptainer.default_images_dir())
DEFINITION = apptainer.CONTAINERS_DIR / "paper-tfos-bigdl.def"
SETTINGS = playbook_settings()
PAPER = SETTINGS["dlobd_profile_versions"]["paper-tfos-bigdl"]
REGISTRY = SETTINGS["dlobd_registry_paper_sets"]["paper-tfos-bigdl"]
# Shifted by more than the other integration tests' offsets (100-700): this test's daemons never
# meet theirs on loopback.
PORT_OFFSET = 900
INVENTORY = ROOT / "playbooks/inventories/local/hosts.yml"
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")


def run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def paper_image() -> Path:
    found = run([sys.executable, "-m", "dlobd.cli", "image", "--images", IMAGES, "build", DEFINITION], cwd=ROOT)
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-3000:]
    path = Path(re.search(r"^(?:built|reused): (\S+\.sif)", found.stdout, re.M).group(1))
    assert path.exists()
    return path


class Stack:
    """A prefix provisioned from the image with the apptainer method, and the playbooks run on it."""

    def __init__(self, prefix: Path, log_dir: Path, image: Path):
        self.prefix, self.log_dir = prefix, log_dir
        self.ports = {name: port + PORT_OFFSET for name, port in SETTINGS["dlobd_ports"].items()}
        busy = [port for port in self.ports.values() if not port_free(port)]
        assert not busy, f"ports {busy} are in use: this test's cluster needs them"
        # the settings the image was built with (what it holds), run with the apptainer method
        image_settings = yaml.safe_load(DEFINITION.with_name(f"{DEFINITION.stem}.vars.yml").read_text())
        self.extra = {**image_settings, "dlobd_install_method": "apptainer", "dlobd_prefix": str(prefix),
                      "dlobd_ports": self.ports, "apptainer_image": str(image),
                      "apptainer_binary": str(apptainer.find_apptainer())}

    def playbook(self, name: str, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
        done = run([ANSIBLE_PLAYBOOK, "-i", INVENTORY, ROOT / "playbooks" / name, *args,
                    "-e", json.dumps(self.extra)], cwd=ROOT, env=env, timeout=3600)
        n = len(list(self.log_dir.glob("*.log")))
        (self.log_dir / f"{n:02d}-{name.removesuffix('.yml')}.log").write_text(done.stdout + done.stderr)
        return done

    def daemons(self) -> list[psutil.Process]:
        return [proc for proc in psutil.process_iter(["cmdline"])
                if any(a.startswith("-Ddlobd.daemon=") for a in proc.info["cmdline"] or [])
                and any(str(self.prefix) in a for a in proc.info["cmdline"] or [])]


@pytest.fixture(scope="module")
def stack(paper_image, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper-profile")
    (tmp / "logs").mkdir()
    stack = Stack(tmp / "prefix", tmp / "logs", paper_image)
    # the image has no MPI (it runs from the modern image); these tests use no gRPC benchmark
    done = stack.playbook("install.yml", "--skip-tags", "mpi,grpc_bench")
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    try:
        yield stack
    finally:
        stack.playbook("cluster-down.yml")
        for proc in stack.daemons():
            proc.kill()


@pytest.fixture(scope="module")
def cluster(stack):
    started = time.monotonic()
    done = stack.playbook("cluster-up.yml")
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    print(f"paper_cluster_up_s: {time.monotonic() - started:.1f}")
    return stack


def test_the_image_test_section_passes(paper_image):
    argv = apptainer.run_prefix(paper_image)
    done = run([argv[0], "test", *argv[2:]])
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("ok: Java 8, Hadoop 2.7.3, Spark 2.1.2 (paper: 2.1.0), TensorFlow 1.4.0 and TensorFlowOnSpark 1.0.8 "
            "in Python 2.7, BigDL 0.3.0 (paper: a1f3a88)") in done.stdout


def test_the_labels_name_every_version_and_each_substitution(paper_image):
    argv = apptainer.run_prefix(paper_image)
    labels = json.loads(run([argv[0], "inspect", "--json", "--labels", paper_image]).stdout)["data"]["attributes"]["labels"]
    assert labels["org.dlobd.profile"] == "paper"
    assert labels["org.dlobd.inputs-sha256"] == apptainer.content_hash(DEFINITION)
    assert labels["org.dlobd.version.spark"] == f"{REGISTRY['substitutes']['spark']} (paper: {PAPER['spark']})"
    assert labels["org.dlobd.version.bigdl"] == f"{REGISTRY['substitutes']['bigdl']} (paper: {PAPER['bigdl']})"
    for name in ("hadoop", "tensorflow", "tensorflowonspark", "java"):
        assert labels[f"org.dlobd.version.{name}"] == str(PAPER[name]), name
    for package, version in REGISTRY["debian"].items():
        assert labels[f"org.dlobd.version.deb.{package}"] == version, package
    # and the image holds those Debian versions
    done = run([*argv, "dpkg-query", "-W", "-f", "${Package}\t${Version}\n", *REGISTRY["debian"]])
    assert done.returncode == 0, done.stderr
    assert dict(line.split("\t") for line in done.stdout.splitlines()) == REGISTRY["debian"]


def test_a_second_build_reuses_the_cached_image(paper_image):
    started = time.monotonic()
    again = run([sys.executable, "-m", "dlobd.cli", "image", "--images", IMAGES, "build", DEFINITION], cwd=ROOT)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"reused: {paper_image} ")
    assert time.monotonic() - started < 60


def test_the_spack_and_registry_methods_run_tensorflowonspark_in_the_paper_image_s_python(paper_image, tmp_path):
    """A paper inventory of the spack (or registry) method that names no DLOBD_TFOS_PYTHON: the
    preflight says which image it made ready and why (here the build above, reused); role
    python_env's tasks place that image on this host, write the wrapper of its Python 2.7 and
    check it; the wrapper then imports TensorFlow 1.4.0 and TensorFlowOnSpark 1.0.8."""
    prefix = tmp_path / "prefix"
    settings = {"dlobd_profile": "paper", "dlobd_install_method": "spack", "dlobd_prefix": str(prefix),
                "python_env_tfos_images_dir": str(IMAGES),
                # Apptainer as the hosts find it: $APPTAINER, PATH or the relocatable tarball
                "apptainer_binary": os.environ.get(apptainer.BINARY_VAR, ""),
                "apptainer_tarball": os.environ.get(apptainer.TARBALL_VAR, "")}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    # the preflight's step alone (tag python, as role python_env), as site.yml runs it
    done = run([ANSIBLE_PLAYBOOK, "-i", INVENTORY, ROOT / "playbooks/preflight.yml", "--tags", "python",
                "-e", json.dumps({**settings, "preflight_installs": True})], cwd=ROOT, env=env, timeout=900)
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert (f"TensorFlowOnSpark {PAPER['tensorflowonspark']} and TensorFlow {PAPER['tensorflow']} run in "
            f"/usr/bin/python2.7 of the paper image {paper_image}, as no DLOBD_TFOS_PYTHON is given "
            "(dlobd_stack_settings): reused, the build of containers/paper-tfos-bigdl.def whose inputs are "
            "unchanged") in said, said[-3000:]
    # then the role's tasks on this host, the image named by path
    play = tmp_path / "python_env.yml"
    play.write_text(yaml.safe_dump([{
        "name": "Place the paper image and the wrapper of its Python", "hosts": "all", "gather_facts": True,
        "roles": ["dlobd"],
        "tasks": [{"name": "Run role python_env's tasks of the paper image",
                   "ansible.builtin.include_role": {"name": "python_env", "tasks_from": "install-tfos-image.yml"}}]}]))
    done = run([ANSIBLE_PLAYBOOK, "-i", INVENTORY, play, "-e", json.dumps({
        **settings, "python_env_tfos_image": str(paper_image),
        # the helper of the checkout (a playbook outside playbooks/ has no checkout beside it)
        "apptainer_helper": str(ROOT / "dlobd/execution/apptainer.py")})],
        cwd=ROOT, env={**env, "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks/roles")}, timeout=900)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert (prefix / "images" / paper_image.name).is_file()
    wrapper = prefix / "libexec/apptainer/tfos-python/bin/python2.7"
    done = run([wrapper, "-c", "import sys, pkg_resources, tensorflow, tensorflowonspark.TFNode; "
                "sys.stdout.write('%d.%d %s %s' % (sys.version_info[:2] + (tensorflow.__version__, "
                "pkg_resources.get_distribution('tensorflowonspark').version)))"],
               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"2.7 {PAPER['tensorflow']} {PAPER['tensorflowonspark']}"


def test_the_stack_environment_names_the_paper_versions_and_their_substitutes(stack):
    env = (stack.prefix / "hosts" / socket.gethostname() / "etc/dlobd-env.sh").read_text()
    assert "export HADOOP_VERSION=2.7.3\n" in env
    assert f"export SPARK_VERSION={REGISTRY['substitutes']['spark']}\n" in env
    assert "export PYSPARK_PYTHON=/usr/bin/python2.7\n" in env
    # the image's Python 2.7 through a wrapper under the prefix, which the launchers find on the host
    wrapper = stack.prefix / "libexec/apptainer/tfos-python/bin/python2.7"
    assert f"export DLOBD_TFOS_PYTHON={wrapper}\n" in env
    done = run([wrapper, "-c", "import sys, tensorflow, tensorflowonspark; "
                "sys.stdout.write('%d.%d %s' % (sys.version_info[:2] + (tensorflow.__version__,)))"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"2.7 {PAPER['tensorflow']}"
    # and BigDL's jar out of the image, where the launcher checks it and Spark reads it
    assert f"export DLOBD_BIGDL_JAR={stack.prefix}/jars/bigdl/" in env
    done = run([stack.prefix / "bin/hdfs", "version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Hadoop 2.7.3\n")
    done = run([stack.prefix / "bin/dlobd-env", "spark-submit", "--version"])
    assert "version 2.1.2" in done.stdout + done.stderr, done.stderr[-2000:]


def test_the_paper_image_under_a_modern_inventory_is_refused(stack, tmp_path):
    """An image holds one profile's software: the apptainer role reads its labels and stops."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    wrong = {**stack.extra, "dlobd_profile": "modern", "dlobd_prefix": str(tmp_path / "prefix")}
    done = run([ANSIBLE_PLAYBOOK, "-i", INVENTORY, ROOT / "playbooks/install.yml", "--tags", "apptainer",
                "-e", json.dumps(wrong)], cwd=ROOT, env=env, timeout=600)
    assert done.returncode != 0
    assert (f"the image {stack.extra['apptainer_image']} holds the paper profile's software (Hadoop 2.7.3), but "
            "the inventory asks for dlobd_profile modern (Hadoop 3.4.1): give the image built from "
            "containers/modern.def") in " ".join(done.stdout.split()), done.stdout[-3000:]


def test_the_paper_smoke_tests_pass_on_hdfs_and_yarn_started_from_the_image(cluster):
    done = cluster.playbook("smoke-test.yml")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    for task in ("HDFS | compare the bytes", "YARN | check every worker's NodeManager is running",
                 "Spark | check the job ran on YARN and its counts are right",
                 "BigDL | compile the class check and load BigDL classes from its jar (Java 8)"):
        assert re.search(rf"TASK \[smoke_test : {re.escape(task)}\] \*+\n(ok|changed): ", done.stdout), task


@pytest.fixture
def paper_env(cluster, monkeypatch):
    """The cluster, with runs.launch reading the stack environment of its prefix."""
    with stack_environment(cluster.prefix, monkeypatch):
        yield cluster


def launched(data: dict, point: dict, runs_dir: Path) -> Path:
    attempt = runs.launch(data, "local", point, runs_dir)
    record = json.loads((attempt / "run.json").read_text())
    stderr = attempt / "stderr.log"
    assert record["status"] == "ok", (record["reason"], stderr.read_text()[-4000:] if stderr.exists() else "")
    return attempt


TFOS_PHASES = {"yarn_scheduling", "data_loading", "tfos_startup", "training", "spark_jobs", "tfos_shutdown"}


def test_tfos_1_0_8_trains_mnist_on_yarn_to_0_9_and_fig9_phases_parse(paper_env, tmp_path):
    data = copy.deepcopy(spec.load_all()["dlobd-fig9"].data)
    # one epoch gave 0.887 (softmax regression, SGD at 0.01): three, each scored on the test set
    data["scales"]["local"]["fixed"].update(evaluate=True, epochs=3)
    attempt = launched(data, {"framework": "tensorflowonspark", "network": "loopback"}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["versions"]["tensorflowonspark"] == PAPER["tensorflowonspark"]
    assert record["versions"]["tensorflow"] == PAPER["tensorflow"]
    assert "train_tf1.py" in " ".join(record["command"]) and "tfos-python/bin/python2.7" in " ".join(record["command"])
    # the image's Java 8 and Python, not the host's
    assert record["versions"]["java"].startswith('openjdk version "1.8.0_'), record["versions"]
    assert record["versions"]["hadoop"] == "2.7.3" and record["versions"]["mpi"] is None
    assert record["labels"]["parameter_servers"].startswith("1")

    parsed = stacks.parse_run("tensorflowonspark", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    accuracy = [r["value"] for r in parsed.rows if r["metric"] == "top1_accuracy" and r["value"] is not None]
    assert accuracy and accuracy[-1] >= 0.9, accuracy
    # two TF workers (the chief among them), each its own executor beside the parameter server's
    assert {r["task"] for r in parsed.rows if r["metric"] == "images_per_s"} == {"chief:0", "worker:0"}
    phases = {r["phase"]: r["value"] for r in parsed.rows if r["metric"] == "time_breakdown_s"}
    assert set(phases) == TFOS_PHASES and all(v >= 0 for v in phases.values()), phases
    assert phases["yarn_scheduling"] > 0 and phases["training"] > 0
    total = [r["value"] for r in parsed.rows if r["metric"] == "end_to_end_s"]
    assert len(total) == 1 and abs(sum(phases.values()) - total[0]) < 0.01
    app = json.loads(next((attempt / "yarn").glob("application_*.json")).read_text())
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED"
    # Spark 2.1's event log names its version
    assert '"Spark Version":"2.1.2"' in next((attempt / "spark-events").iterdir()).read_text()


def test_bigdl_0_3_lenet_on_real_mnist_on_yarn_rises_past_0_9(paper_env, tmp_path):
    data = copy.deepcopy(spec.load_all()["dlobd-fig6c"].data)
    # three epochs gave 0.786, 0.854, 0.894
    data["scales"]["local"]["fixed"].update(epochs=6, train_images=12800)
    attempt = launched(data, {"network": "loopback"}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert "com.intel.analytics.bigdl.models.lenet.Train" in record["command"]  # 0.x: no dllib
    assert record["labels"]["data"] == "mnist"
    parsed = stacks.parse_run("bigdl", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    accuracy = [r["value"] for r in parsed.rows if r["metric"] == "top1_accuracy"]
    assert len(accuracy) == 6 and accuracy[-1] > 0.9 and accuracy[-1] > accuracy[0], accuracy
    assert [r["epoch"] for r in parsed.rows if r["metric"] == "epoch_time_s"] == [1, 2, 3, 4, 5, 6]


def test_native_tensorflow_1_4_trains_over_grpc_in_tfos_python(paper_env, tmp_path):
    """rdmatf-fig1's two-worker gRPC point: without a site TF 1.x build, train_tf1.py runs in the
    image's Python 2.7 with TensorFlow 1.4.0 (a parameter server, two workers, the chief)."""
    data = spec.load_all()["rdmatf-fig1"].data
    attempt = launched(data, {"network": "loopback", "workers": 2}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["labels"]["tf_build"].startswith("DLOBD_TFOS_PYTHON"), record["labels"]
    assert record["versions"]["tensorflow"] == PAPER["tensorflow"]
    plan = json.loads((attempt / "tasks.json").read_text())["tasks"]
    assert sorted(t["job"] for t in plan) == ["chief", "ps", "worker", "worker"]
    assert all(t["argv"][0].endswith("tfos-python/bin/python2.7") and t["argv"][1].endswith("train_tf1.py")
               for t in plan)
    assert f"tensorflow={PAPER['tensorflow']}" in (attempt / "tasks" / "chief-0.log").read_text()
    parsed = stacks.parse_run("tensorflow", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    assert [r["value"] for r in parsed.rows if r["metric"] == "steps_per_s"], parsed.rows[:5]


def test_the_pyspark_pagerank_runs_in_python_2_7_on_spark_2_1_over_yarn(paper_env, tmp_path):
    data = spec.load_all()["slides-pagerank-32nodes"].data
    attempt = launched(data, {"datasize": "huge", "network": "loopback"}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["labels"]["pyspark_python"].startswith("DLOBD_TFOS_PYTHON"), record["labels"]
    assert "tfos-python/bin/python2.7" in " ".join(record["command"])
    parsed = stacks.parse_run("hibench_spark", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    app = json.loads(next((attempt / "yarn").glob("application_*.json")).read_text())
    assert app["state"] == "FINISHED" and app["finalStatus"] == "SUCCEEDED"


# Spark 2.1 may start executors beyond those asked (SPARK-21383); train_tf1.py kills the surplus
# before TFoS starts its nodes. Here two are asked for and one is killed as surplus.
SURPLUS_DROPPED = """
from __future__ import print_function
import logging, sys
sys.path.insert(0, sys.argv[1])
import train_tf1
from pyspark import SparkConf, SparkContext
logging.basicConfig(level=logging.INFO)
sc = SparkContext(conf=SparkConf().setAppName("dlobd-surplus-dropped"))
print("app", sc.applicationId)
sc.parallelize(range(4), 4).cache().count()
train_tf1.drop_surplus_executors(sc, 1, logging.getLogger("dlobd"), timeout_s=60)
print("left", ",".join(sorted(train_tf1.registered_executors(sc))))
print("count", sc.parallelize(range(8), 4).count())
sc.stop()
"""


def test_an_executor_spark_kills_is_stopped_by_the_nodemanager(paper_env, tmp_path):
    """Hadoop 2.7.3's NodeManager signals containers through `kill` on its PATH (role hadoop's
    bin/kill): the surplus executor's container gets SIGTERM and leaves the driver."""
    script = tmp_path / "surplus_dropped.py"
    script.write_text(SURPLUS_DROPPED)
    env = {**os.environ, **provenance.provisioned_env()}
    python = env["DLOBD_TFOS_PYTHON"]
    done = run([Path(env["SPARK_HOME"]) / "bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
                "--num-executors", "2", "--executor-cores", "1", "--executor-memory", "512m",
                "--conf", "spark.dynamicAllocation.enabled=false",
                "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
                "--conf", f"spark.pyspark.python={python}", "--conf", f"spark.pyspark.driver.python={python}",
                script, ROOT / "workloads/tensorflowonspark"], env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert re.search(r"^left 1$", done.stdout, re.M) and re.search(r"^count 8$", done.stdout, re.M), done.stdout
    app = re.search(r"^app (\S+)$", done.stdout, re.M).group(1)
    logs = list(paper_env.prefix.glob(f"hosts/*/var/yarn/logs/{app}/container_*/stderr"))
    signalled = [log.parent.name for log in logs if "RECEIVED SIGNAL TERM" in log.read_text()]
    # `left 1`: the driver saw executor 2 go; its container's log says the NodeManager's signal ended it
    assert len(logs) == 3 and signalled, (logs, signalled)
