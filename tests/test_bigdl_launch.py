"""The BigDL launcher without a cluster: the spark-submit command of every local point of the
BigDL specs, the checks BigDL needs of a point, the network axis (RDMA-Spark not runnable
without an HCA and RDMA_SPARK_HOME), and the CIFAR-10 subset the driver trains on, made from
a data set written by the project's own generator."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from dlobd import spec
from dlobd.stacks import bigdl
from datafiles import write_idx
from dlobd.cluster import capabilities, hadoop
from dlobd.stacks import runner
from dlobd import NotRunnable

ROOT = Path(__file__).resolve().parent.parent
SPECS = ("dlobd-fig6c", "dlobd-fig7a", "dlobd-fig7b")
ENV = {"SPARK_HOME": "/opt/spark", "DLOBD_BIGDL_JAR": None, "DLOBD_BIGDL_CORE_JAR": None}


@pytest.fixture(autouse=True)
def no_provisioned_prefix(monkeypatch):
    """The commands are built for the cluster each test gives (on_workers, paper_context), never
    for the prefix this machine may have provisioned, whose dlobd-env.sh sizes its NodeManager."""
    monkeypatch.setattr(bigdl.provenance, "prefix_env", lambda: {})
    monkeypatch.delenv("DLOBD_YARN_MEMORY_MB", raising=False)


@pytest.fixture
def jars(tmp_path):
    """Two files standing in the jars' places: the command names them, nothing runs them."""
    env = dict(ENV)
    for var, name in (("DLOBD_BIGDL_JAR", "dllib.jar"), ("DLOBD_BIGDL_CORE_JAR", "core.jar")):
        (tmp_path / name).write_bytes(b"")
        env[var] = str(tmp_path / name)
    return env


def context(tmp_path, spec_id, point, scale="local", **fixed) -> runner.RunContext:
    data = spec.load_all(ROOT)[spec_id].data
    attempt = tmp_path / "attempt-001"
    attempt.mkdir(exist_ok=True)
    return runner.RunContext(spec=data, scale=scale, cluster="local", point=dict(point),
                           attempt_dir=attempt, runs_dir=tmp_path,
                           fixed={**data["scales"][scale].get("fixed", {}), **fixed})


def command_of(ctx, spark_submit, data, env) -> list[str]:
    return bigdl.command(ctx, spark_submit, data, env, bigdl.plan_resources(ctx))


def option(argv, name):
    return argv[argv.index(name) + 1]


def local_points(rdma: bool):
    specs = spec.load_all(ROOT)
    return [(sid, point) for sid in SPECS for _, point in specs[sid].points("local")
            if (point["network"] == "rdma") == rdma]


@pytest.mark.parametrize("spec_id, point", local_points(rdma=False))
def test_command_of_every_local_point(tmp_path, jars, spec_id, point):
    ctx = context(tmp_path, spec_id, point)
    argv = command_of(ctx, "/opt/spark/bin/spark-submit", tmp_path / "data", jars)
    cores = point.get("cores", ctx.fixed.get("cores"))
    assert argv[:5] == ["/opt/spark/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client"]
    assert option(argv, "--num-executors") == "1"
    assert option(argv, "--executor-cores") == str(cores)
    assert option(argv, "--executor-memory") == ctx.fixed.get("executor_memory", bigdl.EXECUTOR_MEMORY)
    assert option(argv, "--driver-memory") == bigdl.DRIVER_MEMORY
    model = ctx.fixed.get("model", ctx.spec["model"])
    assert option(argv, "--class") == f"com.intel.analytics.bigdl.dllib.{bigdl.MODELS[model].main}"
    assert option(argv, "--jars") == jars["DLOBD_BIGDL_CORE_JAR"]
    # the application jar comes right after the main class, the main's options after it
    assert argv[argv.index("--class") + 2] == jars["DLOBD_BIGDL_JAR"]
    assert option(argv, "-f") == str(tmp_path / "data")
    assert option(argv, "-b") == str(ctx.fixed["batch"])
    assert option(argv, "-e") == str(ctx.fixed["epochs"])
    assert int(option(argv, "-b")) % int(cores) == 0
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert any(c.startswith("spark.yarn.tags=dlobd-") for c in confs)
    assert f"spark.eventLog.dir={(ctx.attempt_dir / 'spark-events').resolve().as_uri()}" in confs


def test_cores_split_over_executors_and_memory_from_fixed(tmp_path, jars):
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 4}, executors=2,
                  batch=32, executor_memory="3g", driver_memory="2g", learning_rate=0.05)
    argv = command_of(ctx, "spark-submit", tmp_path, jars)
    assert (option(argv, "--num-executors"), option(argv, "--executor-cores")) == ("2", "2")
    assert (option(argv, "--executor-memory"), option(argv, "--driver-memory")) == ("3g", "2g")
    assert option(argv, "-l") == "0.05"


def confs(argv) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")


def on_workers(monkeypatch, workers: int, yarn_memory_mb: str):
    """A cluster of `workers` NodeManagers offering `yarn_memory_mb` each, as a dry run counts it."""
    settings = {"DLOBD_YARN_MEMORY_MB": yarn_memory_mb}
    monkeypatch.setattr(bigdl.provenance, "workers", lambda: [f"10.0.0.{i}" for i in range(1, workers + 1)])
    monkeypatch.setattr(bigdl.provenance, "stack_setting", lambda name: settings.get(name))


@pytest.mark.parametrize("workers, executors, overhead", [(1, 2, None), (2, 2, str(8192 - 3072)),
                                                          (2, 4, str(4096 - 3072)), (4, 2, str(8192 - 3072))])
def test_executors_spread_evenly_over_several_workers(tmp_path, jars, monkeypatch, workers, executors, overhead):
    # YARN would otherwise place them by heartbeats: a worker may get two executors, another none
    on_workers(monkeypatch, workers, "9216")
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 4}, executors=executors,
                  batch=32, executor_memory="3g")
    conf = confs(command_of(dataclasses.replace(ctx, dry_run=True), "spark-submit", tmp_path, jars))
    # in YARN's steps of 1 GiB the AM takes 1 of 9: one executor per node gets the other 8, two
    # per node 4 each, and one more would not fit beside them; the 3g heap is the rest's floor
    assert conf.get("spark.yarn.executor.memoryOverhead") == overhead
    assert conf.get("spark.yarn.am.memory") == (None if overhead is None else "512m")


def test_executors_too_large_to_share_a_nodemanager_are_not_runnable(tmp_path, jars, monkeypatch):
    on_workers(monkeypatch, 2, "7168")
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 4}, executors=4, batch=32)
    with pytest.raises(NotRunnable, match=r"^executors of 3g heap: 2 executor\(s\) per NodeManager in containers of 4096 MiB \(Spark's default "
                                          r"overhead, in YARN's 1024-MiB steps\): YARN offers 7168 MiB on its smallest "
                                          r"NodeManager, which holds 1 beside the ApplicationMaster's 1024 MiB$"):
        command_of(dataclasses.replace(ctx, dry_run=True), "spark-submit", tmp_path, jars)


def test_a_dry_run_without_the_nodemanagers_memory_says_how_the_launch_sizes_them(tmp_path, jars, monkeypatch):
    on_workers(monkeypatch, 2, "'$DLOBD_YARN_MEMORY_MB'")
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 4}, executors=2, batch=32)
    conf = confs(command_of(dataclasses.replace(ctx, dry_run=True), "spark-submit", tmp_path, jars))
    # VGG's heap for 2 cores and 16 images each batch: 1.5 x 2159 MiB live, in whole GiB
    assert conf["spark.yarn.executor.memoryOverhead"] == (
        "<at launch: (NodeManager memory - the ApplicationMaster's) / 1, in YARN's steps, less the heap's 4096 MiB>")


@pytest.mark.parametrize("cores, executors, batch, heap", [
    (96, 4, 768, "25g"),    # Fig. 7(b) at 96 cores: 192 images an executor, 16393 MiB live
    (384, 16, 768, "10g"),  # at 384 cores: 48 images, 6601 MiB live
    (2, 1, 8, "3g"),        # the local points: 1615 MiB live, the least heap
])
def test_vgg_executor_heap_grows_with_its_replicas_and_batch_share(tmp_path, cores, executors, batch, heap):
    # BigDL keeps a model replica per core, each with its layers' activations of its share of a batch
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": cores}, batch=batch)
    r = (cores // executors, batch // executors)
    sized, why = bigdl.executor_heap(ctx, bigdl.MODELS["vgg16"], *r)
    assert sized == heap
    assert (why is None) == (heap == bigdl.EXECUTOR_MEMORY)
    if why:
        assert why.startswith("1.5 x the ") and why.endswith(
            f"MiB live heap measured for {cores // executors} model replicas and {batch // executors} images of each batch")
    # a stated heap wins; a model without a measured live heap gets the least
    stated = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": cores}, batch=batch, executor_memory="5g")
    assert bigdl.executor_heap(stated, bigdl.MODELS["vgg16"], *r) == ("5g", None)
    assert bigdl.executor_heap(ctx, bigdl.MODELS["lenet5"], *r) == (bigdl.EXECUTOR_MEMORY, None)


def test_a_heap_no_nodemanager_can_hold_beside_another_is_not_runnable(tmp_path, jars, monkeypatch):
    # 64 GB workers (NodeManagers of 48 GiB): two 25g executors of 24 cores do not fit one
    on_workers(monkeypatch, 2, "49152")
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 96}, executors=4, batch=768)
    with pytest.raises(NotRunnable, match=r"^executors of 25g heap \(1.5 x the 16393 MiB live heap measured for 24 "
                                          r"model replicas and 192 images of each batch\): 2 executor\(s\) per "
                                          r"NodeManager in containers of 28672 MiB \(Spark's default overhead, in "
                                          r"YARN's 1024-MiB steps\): YARN offers 49152 MiB on its smallest NodeManager, "
                                          r"which holds 1 beside the ApplicationMaster's 1024 MiB$"):
        command_of(dataclasses.replace(ctx, dry_run=True), "spark-submit", tmp_path, jars)


@pytest.mark.parametrize("fixed, message", [
    ({"batch": 33}, "batch 33 is not a multiple of the 2 executor cores"),
    ({"executors": 3}, "2 cores do not split evenly over 3 executors"),
    ({"epochs": 0}, "'epochs' must be a positive whole number, got 0"),
    ({"batch": "many"}, "'batch' must be a positive whole number, got 'many'"),
])
def test_bad_points_are_refused_with_the_reason(tmp_path, jars, fixed, message):
    ctx = context(tmp_path, "dlobd-fig7a", {"network": "loopback"}, **fixed)
    with pytest.raises(ValueError, match=message):
        command_of(ctx, "spark-submit", tmp_path, jars)


def test_missing_cores_is_named(tmp_path, jars):
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback"})
    with pytest.raises(ValueError, match="BigDL needs 'cores'"):
        bigdl.plan_resources(ctx)


def test_missing_jar_is_named(tmp_path, jars):
    env = {**jars, "DLOBD_BIGDL_JAR": str(tmp_path / "absent.jar")}
    ctx = context(tmp_path, "dlobd-fig7a", {"network": "loopback"})
    with pytest.raises(FileNotFoundError, match=r"DLOBD_BIGDL_JAR=.*absent\.jar: BigDL jar not found"):
        command_of(ctx, "spark-submit", tmp_path, env)


def test_other_models_are_not_runnable(tmp_path, jars):
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 1})
    ctx.spec = {**ctx.spec, "model": "resnet50"}
    with pytest.raises(NotRunnable, match="model resnet50: no BigDL training main"):
        command_of(ctx, "spark-submit", tmp_path, jars)


# ---------------------------------------------------------------- network axis

def test_loopback_is_vanilla_spark(tmp_path):
    ctx = context(tmp_path, "dlobd-fig7a", {"network": "loopback"})
    submit, env, flavour = bigdl.spark_install(ctx, dict(ENV))
    assert (submit, env["SPARK_HOME"], flavour) == ("/opt/spark/bin/spark-submit", "/opt/spark", "vanilla")


@pytest.mark.parametrize("spec_id, point", local_points(rdma=True))
def test_rdma_without_hca_or_rdma_spark_is_not_runnable(tmp_path, monkeypatch, spec_id, point):
    monkeypatch.delenv("RDMA_SPARK_HOME", raising=False)
    if not capabilities.missing(["infiniband"]):
        pytest.skip("this machine has an InfiniBand HCA")
    ctx = context(tmp_path, spec_id, point)
    with pytest.raises(NotRunnable) as err:
        bigdl.spark_install(ctx, dict(ENV))
    reason = str(err.value)
    assert reason.startswith("network rdma: ")
    assert "no InfiniBand HCA" in reason and "RDMA_SPARK_HOME" in reason


def test_rdma_switches_to_rdma_spark_and_only_its_transport(tmp_path, monkeypatch):
    """The RDMA-Spark path as it would run on a cluster with an HCA (the HCA check is the
    one part taken as given here): RDMA-Spark's spark-submit with the host's own Spark settings
    (SPARK_CONF_DIR kept), its jars and RDMA switches given on the command line."""
    home = tmp_path / "rdma-spark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("")
    monkeypatch.setenv("RDMA_SPARK_HOME", str(home))
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, network: [])
    ctx = context(tmp_path, "dlobd-fig7a", {"network": "rdma"}, scale="paper")
    submit, env, flavour = bigdl.spark_install(ctx, {**ENV, "SPARK_CONF_DIR": "/host/etc/spark"})
    assert submit == str(home / "bin" / "spark-submit")
    assert (env["SPARK_HOME"], env["SPARK_CONF_DIR"], flavour) == (str(home), "/host/etc/spark", "rdma-spark")
    assert hadoop.transport_conf(flavour) == {
        "spark.yarn.jars": f"local:{home}/jars/*", "spark.ib.enabled": "true", "hadoop.ib.enabled": "true",
        "spark.roce.enabled": "false", "spark.shuffle.rdma.device.num": "1",
        "spark.driver.extraLibraryPath": f"{home}/lib/native/Linux-amd64-64",
        "spark.executor.extraLibraryPath": f"{home}/lib/native/Linux-amd64-64"}
    monkeypatch.setenv("RDMA_SPARK_TRANSPORT", "roce")
    assert (hadoop.transport_conf(flavour)["spark.roce.enabled"], hadoop.transport_conf(flavour)["spark.ib.enabled"]) \
        == ("true", "false")
    assert hadoop.transport_conf("vanilla") == {}
    # the workers' own ports decide, not the launch host's record: RoCE where they all declare
    # Ethernet; refused, naming each, where they differ
    monkeypatch.setenv("RDMA_SPARK_TRANSPORT", "ib")
    monkeypatch.setenv("DLOBD_WORKERS_LINK_LAYER", "10.1.0.11=Ethernet 10.1.0.12=Ethernet")
    assert hadoop.transport_conf(flavour)["spark.roce.enabled"] == "true"
    monkeypatch.setenv("DLOBD_WORKERS_LINK_LAYER", "10.1.0.11=Ethernet 10.1.0.12=InfiniBand")
    with pytest.raises(NotRunnable, match=r"the workers' HCA ports differ: 10\.1\.0\.11 Ethernet, 10\.1\.0\.12 InfiniBand"):
        hadoop.transport_conf(flavour)
    (home / "bin" / "spark-submit").unlink()
    with pytest.raises(NotRunnable, match="no bin/spark-submit of OSU RDMA-Spark"):
        bigdl.spark_install(ctx, dict(ENV))


# ---------------------------------------------------------------- data

@pytest.fixture(scope="module")
def cifar(tmp_path_factory):
    """A small cifar10-synthetic set from workloads/data/make_datasets.py: 5 x 6 train, 7 test."""
    out = tmp_path_factory.mktemp("cifar") / "cifar10-synthetic"
    subprocess.run([sys.executable, str(ROOT / "workloads" / "data" / "make_datasets.py"),
                    "cifar10-synthetic", "--out", str(out), "--per-batch", "6", "--test", "7"],
                   check=True, capture_output=True)
    return out


def test_subset_holds_the_first_records(cifar, tmp_path):
    data = bigdl.prepare_data(cifar, 8, 3, tmp_path)
    assert data == tmp_path / "data"
    size = bigdl.RECORD_BYTES
    train = (data / "data_batch_1.bin").read_bytes()
    first, second = (cifar / "data_batch_1.bin").read_bytes(), (cifar / "data_batch_2.bin").read_bytes()
    assert train == first + second[:2 * size]
    assert all((data / f"data_batch_{i}.bin").stat().st_size == 0 for i in range(2, 6))
    assert (data / "test_batch.bin").read_bytes() == (cifar / "test_batch.bin").read_bytes()[:3 * size]
    assert "the first 8 of 30 train and the first 3 of 7 test" in (tmp_path / "prepare.log").read_text()


def test_whole_data_set_is_used_in_place(cifar, tmp_path):
    assert bigdl.prepare_data(cifar, None, 7, tmp_path) == cifar
    assert not (tmp_path / "data").exists()


def test_missing_data_folder_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nowhere'}: data set folder not found"):
        bigdl.prepare_data(tmp_path / "nowhere", 8, 8, tmp_path)


def test_more_images_than_the_data_set_has(cifar, tmp_path):
    with pytest.raises(ValueError, match=f"{cifar}: train_images 31 asked for, the data set has 30"):
        bigdl.prepare_data(cifar, 31, 3, tmp_path)


def test_damaged_data_set_is_named(cifar, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in cifar.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    with open(broken / "data_batch_3.bin", "ab") as fh:
        fh.write(b"\0" * 10)
    (tmp_path / "attempt").mkdir()
    with pytest.raises(ValueError, match=r"data_batch_3.bin: 18448 bytes is not a whole number"):
        bigdl.prepare_data(broken, 8, 3, tmp_path / "attempt")
    (broken / "data_batch_3.bin").write_bytes((cifar / "data_batch_3.bin").read_bytes())
    (broken / "test_batch.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"test_batch.bin: missing"):
        bigdl.prepare_data(broken, 8, 3, tmp_path / "attempt")


def test_mnist_subset_keeps_the_first_images_and_labels_with_their_count(tmp_path):
    mnist = tmp_path / "mnist"
    write_idx(mnist, 12, 5)
    (tmp_path / "attempt").mkdir()
    data = bigdl.prepare_data(mnist, 8, 3, tmp_path / "attempt", bigdl.MnistIdx)
    assert bigdl.MnistIdx.counts(data) == (8, 3)
    images = (data / "train-images-idx3-ubyte").read_bytes()
    assert images[16:] == b"".join(bytes([i]) * 16 for i in range(8))
    assert (data / "t10k-labels-idx1-ubyte").read_bytes()[8:] == bytes([0, 1, 2])
    assert "(MNIST IDX)" in (tmp_path / "attempt" / "prepare.log").read_text()


def test_a_damaged_mnist_file_is_named(tmp_path):
    mnist = tmp_path / "mnist"
    write_idx(mnist, 12, 5)
    with open(mnist / "train-labels-idx1-ubyte", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte: 21 bytes, but its header says 12 records of 1 bytes"):
        bigdl.MnistIdx.counts(mnist)
    (mnist / "t10k-images-idx3-ubyte").write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte: not an IDX file"):
        bigdl.MnistIdx._header(mnist / "t10k-images-idx3-ubyte")


def test_lenet_takes_its_learning_rate_as_its_main_wants_it(tmp_path, jars):
    ctx = context(tmp_path, "dlobd-fig7b", {"network": "loopback", "cores": 2}, model="lenet5",
                  learning_rate=0.1)
    argv = command_of(ctx, "/opt/spark/bin/spark-submit", tmp_path / "data", jars)
    assert option(argv, "--class") == "com.intel.analytics.bigdl.dllib.models.lenet.Train"
    assert option(argv, "-r") == "0.1" and "-l" not in argv


@pytest.mark.parametrize("spec_id, point", local_points(rdma=False))
def test_the_papers_bigdl_runs_its_own_package_from_one_jar(tmp_path, jars, spec_id, point):
    """The paper profile's BigDL (commit a1f3a88, 0.x code): the models at the package root, and
    one jar with its native core inside, so no core jar is asked for or passed."""
    env = {**jars, "DLOBD_BIGDL_VERSION": "a1f3a88", "DLOBD_BIGDL_CORE_JAR": ""}
    ctx = context(tmp_path, spec_id, point)
    argv = command_of(ctx, "/opt/spark/bin/spark-submit", tmp_path / "data", env)
    model = ctx.fixed.get("model", ctx.spec["model"])
    assert option(argv, "--class") == f"com.intel.analytics.bigdl.{bigdl.MODELS[model].main}"
    assert "--jars" not in argv and argv[argv.index("--class") + 2] == jars["DLOBD_BIGDL_JAR"]
    # BigDL 2.x without its core jar is named
    with pytest.raises(FileNotFoundError, match=r"DLOBD_BIGDL_CORE_JAR=\(unset\): BigDL jar not found"):
        command_of(ctx, "/opt/spark/bin/spark-submit", tmp_path / "data",
                      {**env, "DLOBD_BIGDL_VERSION": "2.4.0"})


def test_an_assumed_count_the_cluster_cannot_meet_is_named_with_the_values_accepted(tmp_path):
    """runner.count_within, which every launcher sizing an unstated count calls: an assumed value
    the scale does not leave to the cluster is not cut: the point is not runnable, saying why."""
    data = {"id": "x", "scales": {"paper": {"assumed": {"workers": 3, "why": "Fig. 1"}}}}
    ctx = runner.RunContext(spec=data, scale="paper", cluster="c", point={}, attempt_dir=tmp_path,
                            runs_dir=tmp_path, fixed={"workers": 3})
    assert runner.count_within(ctx, "workers", 3, "hosts") == (3, "3, assumed, not stated by the paper (Fig. 1)")
    with pytest.raises(NotRunnable, match=r"^workers=3, assumed \(not stated by the paper; scales.paper.assumed "
                       r"of experiments/x.yaml\), is more than this cluster's 2 hosts: accepted 1 to 2; give "
                       r"one with ASSUME='workers=<n>'$"):
        runner.count_within(ctx, "workers", 2, "hosts")
    ctx.point = {"workers": 5}  # a stated count, as it is: the launcher's own checks judge it
    assert runner.count_within(ctx, "workers", 2, "hosts") == (5, None)


def paper_context(tmp_path, monkeypatch, spec_id, point, node_cores, workers, memory_mb=None):
    """A paper-scale point as runs.launch gives it (the scale's assumed values filled in) on
    `workers` workers of `node_cores` cores each (None: the inventory declares none), whose
    NodeManagers offer `memory_mb` (None: unknown)."""
    from dlobd.cluster import hadoop, provenance
    monkeypatch.setattr(hadoop, "node_cores", lambda: (node_cores, f"{node_cores} cores"))
    monkeypatch.setattr(hadoop, "rendered_nodemanager_memory_mb", lambda: memory_mb)
    monkeypatch.setattr(provenance, "workers", lambda gpu=False: [f"10.0.0.{i}" for i in range(1, workers + 1)])
    data = spec.load_all(ROOT)[spec_id].data
    attempt = tmp_path / "attempt-001"
    attempt.mkdir(exist_ok=True)
    return runner.RunContext(spec=data, scale="paper", cluster="c", point=dict(point), attempt_dir=attempt,
                             runs_dir=tmp_path, fixed=spec.settings(data, "paper")[0])


@pytest.mark.parametrize("point, node, workers, layout", [
    # the paper's layout: one executor of 24 cores per node
    ({"cores": 192, "network": "ipoib"}, 24, 8, (8, 24, None)),
    ({"cores": 384, "network": "ipoib"}, 48, 8, (16, 24, None)),  # two a node on 48-core nodes
    ({"cores": 96, "network": "ipoib"}, None, 4, (4, 24, None)),  # nodes of unknown size: one each
    # nodes smaller than the paper's executor: the cores spread over more executors, said so
    ({"cores": 96, "network": "ipoib"}, 16, 6, (6, 16, "6 executors x 16 cores: the spec's 4 x 24 cores per "
                                                  "executor do not fit 16 cores")),
])
def test_paper_executors_are_laid_out_within_the_nodes(tmp_path, monkeypatch, point, node, workers, layout):
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig7b", point, node, workers)
    r = bigdl.plan_resources(ctx)
    assert (r["executors"], r["executor_cores"], r["layout"]) == layout
    assert r["executors"] * r["executor_cores"] == point["cores"]


@pytest.mark.parametrize("node, workers, message", [
    (24, 6, r"dlobd-fig7b paper cores-192_network-ipoib: 192 cores as 8 executors x 24 cores need 8 nodes of "
            r"24 cores; the cluster has 6 worker\(s\)"),
    (None, 4, r"192 cores as 8 executors x 24 cores need 8 nodes, one executor each \(declare "
              r"dlobd_hardware.cores to fit more on a node\); the cluster has 4 worker\(s\)"),
])
def test_a_layout_the_cluster_cannot_hold_names_the_point_the_cores_and_the_nodes(tmp_path, monkeypatch, node,
                                                                                   workers, message):
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig7b", {"cores": 192, "network": "ipoib"}, node, workers)
    with pytest.raises(NotRunnable, match=message):
        bigdl.plan_resources(ctx)


def test_an_assumed_core_count_is_cut_to_what_the_cluster_lays_out(tmp_path, monkeypatch):
    """dlobd-fig6c's 192 cores are assumed from Fig. 7(a): on 6 workers of unknown size (one 24-core
    executor each, 144 cores) the most that divides the batch of 768 is 96, labelled."""
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig6c", {"network": "ipoib"}, None, 6)
    r = bigdl.plan_resources(ctx)
    assert (r["executors"], r["executor_cores"], r["cores"]) == (4, 24, 96)
    assert r["assumed"].startswith("96, assumed, not stated by the paper (Fig. 7(a)")
    assert r["assumed"].endswith("the assumed 192 cut to this cluster's 96 cores in executors of 24 on 6 "
                                 "worker(s) (group workers: 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, "
                                 "10.0.0.6) that divide batch 768 (node size: None cores)")
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig6c", {"network": "ipoib"}, 56, 8)
    assert bigdl.plan_resources(ctx)["cores"] == 192 and bigdl.plan_resources(ctx)["assumed"].startswith("192, assumed")


def test_an_assumed_core_count_is_cut_to_the_executors_whose_heaps_the_nodemanagers_hold(tmp_path, monkeypatch):
    """VGG-16's heap grows with an executor's share of the batch. On one 56-core worker outside group
    gpu with a NodeManager of 96 GiB (example-ib's node02), two executors of 24 cores (44g each, 384
    images) do not fit beside the ApplicationMaster, one (82g, 768 images) does: 24 cores, labelled. On
    a NodeManager of 48 GiB (the paper-shape site's) neither does: not runnable, saying why."""
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig6c", {"network": "ipoib"}, 56, 1, memory_mb=98304)
    r = bigdl.plan_resources(ctx)
    assert (r["executors"], r["executor_cores"], r["cores"], r["heap"]) == (1, 24, 24, "82g")
    assert r["heap_why"] == "1.5 x the 55561 MiB live heap measured for 24 model replicas and 768 images of each batch"
    assert r["assumed"].endswith("the assumed 192 cut to this cluster's 24 cores in executors of 24 on 1 worker(s) "
                                 "(group workers: 10.0.0.1) that divide batch 768 whose heaps 98304 MiB "
                                 "NodeManagers hold (node size: 56 cores)")
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig6c", {"network": "ipoib"}, 48, 1, memory_mb=49152)
    with pytest.raises(NotRunnable, match=r"^cores: this cluster has no cores in executors of 24 on 1 worker\(s\) .* "
                                          r"that divide batch 768 whose heaps 49152 MiB NodeManagers hold"):
        bigdl.plan_resources(ctx)
    # a stated count the NodeManagers cannot hold is not runnable, naming the heap and the containers
    ctx = paper_context(tmp_path, monkeypatch, "dlobd-fig7b", {"cores": 96, "network": "ipoib"}, 48, 2,
                        memory_mb=49152)
    with pytest.raises(NotRunnable, match=r"^executors of 25g heap \(1.5 x the 16393 MiB live heap measured for 24 "
                                          r"model replicas and 192 images of each batch\): 2 executor\(s\) per "
                                          r"NodeManager in containers of 28672 MiB \(Spark's default overhead, in YARN's "
                                          r"1024-MiB steps\)"):
        bigdl.plan_resources(ctx)
