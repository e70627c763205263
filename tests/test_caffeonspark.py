"""CaffeOnSpark without a cluster: the spark-submit command of every paper-scale point of its
experiments on a fake 16-node InfiniBand GPU cluster (a dry run: nothing is written or run),
the reasons a point is not runnable, the nets and solvers it renders, and the parser on
constructed logs (tests/data/constructed-logs/caffeonspark, format from CaffeOnSpark's and
Caffe's sources; no real run could be had here) and damaged copies of them."""

import ctypes.util
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from dlobd import ROOT, stacks
from dlobd.cluster import capabilities, provenance
from dlobd.stacks import caffeonspark
import reallogs
from stackfakes import WORKERS, assert_random_damage_is_handled, context, install, option, paper_points
from dlobd import NotRunnable

LOGS = Path(__file__).resolve().parent / "data" / "constructed-logs" / "caffeonspark"
SPECS = ("dlobd-fig4a", "dlobd-fig4b", "dlobd-fig5a", "dlobd-fig6a", "dlobd-fig6b", "dlobd-fig8a", "dlobd-fig8b")
SETTINGS = {
    "SPARK_HOME": "/opt/spark-1.6.2", "SPARK_VERSION": "1.6.2", "DLOBD_HDFS_URI": "hdfs://192.0.2.10:19820",
    "DLOBD_YARN_VCORES": "28",
    "DLOBD_YARN_MEMORY_MB": "32768",
    "DLOBD_GPU_WORKERS": " ".join(WORKERS), "CAFFEONSPARK_LIBRARY_PATH": "/usr/local/cuda/lib64",
    **{f"CAFFEONSPARK_HOME_{d}": f"/opt/cos/{d.lower()}" for d in ("CPU_OPENBLAS", "CPU_MKL", "GPU", "GPU_CUDNN")},
}


@pytest.fixture
def cluster(monkeypatch):
    install(monkeypatch, SETTINGS)


def test_the_specs_are_the_stacks():
    from dlobd import spec

    mine = {sid for sid, s in spec.load_all(ROOT).items()
            if s.data["stack"] == "caffeonspark" and "scales" in s.data}
    assert mine == set(SPECS)


@pytest.mark.parametrize("spec_id, point", paper_points(*SPECS))
def test_command_of_every_paper_point(tmp_path, cluster, spec_id, point):
    ctx = context(tmp_path, spec_id, point)
    result = caffeonspark.launch(ctx)
    argv = result.command
    assert result.status == "dry run" and not ctx.attempt_dir.exists()  # nothing written
    assert argv[:5] == ["/opt/spark-1.6.2/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client"]
    device = result.labels["device"].split()[0]
    nodes = int(option(argv, "--num-executors"))
    assert option(argv, "-clusterSize") == str(nodes) and option(argv, "--executor-cores") == "28"
    if "nodes" in point:
        assert nodes == point["nodes"]
    else:  # the paper states no node count: the spec's assumed 4, labelled
        assert nodes == 4 and result.labels["assumed"]["nodes"].startswith("4, assumed, not stated by the paper")
    home = f"/opt/cos/{device.replace('-', '_')}"
    assert option(argv, "--class") == "com.yahoo.ml.caffe.CaffeOnSpark"
    assert argv[argv.index("--class") + 2] == f"{home}/lib/{caffeonspark.JAR}"
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert f"spark.executorEnv.LD_LIBRARY_PATH={home}/lib:/usr/local/cuda/lib64" in confs
    assert f"spark.driver.extraLibraryPath={home}/lib:/usr/local/cuda/lib64" in confs
    assert any(c.startswith("spark.yarn.tags=dlobd-") for c in confs)
    # one executor per node: 8 GiB of heap, and the rest of the NodeManager's 32 GiB, less the
    # ApplicationMaster's 1 GiB container, as overhead, so YARN fits no second executor there
    assert option(argv, "--executor-memory") == "8g"
    assert "spark.yarn.executor.memoryOverhead=23552" in confs and "spark.yarn.am.memory=512m" in confs
    network = point.get("network", ctx.fixed.get("network"))
    assert option(argv, "-connection") == ("infiniband" if network == "rdma" else "ethernet")
    assert option(argv, "-devices") == "1" and option(argv, "-conf") == "solver.prototxt"
    assert {"-train", "-persistent"} <= set(argv)
    assert option(argv, "-model").startswith("hdfs://192.0.2.10:19820/dlobd/models/dlobd-")
    files = option(argv, "--files").split(",")
    assert [Path(f).name for f in files] == ["solver.prototxt", "net.prototxt"]
    if "batch_rule" in ctx.fixed:  # nodes x batch = 128
        assert int(result.labels["batch_per_node"]) * nodes == 128
    hosts = [h["address"] for h in result.hosts]
    assert hosts == WORKERS and not any(h.startswith("127.") for h in hosts)


@pytest.mark.parametrize("device, mode", [("cpu-mkl", "CPU"), ("gpu-cudnn", "GPU")])
def test_solver_and_net_follow_the_point(tmp_path, cluster, device, mode):
    ctx = context(tmp_path, "dlobd-fig4b", {"device": device, "nodes": 4})
    p = caffeonspark.plan_point(ctx)
    texts = caffeonspark.render(ctx, p, {"train": "hdfs://n/train", "test": "hdfs://n/test"})
    solver, net = texts["solver.prototxt"], texts["net.prototxt"]
    assert f"solver_mode: {mode}" in solver and 'net: "net.prototxt"' in solver
    assert "test_interval: 0" in solver and "test_iter: 0" in solver  # end-to-end time: no validation
    assert re.findall(r"batch_size: (\d+)", net) == ["32", "100"]  # 128 / 4 nodes; the test batch
    assert 'source: "hdfs://n/train"' in net and 'source_class: "com.yahoo.ml.caffe.LMDB"' in net


def test_accuracy_experiments_validate(tmp_path, cluster):
    ctx = context(tmp_path, "dlobd-fig6b", {"network": "ipoib"})
    p = caffeonspark.plan_point(ctx)
    texts = caffeonspark.render(ctx, p, {"train": "t", "test": "v"})
    assert "test_interval: 4000" in texts["solver.prototxt"] and "test_iter: 10" in texts["solver.prototxt"]
    net = texts["net.prototxt"]
    assert net.count('type: "Concat"') == 9  # nine inception modules
    assert net.count("num_output: 10\n") == 3  # two auxiliary classifiers and the last


@pytest.mark.parametrize("spec_id, model, iterations, modules", [("dlobd-fig6a", "alexnet-mini", 200, 0),
                                                                  ("dlobd-fig6b", "googlenet-mini", 400, 3)])
def test_a_local_scale_trains_its_shrunk_net_on_mnist(tmp_path, cluster, spec_id, model, iterations, modules):
    ctx = context(tmp_path, spec_id, {"network": "loopback"}, scale="local")
    p = caffeonspark.plan_point(ctx)
    assert (p["model"], p["dataset"], p["nodes"], p["batch"]) == (model, "mnist", 2, 64)
    texts = caffeonspark.render(ctx, p, {"train": "t", "test": "v"})
    solver, net = texts["solver.prototxt"], texts["net.prototxt"]
    assert f"max_iter: {iterations}\n" in solver and "test_interval: 50\n" in solver and "test_iter: 10\n" in solver
    assert re.findall(r"channels: (\d+)\n\s+height: (\d+)\n\s+width: (\d+)", net) == [("1", "28", "28")] * 2
    assert net.count('type: "Concat"') == modules and net.count("num_output: 10\n") == 1


@pytest.mark.parametrize("model", sorted(caffeonspark.models()))
def test_every_net_renders_with_both_data_layers(tmp_path, cluster, model):
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 2})
    ctx.point["model"] = model
    texts = caffeonspark.render(ctx, caffeonspark.plan_point(ctx), {"train": "t", "test": "v"})
    # CaffeOnSpark's Config needs a TRAIN and a TEST data layer in the net
    assert texts["net.prototxt"].count("include { phase: TRAIN }") == 1
    assert texts["net.prototxt"].count('type: "MemoryData"') == 2
    assert texts["net.prototxt"].count("{") == texts["net.prototxt"].count("}")


def test_rdma_needs_a_gpu_solver(tmp_path, cluster):
    ctx = context(tmp_path, "dlobd-fig8b", {"device": "cpu-openblas"})
    ctx.fixed["network"] = "rdma"
    with pytest.raises(NotRunnable, match="RDMA connection works for GPU solvers only"):
        caffeonspark.launch(ctx)


def test_rdma_without_an_hca_is_not_runnable(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, infiniband="no InfiniBand HCA (/sys/class/infiniband is empty or absent)",
            rdma="no InfiniBand HCA")
    ctx = context(tmp_path, "dlobd-fig5a", {"model": "lenet", "device": "gpu", "network": "rdma", "nodes": 2})
    with pytest.raises(NotRunnable, match="network rdma: needs infiniband: no InfiniBand HCA"):
        caffeonspark.launch(ctx)


def test_missing_build_names_the_role_variable_that_gives_it(tmp_path, monkeypatch):
    install(monkeypatch, {k: v for k, v in SETTINGS.items() if k != "CAFFEONSPARK_HOME_CPU_MKL"})
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 1})
    with pytest.raises(NotRunnable) as err:
        caffeonspark.launch(ctx)
    assert str(err.value) == ("device cpu-mkl: no CaffeOnSpark build for it: add cpu-mkl to caffeonspark_builds "
                              "(role caffeonspark, which records CAFFEONSPARK_HOME_CPU_MKL)" + capabilities.MKL_SOURCES)


def test_a_build_the_role_left_out_is_not_runnable_with_the_role_s_reason(tmp_path, monkeypatch):
    why = "/sw/mkl: no libmkl_rt.so in lib/intel64/ or lib/ (caffeonspark_mkl_root names a site MKL)"
    install(monkeypatch, {**{k: v for k, v in SETTINGS.items() if k != "CAFFEONSPARK_HOME_CPU_MKL"},
                          "CAFFEONSPARK_LEFT_OUT_CPU_MKL": why})
    with pytest.raises(NotRunnable) as err:
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 1}))
    assert str(err.value) == f"no CaffeOnSpark build for cpu-mkl: the caffeonspark role left it out: {why}"
    # the builds it made run
    assert caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1})).status == "dry run"


def local_caps(tmp_path, monkeypatch, env_sh: str) -> dict:
    """The local capabilities of a prefix whose dlobd-env.sh (as role stack_env writes it) holds
    `env_sh` besides an OpenBLAS build, with no CaffeOnSpark setting from this process."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "dlobd-env.sh").write_text(
        f"export CAFFEONSPARK_HOME_CPU_OPENBLAS={tmp_path}/caffeonspark/cpu-openblas\n{env_sh}")
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path))
    for name in ("CAFFEONSPARK_HOME_CPU_MKL", "CAFFEONSPARK_LEFT_OUT_CPU_MKL"):
        monkeypatch.delenv(name, raising=False)
    provenance.provisioned_env.cache_clear()
    monkeypatch.setattr(provenance, "versions", lambda: dict.fromkeys(("tensorflow", "tensorflowonspark", "bigdl")))
    try:
        return capabilities.local_capabilities.__wrapped__()
    finally:
        provenance.provisioned_env.cache_clear()


def test_the_left_out_reason_reaches_the_capability_the_local_points_need(tmp_path, monkeypatch):
    """The role's record: the capability caffeonspark-cpu-mkl, which the local scale's cpu-mkl
    points need, is missing with the role's reason."""
    why = "/x/mkl-2026.2.0/include/mkl.h: missing"
    caps = local_caps(tmp_path, monkeypatch, f"export CAFFEONSPARK_LEFT_OUT_CPU_MKL='{why}'\n")
    assert caps["caffeonspark-cpu-mkl"] == (
        False, f"no CaffeOnSpark build for cpu-mkl: the caffeonspark role left it out: {why}")
    assert caps["caffeonspark-cpu-openblas"] == (True, f"{tmp_path}/caffeonspark/cpu-openblas")


def test_the_plan_says_where_the_mkl_of_a_missing_cpu_mkl_build_comes_from(tmp_path, monkeypatch):
    """No cpu-mkl build and no reason recorded (a prefix provisioned without it): the capability the
    local points need says what builds it and where its MKL comes from."""
    caps = local_caps(tmp_path, monkeypatch, "")
    present, why = caps["caffeonspark-cpu-mkl"]
    assert not present
    assert why.startswith("no CaffeOnSpark build for cpu-mkl (role caffeonspark, caffeonspark_builds: [cpu-mkl]")
    assert "Intel's PyPI wheels" in why and "caffeonspark_mkl_root" in why
    assert "PyPI" not in caps["caffeonspark-gpu"][1]


def test_this_host_s_openblas_reports_its_kernels_and_only_a_fallback_on_avx2_is_replaced(monkeypatch):
    """What Debian's libopenblas.so.0 says of itself on this host, where the caffeonspark role (or
    any provisioning) installed it: the kernels it picks, replaced by the papers' Haswell ones only
    where it fell back to Prescott's on a CPU with AVX2 and FMA; a site's OPENBLAS_CORETYPE stands."""
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    capabilities.openblas_kernels.cache_clear()
    try:
        found = capabilities.openblas_kernels()
        monkeypatch.setenv("OPENBLAS_CORETYPE", "Zen")
        capabilities.openblas_kernels.cache_clear()
        site = capabilities.openblas_kernels()
    finally:
        capabilities.openblas_kernels.cache_clear()
    if ctypes.util.find_library("openblas") is None:
        assert found == site == {}
        return
    assert re.fullmatch(r"OpenBLAS \d+\.\d+\.\d+\S*", found["version"]) and found["core"]
    flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)[1].split())
    fallback = found["core"] == "Prescott" and {"avx2", "fma"} <= flags
    assert found["coretype"] == ("Haswell" if fallback else None)
    assert site == {**found, "coretype": "Zen", "why": "OPENBLAS_CORETYPE of the environment"}


@pytest.mark.parametrize("device, threads", [
    ("cpu-openblas", {"OPENBLAS_NUM_THREADS": "28"}),
    # Intel's OpenMP is not among the MKL wheels the role installs: GNU's, from the compiler
    ("cpu-mkl", {"MKL_NUM_THREADS": "28", "MKL_THREADING_LAYER": "GNU"}),
])
def test_the_executors_blas_threads_are_their_cores(tmp_path, cluster, monkeypatch, device, threads):
    monkeypatch.setattr(capabilities, "openblas_kernels", dict)  # whatever kernels this host's OpenBLAS picks
    argv = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": device, "nodes": 2})).command
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert {c.split("=", 1)[0].removeprefix("spark.executorEnv."): c.split("=", 1)[1] for c in confs
            if re.match(r"spark\.executorEnv\.(OPENBLAS|MKL)_", c)} == threads


def test_a_cpu_run_s_versions_name_its_blas_and_the_kernels_it_ran(tmp_path, monkeypatch):
    install(monkeypatch, {**SETTINGS, "CAFFEONSPARK_PROFILE": "modern", "CAFFEONSPARK_MKL_VERSION": "2026.2.0"})
    # this host's OpenBLAS as Debian's 0.3.21 reports itself on a Xeon newer than it
    kernels = {"version": "OpenBLAS 0.3.21", "core": "Prescott", "coretype": "Haswell",
               "why": "it takes this AVX2 CPU for a Prescott"}
    monkeypatch.setattr(capabilities, "openblas_kernels", lambda: kernels)
    mkl = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 1}))
    assert mkl.versions == {"stack": "caffeonspark 19df500 modern (cpu-mkl, MKL 2026.2.0)", "mkl": "2026.2.0"}
    assert not any("OPENBLAS_CORETYPE" in a for a in mkl.command)
    openblas = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1}))
    assert openblas.versions == {
        "stack": "caffeonspark 19df500 modern (cpu-openblas, OpenBLAS 0.3.21 Haswell kernels)",
        "openblas": "OpenBLAS 0.3.21, Haswell kernels (it takes this AVX2 CPU for a Prescott)"}
    assert "spark.executorEnv.OPENBLAS_CORETYPE=Haswell" in openblas.command
    # a host without libopenblas.so.0 to ask: the run says nothing of it and forces nothing
    monkeypatch.setattr(capabilities, "openblas_kernels", dict)
    openblas = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1}))
    assert openblas.versions == {"stack": "caffeonspark 19df500 modern (cpu-openblas)"}
    assert not any("OPENBLAS_CORETYPE" in a for a in openblas.command)


def test_gpu_points_need_gpus(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, gpu="no GPU (/dev/nvidia* absent)")
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 1})
    with pytest.raises(NotRunnable, match="needs gpu: no GPU"):
        caffeonspark.launch(ctx)
    cpu = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1}))
    assert cpu.status == "dry run"


def test_a_nodemanager_too_small_for_one_executor_is_not_runnable(tmp_path, monkeypatch):
    install(monkeypatch, {**SETTINGS, "DLOBD_YARN_MEMORY_MB": "12288"})
    with pytest.raises(NotRunnable, match=r"^1 executor\(s\) per NodeManager of at least 14336 MiB each: "
                                               r"YARN offers 12288 MiB on its smallest NodeManager"):
        caffeonspark.launch(context(tmp_path, "dlobd-fig6a", {"network": "ipoib"}))


def test_a_dry_run_of_an_unprovisioned_cluster_says_the_overhead_is_sized_at_launch(tmp_path, monkeypatch):
    install(monkeypatch, {**SETTINGS, "DLOBD_YARN_MEMORY_MB": "'$DLOBD_YARN_MEMORY_MB'"})
    argv = caffeonspark.launch(context(tmp_path, "dlobd-fig6a", {"network": "ipoib"})).command
    assert ("spark.yarn.executor.memoryOverhead=<at launch: (NodeManager memory - the ApplicationMaster's) / 1, "
            "in YARN's steps, less the heap's 8192 MiB>") in argv


def test_too_few_workers_and_workers_without_gpus(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, workers=WORKERS[:8])
    with pytest.raises(NotRunnable, match=r"16 nodes: the cluster has 8 GPU worker\(s\)"):
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 16}))
    some = {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:15])}
    install(monkeypatch, some)
    with pytest.raises(NotRunnable, match=rf"worker\(s\) {WORKERS[15]} are not in group gpu, and YARN has no node "
                                          r"label for group gpu \(provisioning gives their NodeManagers "
                                          r"dlobd_gpu_node_label: provision again; DLOBD_GPU_NODE_LABEL\)$"):
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 2}))
    # with YARN's node label of the gpu group the executors ask for it, and count the GPU workers only
    install(monkeypatch, {**some, "DLOBD_GPU_NODE_LABEL": "gpu"})
    argv = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 2})).command
    assert "spark.yarn.executor.nodeLabelExpression=gpu" in argv
    assert "spark.yarn.am.nodeLabelExpression" not in " ".join(argv)  # the ApplicationMaster anywhere
    with pytest.raises(NotRunnable, match=r"16 nodes: the cluster has 15 GPU worker\(s\)"):
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 16}))
    argv = caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 16})).command
    assert "nodeLabelExpression" not in " ".join(argv)


# Hadoop 2.7's exclusive YARN label on 4 of the 16 workers, as provisioning gives group gpu
LABELLED = {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[12:]), "DLOBD_GPU_NODE_LABEL": "gpu",
            "DLOBD_GPU_NODE_LABEL_EXCLUSIVE": "true", "HADOOP_VERSION": "2.7.3"}


def test_the_workers_a_reason_counts_are_named_with_their_group_and_the_label_that_leaves_some_out(
        tmp_path, monkeypatch):
    install(monkeypatch, LABELLED)
    with pytest.raises(NotRunnable) as gpu:
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 8}))
    assert str(gpu.value) == f"8 nodes: the cluster has 4 GPU worker(s) (group gpu: {', '.join(WORKERS[12:])})"
    with pytest.raises(NotRunnable) as cpu:
        caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 16}))
    assert str(cpu.value) == (f"16 nodes: the cluster has 12 worker(s) outside group gpu ({', '.join(WORKERS[:12])}; "
                              "YARN 2.7's node label gpu is exclusive, so CPU executors do not run on "
                              f"{', '.join(WORKERS[12:])})")
    # a label that is not exclusive (Hadoop 2.8 on) leaves CPU executors every worker
    install(monkeypatch, {**LABELLED, "DLOBD_GPU_NODE_LABEL_EXCLUSIVE": "false"})
    assert caffeonspark.launch(context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 16})).status == "dry run"
    # a scale's `hosts` (several executors a NodeManager) beyond the workers, said alike
    install(monkeypatch, {**LABELLED, "DLOBD_GPU_NODE_LABEL_EXCLUSIVE": "false"}, workers=WORKERS[:1])
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "cpu-mkl", "nodes": 4})
    ctx.fixed["hosts"] = 2
    with pytest.raises(NotRunnable, match=rf"^2 host\(s\): the cluster has 1 worker\(s\) \(group workers: "
                                          rf"{WORKERS[0]}\)$"):
        caffeonspark.launch(ctx)


def test_unknown_model_is_refused(tmp_path, cluster):
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "gpu", "nodes": 2})
    ctx.point["model"] = "resnet50"
    with pytest.raises(ValueError, match="model 'resnet50' has no CaffeOnSpark net"):
        caffeonspark.plan_point(ctx)


# ---------------------------------------------------------------- parser

def values(result, metric, **where):
    return [r["value"] for r in result.rows if r["metric"] == metric
            and all(r.get(k) == v for k, v in where.items())]


def test_a_finished_run():
    r = stacks.parse_run("caffeonspark", LOGS / "lenet-2-nodes")
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert values(r, "end_to_end_s") == [55.5]  # the YARN record: submission to end
    assert [x["step"] for x in r.rows if x["metric"] == "loss" and x["task"] == "rank:0"] == list(range(0, 1000, 100))
    assert values(r, "top1_accuracy", task="rank:0") == [0.9712, 0.9803]
    assert values(r, "test_loss", step=1000) == [0.0611]
    assert values(r, "train_time_s", task="rank:1") == [pytest.approx(21.800995)]
    assert r.meta["ranks"] == {0: "host-a", 1: "host-b"}
    assert {e["event"] for e in r.events} == {"rank_placed", "executor_rank", "model_saved"}


def test_a_failed_run_names_the_error_and_yarn_diagnostics():
    r = stacks.parse_run("caffeonspark", LOGS / "cifar10-quick-failed")
    assert r.status == "ok" and not r.finished
    assert "no 'Model saving" in r.reason and "Train solver exception" in r.reason
    assert "ended FINISHED/FAILED: User class threw exception" in r.reason
    assert values(r, "loss") == [2.30259, 1.95011]
    assert values(r, "train_time_s") == values(r, "end_to_end_s") == []


def test_a_damaged_yarn_record_makes_the_run_unparseable(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(LOGS / "lenet-2-nodes", run)
    (run / "yarn" / "application_1488448000000_0007.json").write_text("{\"id\": \"applic")
    r = stacks.parse_run("caffeonspark", run)
    assert r.status == "unparseable" and "not a ResourceManager application record" in r.reason


RANK0 = "lenet-2-nodes/containers/container_1488448000000_0007_01_000002/stderr"
RANK1 = "lenet-2-nodes/containers/container_1488448000000_0007_01_000003/stderr"


def lines_of(rel):
    return (LOGS / rel).read_text().splitlines(keepends=True)


def test_rank0_cut_before_saving_is_not_finished():
    lines = lines_of(RANK0)
    cut = caffeonspark.parse("".join(lines[:-1]))
    whole = caffeonspark.parse("".join(lines))
    assert cut.status == "ok" and not cut.finished and "before the run's end" in cut.reason
    assert cut.rows == [x for x in whole.rows if x["metric"] != "train_time_s"]


def test_cut_mid_line_never_reads_the_half_line():
    lines = lines_of(RANK1)
    half = lines[-1][: len(lines[-1]) // 2]
    r = caffeonspark.parse("".join(lines[:-1]) + half)
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason
    assert max(x["step"] for x in r.rows if x["metric"] == "loss") == 800


@pytest.mark.parametrize("damaged, reason", [
    ("", "empty log"), ("\x00\x01binary\x02" * 20, "binary data"),
    ("17/03/02 10:15:02 INFO SparkContext: Running Spark version 1.6.2\n", "no line of"),
])
def test_empty_binary_and_foreign_logs(damaged, reason):
    r = caffeonspark.parse(damaged)
    assert r.status == "unparseable" and r.reason.startswith(reason)


def test_interleaved_executor_logs_are_unparseable():
    a, b = lines_of(RANK0), lines_of(RANK1)
    r = caffeonspark.parse("".join(x for pair in zip(a, b) for x in pair))
    assert r.status == "unparseable" and "interleaved" in r.reason and re.search(r"line \d+", r.reason)


def test_concatenated_driver_logs_are_unparseable():
    text = (LOGS / "lenet-2-nodes" / "stderr.log").read_text()
    r = caffeonspark.parse(text * 2)
    assert r.status == "unparseable" and "placed twice" in r.reason


FILES = sorted(p for p in LOGS.rglob("*") if p.is_file() and p.suffix != ".json")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(LOGS)))
def test_random_damage_never_crashes(path):
    assert_random_damage_is_handled(caffeonspark.parse, path.read_text(), seed=path.name, times=25)


def real_build(tmp_path, monkeypatch, **extra) -> Path:
    """A CPU build's home with what the launcher checks before it starts Spark: the jar's place and
    (where the test gives it) the build's caffe.proto."""
    home = tmp_path / "cos" / "cpu-openblas"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / caffeonspark.JAR).touch()
    install(monkeypatch, {**SETTINGS, "CAFFEONSPARK_HOME_CPU_OPENBLAS": str(home), "DLOBD_DATA_DIR": str(tmp_path / "data"),
                          **extra})
    return home


def launch_for_real(tmp_path):
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1})
    ctx.dry_run = False
    ctx.attempt_dir.mkdir(parents=True)
    return caffeonspark.launch(ctx)


def test_a_missing_lmdb_is_named_before_spark_starts(tmp_path, monkeypatch):
    real_build(tmp_path, monkeypatch)
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp_path}/data/lmdb/cifar10/train: no LMDB of cifar10")):
        launch_for_real(tmp_path)


MIRROR = Path(os.environ.get("DLOBD_SOURCE_MIRROR", "/nonexistent"))


@pytest.mark.skipif(not (MIRROR / "yahoo-caffe-fc0a02e.tar.gz").is_file() or not shutil.which("protoc"),
                    reason="needs DLOBD_SOURCE_MIRROR (caffe.proto comes from the pinned yahoo/caffe tarball) and protoc")
def test_a_net_that_does_not_parse_is_named_with_protocs_line_and_column(tmp_path, monkeypatch):
    home = real_build(tmp_path, monkeypatch)
    (home / "proto").mkdir()
    with tarfile.open(MIRROR / "yahoo-caffe-fc0a02e.tar.gz") as tar:
        member = tar.getmember("caffe-fc0a02e/src/caffe/proto/caffe.proto")
        (home / "proto" / "caffe.proto").write_bytes(tar.extractfile(member).read())
    ctx = context(tmp_path, "dlobd-fig4a", {"device": "cpu-openblas", "nodes": 1})
    p = caffeonspark.plan_point(ctx)
    net = caffeonspark.render(ctx, p, {"train": "t", "test": "v"})["net.prototxt"]
    good = tmp_path / "good.prototxt"
    good.write_text(net)
    caffeonspark.check_net(home, good)  # the project's own LeNet parses
    broken = tmp_path / "net.prototxt"
    broken.write_text(net.replace("kernel_size: 5", "kernel_size: five", 1))
    with pytest.raises(ValueError, match=re.escape(f"{broken}: not a Caffe net definition: line ")
                       + r"\d+:\d+: Expected integer"):
        caffeonspark.check_net(home, broken)
    assert "kernel_size: five" in broken.read_text()  # the bad net is kept as it was


REAL = Path(__file__).resolve().parent / "data" / "logs" / "caffeonspark" / "two-executors"


def test_a_real_run_of_the_modern_port_two_executors_over_ethernet():
    """LeNet on MNIST, CaffeOnSpark's modern port, Spark local-cluster[2,1,2048], -connection
    ethernet (tests/data/logs/README.md has the command)."""
    driver = caffeonspark.parse((REAL / "stderr.log").read_text())
    assert driver.finished and not driver.rows
    assert driver.meta["ranks"] == {0: "vm", 1: "vm"}
    assert [e["detail"] for e in driver.events if e["event"] == "rank_placed"] == ["0@vm", "1@vm"]
    accuracy = {}
    for rank in (0, 1):
        result = caffeonspark.parse((REAL / "containers" / f"executor-{rank}" / "stderr").read_text())
        assert result.finished, result.reason
        assert {r["task"] for r in result.rows} == {f"rank:{rank}"}
        losses = [r for r in result.rows if r["metric"] == "loss"]
        assert [r["step"] for r in losses] == [0, 100, 200, 300]
        (acc,) = [r for r in result.rows if r["metric"] == "top1_accuracy"]
        accuracy[rank] = (acc["step"], acc["value"])
    assert accuracy == {0: (200, 0.9542), 1: (200, 0.9526)}
    # only rank 0 saves the model
    saved = caffeonspark.parse((REAL / "containers" / "executor-0" / "stderr").read_text()).meta["model_path"]
    assert saved.endswith("/lenet.caffemodel")


def test_the_training_time_runs_to_the_last_iteration_a_log_marks():
    # rank 0 displays iterations 0 to 300 (display 100) and snapshots the model after iteration
    # 400 (17:55:40.740959), the end of its training; rank 1 saves nothing: its span ends at its
    # last displayed iteration (17:55:02.124702)
    times = {}
    for rank in (0, 1):
        result = caffeonspark.parse((REAL / "containers" / f"executor-{rank}" / "stderr").read_text())
        (times[rank],) = [r["value"] for r in result.rows if r["metric"] == "train_time_s"]
    assert times == {0: pytest.approx(180.444604), 1: pytest.approx(141.617774)}
    lines = (REAL / "containers" / "executor-0" / "stderr").read_text().splitlines(keepends=True)
    # without its snapshot, rank 0's ends at iteration 300 (17:55:02.132447); with iteration 0
    # its only displayed one and no snapshot, nothing marks an end: no row rather than 0 s
    unsnapped = [line for line in lines if "Snapshotting to binary proto file" not in line]
    result = caffeonspark.parse("".join(unsnapped))
    assert [r["value"] for r in result.rows if r["metric"] == "train_time_s"] == [pytest.approx(141.836092)]
    first_only = [line for line in unsnapped if not re.search(r"\] Iteration [1-9]\d*, loss", line)]
    result = caffeonspark.parse("".join(first_only))
    assert result.finished and [r["step"] for r in result.rows if r["metric"] == "loss"] == [0]
    assert not [r for r in result.rows if r["metric"] == "train_time_s"]


# ---------------------------------------------------------------- real logs of other releases

def test_a_drivers_failed_start_is_its_format_not_finished_and_once():
    driver = reallogs.lines("caffeonspark", "driver-too-few-executors-2017")
    r = caffeonspark.parse("".join(driver))
    assert (r.status, r.finished) == ("ok", False) and "1 of the 2 requested executors registered" in r.reason
    assert [e["event"] for e in r.events] == ["failure"]
    r = caffeonspark.parse("".join(driver) * 2)
    assert r.status == "unparseable" and "line 4: a second check of the executors' number" in r.reason


def test_the_model_saving_line_marks_rank_0s_end_without_its_rank_line():
    r = caffeonspark.parse("".join(reallogs.lines("caffeonspark", "executor-cifar10-full-2016-model-saved")))
    assert (r.status, r.finished) == ("ok", True) and r.meta["model_path"] == "result/cifar10.full.model.h5"
    r = caffeonspark.parse(reallogs.cut_mid_line(reallogs.lines("caffeonspark", "executor-cifar10-full-2016-model-saved")))
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason


def test_two_real_executor_logs_interleaved_are_unparseable():
    r = caffeonspark.parse(reallogs.interleaved(reallogs.lines("caffeonspark", "executor-hang-2016-07"),
                                                reallogs.lines("caffeonspark", "executor-cifar10-full-2016-iterations")))
    assert r.status == "unparseable" and "thread 29236" in r.reason and "interleaved" in r.reason


def test_the_assumed_nodes_are_cut_to_a_smaller_cluster_and_an_assumed_count_beyond_it_is_named(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, workers=WORKERS[:2])
    p = caffeonspark.plan_point(context(tmp_path, "dlobd-fig6a", {"network": "ipoib"}))
    assert (p["nodes"], p["device"]) == (2, "gpu")  # the device assumed, the nodes cut to the 2 workers
    assert p["labels"]["assumed"]["nodes"].startswith("2, assumed, not stated by the paper (Fig. 5(a)")
    assert p["labels"]["assumed"]["nodes"].endswith("; the assumed 4 cut to this cluster's 2 GPU worker(s) "
                                                    f"(group gpu: {WORKERS[0]}, {WORKERS[1]})")
