"""MMLSpark 0.10 / CNTK without a cluster: the spark-submit command and the GPU hosts' settings
of every paper-scale point of dlobd-fig4c and dlobd-fig5c on a fake 16-node cluster (a dry
run), the reasons a point is not runnable, and the parser on a constructed log
(tests/data/constructed-logs/mmlspark: format from MMLSpark's, CNTK's and OpenMPI's sources;
no real run could be had here) and damaged copies of it."""

import ast
import re
import subprocess
from pathlib import Path

import jinja2

import pytest

from dlobd import stacks
from dlobd.cluster import hadoop
from dlobd.stacks import mmlspark
import reallogs
from stackfakes import WORKERS, assert_random_damage_is_handled, context, install, option, paper_points
from dlobd.stacks import runner
from dlobd import NotRunnable

LOG = Path(__file__).resolve().parent / "data" / "constructed-logs" / "mmlspark" / "cifar10-2-nodes"
SETTINGS = {
    "SPARK_HOME": "/opt/spark-2.2.0", "SPARK_VERSION": "2.2.0", "DLOBD_DATA_DIR": "/srv/dlobd/data",
    "DLOBD_GPU_WORKERS": " ".join(WORKERS),
    "DLOBD_GPUS_PER_NODE": "1", "MMLSPARK_MPI_HOME": "/opt/openmpi-1.10.3", "MMLSPARK_JARS_DIR": "/opt/mmlspark/jars",
    "MMLSPARK_SSH_KEY": "/srv/dlobd/etc/mmlspark/identity", "MMLSPARK_WRAPPERS": "/srv/dlobd/libexec/mmlspark",
    "MMLSPARK_PYTHON": "/opt/python-3.6/bin/python", "MMLSPARK_PYTHON_VERSION": "3.6",
    **{f"CNTK_HOME_{d}": f"/opt/cntk-{d.lower()}" for d in ("CPU_OPENBLAS", "CPU_MKL", "GPU_CUDNN")},
}


@pytest.fixture
def cluster(monkeypatch):
    install(monkeypatch, SETTINGS)


@pytest.mark.parametrize("spec_id, point", paper_points("dlobd-fig4c", "dlobd-fig5c"))
def test_command_of_every_paper_point(tmp_path, cluster, spec_id, point):
    ctx = context(tmp_path, spec_id, point)
    result = mmlspark.launch(ctx)
    argv = result.command
    assert result.status == "dry run" and not ctx.attempt_dir.exists()
    assert argv[:5] == ["/opt/spark-2.2.0/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client"]
    assert option(argv, "--jars") == "/opt/mmlspark/jars/*.jar"
    assert argv[argv.index("--jars") + 1:].index(str(mmlspark.WORKLOADS / "train.py")) > 0
    nodes = point["nodes"]
    assert option(argv, "--gpu-machine") == f"{WORKERS[0]},1"
    assert option(argv, "--minibatch") == "128" and option(argv, "--data-dir") == "/srv/dlobd/data/cifar10"
    assert option(argv, "--working-dir").startswith("file:/tmp/dlobd-mmlspark/dlobd-")
    assert option(argv, "--identity") == "file:///srv/dlobd/etc/mmlspark/identity"
    remote = result.extra["remote_env"]
    assert remote["DLOBD_MMLSPARK_HOSTS"].split() == WORKERS[:nodes]
    network = point.get("network", "ipoib")
    assert remote["DLOBD_MMLSPARK_BTL"] == ("self,sm,openib" if network == "rdma" else "self,sm,tcp")
    device = point.get("device", "gpu-cudnn")
    assert remote["DLOBD_MMLSPARK_DEVICE_ID"] == ("auto" if device == "gpu-cudnn" else "-1")
    assert remote["PATH"].startswith(f"/srv/dlobd/libexec/mmlspark:/opt/cntk-{device.replace('-', '_')}/cntk/bin:")
    if "device" not in point:  # the spec's assumed device, which runs.launch labels
        assert ctx.fixed["device"] == result.labels["device"] == "gpu-cudnn"
    assert [h["address"] for h in result.hosts] == WORKERS[:nodes]
    # the driver and the executors run the site's Python 3.6, not the stacks' (spark-defaults.conf's)
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert {k: v for k, v in confs.items() if "python" in k.lower()} == {
        key: "/opt/python-3.6/bin/python" for key in (
            "spark.pyspark.python", "spark.pyspark.driver.python", "spark.executorEnv.PYSPARK_PYTHON",
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON")}
    assert "notes" not in result.extra  # the version the role found is known


def test_the_driver_runs_with_mmlspark_python(tmp_path, cluster, monkeypatch):
    """A real launch gives spark-submit the Python in its environment too (PYSPARK_PYTHON,
    PYSPARK_DRIVER_PYTHON), which pyspark's launcher reads before the configuration."""
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "mmlspark_2.11-0.10.jar").write_bytes(b"")
    install(monkeypatch, {**SETTINGS, "MMLSPARK_JARS_DIR": str(jars)})
    monkeypatch.setattr(hadoop, "stack_env", lambda: {"PATH": "/usr/bin:/bin"})
    started = {}
    monkeypatch.setattr(runner, "run_command", lambda ctx, argv, env=None, **kw: started.update(env=env)
                        or runner.LaunchResult(status="ok", command=list(argv)))
    ctx = context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 2})
    ctx.dry_run = False
    ctx.attempt_dir.mkdir()
    mmlspark.launch(ctx)
    assert started["env"]["PYSPARK_PYTHON"] == started["env"]["PYSPARK_DRIVER_PYTHON"] == "/opt/python-3.6/bin/python"


def test_the_specs_devices_per_node_make_ranks_else_every_gpu(tmp_path, monkeypatch):
    """Fig. 5(c) runs one GPU a node (devices_per_node: 1) on hosts of 4: one rank a node; a
    point whose spec states no layout runs a rank on every GPU of a host."""
    install(monkeypatch, {**SETTINGS, "DLOBD_GPUS_PER_NODE": "4"})
    ctx = context(tmp_path, "dlobd-fig5c", {"network": "rdma", "nodes": 8})
    result = mmlspark.launch(ctx)
    assert option(result.command, "--gpu-machine") == f"{WORKERS[0]},1"
    assert result.labels["ranks"] == "8 (1 per node)"
    ctx.fixed.pop("devices_per_node")
    result = mmlspark.launch(ctx)
    assert option(result.command, "--gpu-machine") == f"{WORKERS[0]},4"
    assert result.labels["ranks"] == "32 (4 per node)"


@pytest.mark.parametrize("drop, message", [
    ("CNTK_HOME_CPU_MKL", r"no CNTK 2\.x build for it.*: add cpu-mkl: <its install> to mmlspark_cntk_homes "
                          r"\(role mmlspark; CNTK_HOME_CPU_MKL\)$"),
    ("MMLSPARK_MPI_HOME", r"^OpenMPI 1\.10 .*: set mmlspark_mpi_home \(role mmlspark; MMLSPARK_MPI_HOME\)$"),
    ("MMLSPARK_PYTHON", r"^Spark 2\.2's PySpark needs a Python 3\.6 or older with numpy, not the stacks' Python: "
                        r"set mmlspark_python \(role mmlspark; MMLSPARK_PYTHON\)$"),
])
def test_missing_software_names_the_role_variable_that_gives_it(tmp_path, monkeypatch, drop, message):
    install(monkeypatch, {k: v for k, v in SETTINGS.items() if k != drop})
    with pytest.raises(NotRunnable, match=message):
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 2}))


@pytest.mark.parametrize("drop, message", [
    (["MMLSPARK_JARS_DIR"], "MMLSpark 0.10's jars (from the mmlspark Maven repository): the mmlspark role records "
                            "it where it runs (dlobd_paper_stacks: [mmlspark]; MMLSPARK_JARS_DIR)"),
    (list(mmlspark.ROLE_RECORDS),
     "MMLSpark 0.10's jars (from the mmlspark Maven repository); the ssh key CNTKLearner uses to reach the GPU host; "
     "the ssh/scp/mpirun wrappers that carry the run's settings: the mmlspark role records them where it runs "
     "(dlobd_paper_stacks: [mmlspark]; MMLSPARK_JARS_DIR, MMLSPARK_SSH_KEY, MMLSPARK_WRAPPERS)"),
])
def test_what_the_role_records_of_its_own_asks_for_the_role(tmp_path, monkeypatch, drop, message):
    """No inventory variable gives the jars, the key or the wrappers: a run of the role does."""
    install(monkeypatch, {k: v for k, v in SETTINGS.items() if k not in drop})
    with pytest.raises(NotRunnable) as err:
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 2}))
    assert str(err.value) == message


@pytest.mark.parametrize("version", ["3.7", "3.11"])
def test_a_python_too_new_for_spark_2_2_is_named(tmp_path, monkeypatch, version):
    install(monkeypatch, {**SETTINGS, "MMLSPARK_PYTHON": "/usr/bin/python3", "MMLSPARK_PYTHON_VERSION": version})
    too_new = (rf"^mmlspark_python /usr/bin/python3 is Python {version}: Spark 2\.2's PySpark runs on 3\.6 at the "
               r"newest; set mmlspark_python to an older one with numpy \(role mmlspark; MMLSPARK_PYTHON\)$")
    with pytest.raises(NotRunnable, match=too_new):
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 2}))


def test_a_python_of_unknown_version_is_planned_with_a_note(tmp_path, monkeypatch):
    """An inventory's dry run cannot run the hosts' Python: the role finds its version when
    provisioning, and the dry run says so; an older one than 3.6 runs."""
    install(monkeypatch, {k: v for k, v in SETTINGS.items() if k != "MMLSPARK_PYTHON_VERSION"})
    result = mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 2}))
    assert result.status == "dry run"
    assert result.extra["notes"] == ["mmlspark_python /opt/python-3.6/bin/python: the mmlspark role finds its "
                                     "version when provisioning; newer than 3.6 is not runnable"]
    install(monkeypatch, {**SETTINGS, "MMLSPARK_PYTHON_VERSION": "2.7"})
    assert mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 2})).status == "dry run"
    install(monkeypatch, {**SETTINGS, "MMLSPARK_PYTHON_VERSION": "three"})
    with pytest.raises(ValueError, match="MMLSPARK_PYTHON_VERSION 'three' is not a version like 3.6"):
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 2}))


def test_the_driver_program_runs_on_python_3_6():
    """train.py runs on MMLSPARK_PYTHON: its syntax is 3.6's, and no annotation is one that 3.6
    cannot evaluate when the function is defined (`X | None`, `list[str]`)."""
    tree = ast.parse((mmlspark.WORKLOADS / "train.py").read_text(), feature_version=(3, 6))
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    annotations = [a.annotation for f in functions for a in f.args.args + f.args.kwonlyargs if a.annotation]
    annotations += [f.returns for f in functions if f.returns]
    assert annotations  # the check reads something
    too_new = [ast.unparse(a) for a in annotations for n in ast.walk(a)
               if isinstance(n, ast.BinOp) or (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                                               and n.value.id in ("list", "dict", "tuple", "set", "type"))]
    assert not too_new


def test_rdma_without_an_hca_and_too_few_gpu_hosts(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, infiniband="no InfiniBand HCA", rdma="no InfiniBand HCA")
    with pytest.raises(NotRunnable, match="network rdma: needs infiniband"):
        mmlspark.launch(context(tmp_path, "dlobd-fig5c", {"network": "rdma", "nodes": 2}))
    install(monkeypatch, {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:4])})
    with pytest.raises(NotRunnable) as err:
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 8}))
    assert str(err.value) == f"8 nodes: the cluster has 4 GPU worker(s) (group gpu: {', '.join(WORKERS[:4])})"


def test_cpu_points_count_the_workers_yarn_runs_their_executors_on(tmp_path, monkeypatch):
    """MMLSpark's Spark executors run on YARN as the other Spark stacks' do: where Hadoop 2.7's
    exclusive label keeps those of a CPU point off the GPU workers, its nodes are the others, the
    same hadoop.executor_workers that CaffeOnSpark and BigDL count."""
    labelled = {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:4]), "DLOBD_GPU_NODE_LABEL": "gpu",
                "DLOBD_GPU_NODE_LABEL_EXCLUSIVE": "true", "HADOOP_VERSION": "2.7.3"}
    install(monkeypatch, labelled)
    result = mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 8}))
    assert result.extra["remote_env"]["DLOBD_MMLSPARK_HOSTS"].split() == WORKERS[4:12] == hadoop.executor_workers()[:8]
    with pytest.raises(NotRunnable) as err:
        mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "cpu-mkl", "nodes": 16}))
    assert str(err.value) == (f"16 nodes: the cluster has 12 worker(s) outside group gpu ({', '.join(WORKERS[4:])}; "
                              "YARN 2.7's node label gpu is exclusive, so CPU executors do not run on "
                              f"{', '.join(WORKERS[:4])})")
    gpu = mmlspark.launch(context(tmp_path, "dlobd-fig4c", {"device": "gpu-cudnn", "nodes": 4}))
    assert gpu.extra["remote_env"]["DLOBD_MMLSPARK_HOSTS"].split() == WORKERS[:4]


def test_brainscript_template_takes_the_run_values():
    text = (mmlspark.WORKLOADS / "cifar10_convnet.cntk").read_text()
    assert set(re.findall(r"\$\{(\w+)\}", text)) == {"epochs", "minibatch"}
    assert "timestamping = true" in text and 'parallelizationMethod = "DataParallelSGD"' in text


# ---------------------------------------------------------------- parser

def values(result, metric, **where):
    return [r["value"] for r in result.rows if r["metric"] == metric
            and all(r.get(k) == v for k, v in where.items())]


def lines():
    return (LOG / "stderr.log").read_text().splitlines(keepends=True)


def test_a_finished_run_reads_rank_0():
    r = stacks.parse_run("mmlspark", LOG)
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert values(r, "loss") == [1.88412597, 1.40117188, 1.18027344]
    assert values(r, "epoch_time_s") == [31.2049, 30.8877, 31.0415]  # rank 1's 31.2102 ... ignored
    assert values(r, "train_time_s") == [pytest.approx(93.1341)]
    assert values(r, "end_to_end_s") == [230.25]
    assert values(r, "throughput_records_per_s", epoch=1) == [3106.0, 3214.3]
    assert r.meta["mpi_ranks"] == 2 and r.meta["criterion"] == "ce"


def test_untagged_cntk_lines_and_a_validation():
    text = ("11/20/2017 09:32:36: Finished Epoch[ 1 of 1]: [Training] ce = 1.5 * 100; errs = 50.000% * 100; "
            "totalSamplesSeen = 100; learningRatePerSample = 0.001; epochTime=2.5s\n"
            "11/20/2017 09:32:37: Finished Epoch[ 1 of 1]: [Validate] ce = 1.7 * 50; errs = 40.000% * 50\n"
            "17/11/20 09:33:40 INFO CNTKLearner: CNTK training finished\n")
    r = mmlspark.parse(text)
    assert (r.status, r.finished) == ("ok", True)
    assert values(r, "top1_accuracy") == [pytest.approx(0.6)] and r.meta["test_records"] == 50


def test_cut_before_the_last_epoch():
    text = lines()
    end = next(i for i, line in enumerate(text) if "Finished Epoch[ 3 of 3]" in line)
    r = mmlspark.parse("".join(text[:end]))
    assert r.status == "ok" and not r.finished
    assert "2 of 3 epochs finished" in r.reason and "no 'CNTK training finished'" in r.reason
    assert values(r, "train_time_s") == []


def test_cut_mid_line():
    text = lines()
    i = next(i for i, line in enumerate(text) if "Finished Epoch[ 2 of 3]" in line)
    r = mmlspark.parse("".join(text[:i]) + text[i][:40])
    assert r.status == "ok" and "cut mid-line" in r.reason and values(r, "loss") == [1.88412597]


def test_concatenated_and_interleaved_logs_are_unparseable():
    r = mmlspark.parse("".join(lines()) * 2)
    assert r.status == "unparseable" and "concatenated" in r.reason
    other = [line.replace("of 3]", "of 5]") for line in lines()]
    r = mmlspark.parse("".join(x for pair in zip(lines(), other) for x in pair))
    assert r.status == "unparseable" and re.search(r"line \d+", r.reason) and "interleaved" in r.reason


def test_a_cntk_failure_is_named():
    text = ("[1,0]<stderr>:EXCEPTION occurred: Reader: could not open file /tmp/x\n"
            "17/11/20 09:33:40 INFO SparkContext: Invoking stop() from shutdown hook\n")
    r = mmlspark.parse(text)
    assert r.status == "unparseable" and "EXCEPTION occurred: Reader: could not open" in r.reason


@pytest.mark.parametrize("damaged, reason", [("", "empty log"), ("\x00" * 64, "binary data"),
                                             ("hello\n", "no line of")])
def test_empty_binary_foreign(damaged, reason):
    r = mmlspark.parse(damaged)
    assert r.status == "unparseable" and r.reason.startswith(reason)


def test_random_damage_never_crashes():
    assert_random_damage_is_handled(mmlspark.parse, "".join(lines()), seed=5)


# ---------------------------------------------------------------- the role's wrappers

WRAPPERS = Path(__file__).resolve().parents[1] / "playbooks" / "roles" / "mmlspark" / "templates"


def wrapper(tmp_path, name):
    text = jinja2.Template((WRAPPERS / f"{name}.j2").read_text()).render(ansible_managed="test")
    path = tmp_path / "wrappers" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def recorder(folder: Path, name: str) -> Path:
    """A stand-in for a program that records its arguments, one per line, in <name>.calls."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" >> "{folder}/{name}.calls"\necho --- >> "{folder}/{name}.calls"\n')
    path.chmod(0o755)
    return path


def test_ssh_wrapper_puts_the_run_settings_before_the_remote_command(tmp_path):
    ssh = wrapper(tmp_path, "ssh")
    fake = tmp_path / "bin"
    recorder(fake, "ssh")
    env = {"PATH": f"{ssh.parent}:{fake}:/usr/bin:/bin", "DLOBD_MMLSPARK_REMOTE_ENV": "export A=1; export B='x y'"}
    subprocess.run([str(ssh), "-i", "/k", "u@h", "''time mpirun --npernode 2 cntk configFile=/w/b.cntk''"],
                   env=env, check=True)
    calls = (fake / "ssh.calls").read_text().split("---\n")[0].splitlines()
    assert calls == ["-i", "/k", "u@h", "export A=1; export B='x y'; ''time mpirun --npernode 2 cntk configFile=/w/b.cntk''"]
    # without the run's settings (the hosts' own ssh calls) it passes everything through
    subprocess.run([str(ssh), "h2", "true"], env={"PATH": env["PATH"]}, check=True)
    assert (fake / "ssh.calls").read_text().split("---\n")[1].splitlines() == ["h2", "true"]


def test_mpirun_wrapper_spreads_the_working_directory_and_runs_over_every_host(tmp_path):
    mpirun = wrapper(tmp_path, "mpirun")
    fake = tmp_path / "bin"
    for name in ("ssh", "scp"):
        recorder(fake, name)
    mpi_home = tmp_path / "ompi"
    recorder(mpi_home / "bin", "mpirun")
    work = tmp_path / "work" / "run1"
    work.mkdir(parents=True)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "DLOBD_MMLSPARK_MPI_HOME": str(mpi_home),
           "DLOBD_MMLSPARK_HOSTS": "192.0.2.11 192.0.2.12", "DLOBD_MMLSPARK_BTL": "self,sm,openib",
           "DLOBD_MMLSPARK_TCP_IF": "", "DLOBD_MMLSPARK_DEVICE_ID": "-1"}
    subprocess.run([str(mpirun), "--npernode", "2", "cntk", f"configFile={work}/baseConfig.cntk",
                    f"configFile={work}/overrideConfig.cntk"], env=env, check=True)
    assert (work / "dlobd-hostfile").read_text() == "192.0.2.11 slots=2\n192.0.2.12 slots=2\n"
    scp = (fake / "scp.calls").read_text().split("---\n")
    assert [c.splitlines()[-1] for c in scp if c] == [f"192.0.2.11:{work.parent}/", f"192.0.2.12:{work.parent}/"]
    run = (mpi_home / "bin" / "mpirun.calls").read_text().splitlines()
    assert run[:6] == ["--hostfile", f"{work}/dlobd-hostfile", "--mca", "btl", "self,sm,openib", "--tag-output"]
    assert run[-3:] == [f"configFile={work}/overrideConfig.cntk", "deviceId=-1", "---"]
    assert "--npernode" in run and "cntk" in run


# ---------------------------------------------------------------- CNTK releases' real logs

@pytest.mark.parametrize("a, b, reason", [
    ("cntk-2.0rc2-brainscript-convnet-mnist", "cntk-2.5-python-progressprinter-table",
     "the Python API's progress lines and the cntk executable's epoch lines"),
    ("cntk-2.4-python-convnet-mnist-batchai", "cntk-2.5-python-progressprinter-table",
     "line 2: CNTK chooses its device a second time (line 1 first)"),
    ("cntk-2.0rc2-brainscript-convnet-mnist", "cntk-2.4-python-convnet-mnist-batchai", "epoch 1 of 40 in a run of 3"),
    ("cntk-2.0rc2-brainscript-convnet-mnist", "cntk-2.5-python-distributed-cifar10-evaluation-batchai",
     "line 72: the Python API's progress lines and the cntk executable's epoch lines (line 21)"),
])
def test_two_real_cntk_logs_interleaved_are_unparseable(a, b, reason):
    r = mmlspark.parse(reallogs.interleaved(reallogs.lines("mmlspark", a), reallogs.lines("mmlspark", b)))
    assert r.status == "unparseable" and reason in r.reason


def test_progressprinter_s_finished_evaluation_is_the_test_error():
    r = mmlspark.parse("".join(reallogs.lines("mmlspark", "cntk-2.5-python-distributed-cifar10-evaluation-batchai")))
    assert r.status == "ok" and not r.finished and "no 'Finished Epoch' line" in r.reason
    # `metric = 38.14% * 10000`: the classification error of the 10000 test images
    assert values(r, "top1_accuracy", epoch=None) == [pytest.approx(0.6186)] and r.meta["test_records"] == 10000


# two evaluations of one ProgressPrinter, as CNTK_200_GuidedTour.ipynb prints them (Microsoft/CNTK
# e9396480025b9ca457d26b6f33dd07c474c6aa04, Tutorials/); the printer numbers its summaries
FIRST_EVALUATION = "Finished Evaluation [1]: Minibatch[1-32]: metric = 8.11% * 1024;\n"
SECOND_EVALUATION = "Finished Evaluation [2]: Minibatch[1-32]: metric = 8.11% * 1024;\n"


def test_one_printer_s_evaluations_in_order_and_out_of_order():
    r = mmlspark.parse(FIRST_EVALUATION + SECOND_EVALUATION)
    assert r.status == "ok" and values(r, "top1_accuracy") == [pytest.approx(0.9189)] * 2
    for text, reason in [(SECOND_EVALUATION + FIRST_EVALUATION, "line 2: evaluation 1 after evaluation 2"),
                         (FIRST_EVALUATION * 2, "line 2: evaluation 1 after evaluation 1")]:
        r = mmlspark.parse(text)
        assert r.status == "unparseable" and reason in r.reason and "concatenated" in r.reason


def test_an_evaluation_metric_not_in_percent_is_no_accuracy():
    # ProgressPrinter(metric_is_pct=False) prints `metric = {:0.6f} * {};` (progress_print.py):
    # a metric of unknown meaning, not an error share
    r = mmlspark.parse("Finished Evaluation [1]: Minibatch[1-157]: metric = 0.381400 * 10000;\n")
    assert r.status == "unparseable" and "no 'Finished Epoch' or minibatch line" in r.reason


@pytest.mark.parametrize("name", ["cntk-2.0rc2-brainscript-convnet-mnist", "cntk-2.5-python-progressprinter-table"])
def test_a_real_cntk_log_cut_mid_line_is_not_finished(name):
    r = mmlspark.parse(reallogs.cut_mid_line(reallogs.lines("mmlspark", name)))
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason
