"""Native TensorFlow in the site's TensorFlow 1.x build: the launcher's TF 1.x plans (the paper
profile's points, RDMA channels) and workloads/tensorflow/train_tf1.py, the program they run.

The program itself trains only where a TF 1.x Python is named: DLOBD_TEST_TF1_PYTHON=<python with
tensorflow 1.x and numpy> runs one run of the launcher end to end on 127.0.0.1 (skipped without).
"""

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from dlobd import ROOT, stacks
from dlobd.cluster import provenance
from dlobd.execution import runs
from dlobd import spec as dspec
from dlobd.stacks import tensorflow as tf
from dlobd.stacks.shared import tf_cluster
from datafiles import write_idx
from inventories import write_other
from pysyntax import load_program, newer_syntax
from dlobd.cluster import capabilities
from dlobd.stacks import runner
from dlobd import NotRunnable

TF1 = ROOT / "workloads" / "tensorflow" / "train_tf1.py"
SITE_TF1 = "/sw/tf1-verbs/bin/python"
EXPERIMENTS = ["rdmatf-fig1", "rdmatf-fig5", "rdmatf-fig6", "dlobd-fig9"]


def load_tf1():
    return load_program(TF1, "train_tf1_native")


# ---------------------------------------------------------------- the launcher's TF 1.x plans

def test_tf1_layout_is_parameter_servers():
    assert tf.tf1_layout({"workers": 3}, {"parameter_servers": 2}) == (3, 2, {"parameter_servers": "2"})
    # a spec without them chose the collective strategy, which TF 1.x has not: one parameter
    # server all the same, and the label says why (the paper scale's specs assume theirs)
    assert tf.tf1_layout({"nodes": 2}, {"steps": 8}) == (2, 1, {"parameter_servers": (
        f"1 ({runner.LAUNCHER_CHOICE}: TF 1.x has no collective strategy, which this scale's spec chose)")})


def test_tf1_tasks_are_the_ps_strategy_s_with_training_workers():
    """The same tasks, hosts and ports as train_distributed.py's ps strategy (TF_CONFIG alike),
    but the workers train (and exit when done): the supervisor waits for them too."""
    tasks = tf.tf1_tasks(3, 1, ["h1", "h2"], [7001, 7002, 7003, 7004, 7005])
    assert [(t.name, t.host, t.port, t.trains) for t in tasks] == [
        ("worker:0", "h1", 7001, True), ("worker:1", "h2", 7002, True), ("worker:2", "h1", 7003, True),
        ("ps:0", "h2", 7004, False), ("chief:0", "h1", 7005, True)]
    modern = tf.cluster_tasks("ps", 3, 1, ["h1", "h2"], [7001, 7002, 7003, 7004, 7005])
    assert [(t.name, t.host, t.port) for t in modern] == [(t.name, t.host, t.port) for t in tasks]
    with pytest.raises(ValueError, match="4 tasks need 4 ports"):
        tf.tf1_tasks(2, 1, ["h"], [1, 2, 3])


def test_tf1_plan_runs_train_tf1_with_the_ps_arguments():
    fixed = {"steps": 8, "warmup_steps": 2, "images_per_step": 24, "image_size": 64}
    tasks = tf.build_plan_tf1({"network": "verbs", "workers": 2}, fixed, "alexnet", 2, 1, ["127.0.0.1"],
                              [1, 2, 3, 4], SITE_TF1, "grpc+verbs", None, "/runs/a")
    assert [t.name for t in tasks] == ["worker:0", "worker:1", "ps:0", "chief:0"]
    for t in tasks:
        assert t.argv[:2] == [SITE_TF1, str(tf.WORKLOAD_TF1)]
        assert t.argv[2:] == tf.workload_args("alexnet", "ps", 2, {"workers": 2}, fixed, "grpc+verbs", None)
    args = tasks[0].argv
    assert args[args.index("--strategy") + 1] == "ps" and args[args.index("--protocol") + 1] == "grpc+verbs"
    config = json.loads(tasks[1].env["TF_CONFIG"])
    assert config == {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"], "ps": ["127.0.0.1:3"],
                                  "chief": ["127.0.0.1:4"]},
                      "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc+verbs"}
    # over ssh the same command, inside the remote shell line
    far = tf.build_plan_tf1({}, fixed, "alexnet", 2, 1, ["10.0.0.1", "10.0.0.2"], [1, 2, 3, 4], SITE_TF1,
                            "grpc", None, "/runs/a")
    remote = shlex.split(far[1].argv[-1])
    assert remote[remote.index("dlobd-task") + 1:][:2] == [SITE_TF1, str(tf.WORKLOAD_TF1)]


def paper_points():
    """(experiment, point id, point) of every native TensorFlow point at paper scale."""
    out = []
    specs = dspec.load_all(ROOT)
    for name in EXPERIMENTS:
        s = specs[name]
        axis = s.data.get("stack_axis")
        for pid, point in s.points("paper"):
            if (point.get(axis) if axis and axis in point else s.stack("paper")) == "tensorflow":
                out.append((name, pid, point))
    return out


PAPER_POINTS = paper_points()


def test_the_paper_points_are_fig1_5_6_and_fig9_s_tensorflow_side():
    assert [(e, p) for e, p, _ in PAPER_POINTS] == [
        ("rdmatf-fig1", "network-eth-1g_workers-1"), ("rdmatf-fig1", "network-eth-1g_workers-2"),
        ("rdmatf-fig1", "network-eth-1g_workers-3"),
        ("rdmatf-fig5", "network-eth-1g"), ("rdmatf-fig5", "network-ipoib"), ("rdmatf-fig5", "network-rdma"),
        ("rdmatf-fig6", "network-rdma_nodes-1"), ("rdmatf-fig6", "network-rdma_nodes-2"),
        ("rdmatf-fig6", "network-rdma_nodes-4"), ("rdmatf-fig6", "network-rdma_nodes-8"),
        ("dlobd-fig9", "framework-tensorflow_network-ipoib"), ("dlobd-fig9", "framework-tensorflow_network-rdma")]


@pytest.fixture
def paper_site(tmp_path, monkeypatch):
    """The paper profile with its TF 1.x build, on eight workers with Ethernet (1 Gb/s) and IPoIB addresses."""
    settings = {"DLOBD_PROFILE": "paper", "DLOBD_TF_RDMA_PYTHON": SITE_TF1}
    workers = [f"10.1.0.{i}" for i in range(1, 9)]
    data = tmp_path / "data"
    write_idx(data / "mnist", 20, 10)
    monkeypatch.setattr(provenance, "stack_setting", lambda name: settings.get(name))
    monkeypatch.setattr(provenance, "present", lambda path: bool(path))
    monkeypatch.setattr(provenance, "workers", lambda gpu=False: list(workers))
    monkeypatch.setattr(provenance, "ethernet_addresses", lambda: {w: w.replace("10.1.", "10.2.") for w in workers})
    monkeypatch.setattr(provenance, "ethernet_gbps", lambda: {w: 1.0 for w in workers})
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_PREFIX": "/sw/dlobd"})
    monkeypatch.setattr(capabilities, "missing", lambda needs: [])
    monkeypatch.setattr("dlobd.cluster.hadoop.stack_env", lambda: {"DLOBD_PYTHON": "/sw/dlobd/python/bin/python",
                                                          "DLOBD_DATA_DIR": str(data)})
    return settings


def paper_context(tmp_path, experiment, point):
    data = dspec.load_all(ROOT)[experiment].data
    scale = data["scales"]["paper"]
    return runner.RunContext(spec=data, scale="paper", cluster="local", point=point,
                           attempt_dir=tmp_path / "runs" / "attempt-001", runs_dir=tmp_path / "runs",
                           fixed=dspec.settings(data, "paper")[0], time_limit_s=scale.get("time_limit_s"),
                           dry_run=True)


def remote_command(argv):
    """The program and its arguments of a task started over ssh."""
    assert argv[0] == "ssh"
    remote = shlex.split(argv[-1])
    return remote[remote.index("dlobd-task") + 1:]


@pytest.mark.parametrize("experiment, pid, point", PAPER_POINTS, ids=[f"{e}:{p}" for e, p, _ in PAPER_POINTS])
def test_every_paper_point_runs_train_tf1_in_the_site_tf1_build(tmp_path, paper_site, experiment, pid, point):
    ctx = paper_context(tmp_path, experiment, point)
    result = tf.launch(ctx)
    assert result.status == "dry run", result.reason
    assert not (tmp_path / "runs").exists()
    processes = result.extra["processes"]
    # fig9: fixed workers 3 (of 4 nodes); rdmatf-fig5: 3 assumed (as Fig. 1's most)
    workers = int(point.get("workers", point.get("nodes", 3)))
    rdma = point["network"] == "rdma"
    if experiment == "rdmatf-fig1" and workers == 1:
        # the paper's single-node TensorFlow: one process, no TF cluster, no strategy
        [local] = processes
        assert local["name"] == "local:0" and not any(a.startswith("TF_CONFIG=") for a in shlex.split(local["command"][-1]))
        command = remote_command(local["command"])
        assert command[:2] == [SITE_TF1, str(tf.WORKLOAD_TF1)] and "--strategy" not in command
        assert command[command.index("--steps") + 1] == "300"
        assert result.labels["strategy"].startswith("local: one process without a TF cluster")
        return
    assert [p["name"] for p in processes] == [f"worker:{i}" for i in range(workers)] + ["ps:0", "chief:0"]
    # stated (fig9) or assumed by the spec (the rdmatf specs): the value, never the launcher's pick
    assert result.labels["parameter_servers"] == "1"
    for p in processes:
        command = remote_command(p["command"])  # every task on a worker host, over ssh
        assert command[:2] == [SITE_TF1, str(tf.WORKLOAD_TF1)], p
        assert str(tf.WORKLOAD) not in " ".join(p["command"])
        args = command[2:]
        assert args[args.index("--strategy") + 1] == "ps"
        assert args[args.index("--protocol") + 1] == ("grpc+verbs" if rdma else "grpc")
        if experiment == "dlobd-fig9":
            assert args[args.index("--model") + 1] == "mnist_softmax"
            assert args[args.index("--batch-size") + 1] == "128"
            assert args[args.index("--data-dir") + 1] == str(tmp_path / "data" / "mnist")
            assert "--steps" not in args  # one pass over the training set per epoch
        else:
            assert args[args.index("--model") + 1] == "alexnet"
            assert args[args.index("--batch-size") + 1] == "24"
            assert args[args.index("--steps") + 1] == "300"
            assert args[args.index("--image-size") + 1] == "224"
            assert "--data-dir" not in args
        config = json.loads(next(a for a in shlex.split(p["command"][-1]) if a.startswith("TF_CONFIG="))[10:])
        assert config["rpc_layer"] == ("grpc+verbs" if rdma else "grpc")
        assert sorted(config["cluster"]) == ["chief", "ps", "worker"] and len(config["cluster"]["worker"]) == workers
    # Ethernet points on the workers' Ethernet addresses, IPoIB and RDMA on the cluster addresses
    hosts = {p["host"] for p in processes}
    assert hosts <= {f"10.{2 if point['network'] == 'eth-1g' else 1}.0.{i}" for i in range(1, 9)}


def test_a_paper_point_without_a_tf1_names_both_settings(tmp_path, paper_site):
    del paper_site["DLOBD_TF_RDMA_PYTHON"]
    with pytest.raises(NotRunnable, match="needs DLOBD_TF_RDMA_PYTHON or DLOBD_TFOS_PYTHON: the paper profile"):
        tf.launch(paper_context(tmp_path, "rdmatf-fig1", {"network": "eth-1g", "workers": 2}))


def test_a_paper_grpc_point_without_the_rdma_build_runs_in_tfos_python(tmp_path, paper_site):
    """No site TF 1.x build: a gRPC point runs train_tf1.py in TensorFlowOnSpark's Python (its
    TensorFlow 1.4 has gRPC), labelled so; an RDMA point still needs the build."""
    del paper_site["DLOBD_TF_RDMA_PYTHON"]
    paper_site["DLOBD_TFOS_PYTHON"] = "/sw/tfos/bin/python2.7"
    result = tf.launch(paper_context(tmp_path, "rdmatf-fig1", {"network": "eth-1g", "workers": 2}))
    assert result.status == "dry run", result.reason
    commands = [remote_command(p["command"]) for p in result.extra["processes"]]
    assert all(c[:2] == ["/sw/tfos/bin/python2.7", str(tf.WORKLOAD_TF1)] for c in commands)
    assert result.labels["tf_build"] == tf_cluster.TFOS_BUILD
    assert sorted(p["name"].split(":")[0] for p in result.extra["processes"]) == ["chief", "ps", "worker", "worker"]


def test_the_modern_profile_keeps_train_distributed(tmp_path, paper_site):
    """gRPC on the modern profile: the stacks' Python and train_distributed.py, as before."""
    paper_site["DLOBD_PROFILE"] = "modern"
    ctx = paper_context(tmp_path, "rdmatf-fig1", {"network": "eth-1g", "workers": 2})
    result = tf.launch(ctx)
    assert result.status == "dry run", result.reason
    commands = [remote_command(p["command"]) for p in result.extra["processes"]]
    assert all(c[:2] == ["/sw/dlobd/python/bin/python", str(tf.WORKLOAD)] for c in commands)
    # the paper scale's assumed parameter server holds for the modern TensorFlow too
    assert [p["name"] for p in result.extra["processes"]] == ["worker:0", "worker:1", "ps:0", "chief:0"]


def test_paper_points_of_an_inventory_s_cluster(tmp_path):
    """Through dlobd.execution.dryrun on an inventory's cluster (five workers, DLOBD_TF_RDMA_PYTHON given):
    the native TensorFlow paper points that fit run train_tf1.py in the site's build over ssh."""
    from test_dryrun import inventory_dry_runs

    path = write_other(tmp_path / "inventory", ethernet_gbps=1)
    done = inventory_dry_runs(path, tmp_path, EXPERIMENTS)
    native = {k: r for k, r in done.items() if (k[0], k[1]) in {(e, p) for e, p, _ in PAPER_POINTS}}
    assert len(native) == len(PAPER_POINTS)
    ran = 0
    for (eid, pid), r in native.items():
        if r.status != "dry run":
            continue
        ran += 1
        for p in r.extra["processes"]:
            assert remote_command(p["command"])[:2] == ["/sw/tf1-verbs/bin/python", str(tf.WORKLOAD_TF1)], (eid, pid)
    # fig1's three, fig5's three (3 workers assumed), fig6's up to 4 nodes, fig9's two; fig6's 8
    # nodes do not fit
    assert ran == 11, {k: r.reason for k, r in native.items()}
    assert native["rdmatf-fig5", "network-rdma"].labels["assumed"]["workers"].startswith(
        "3, assumed, not stated by the paper (Fig. 1")
    assert "needs 8 worker nodes" in native["rdmatf-fig6", "network-rdma_nodes-8"].reason


# ---------------------------------------------------------------- train_tf1.py without TensorFlow

@pytest.mark.parametrize("program", [TF1, TF1.with_name("dlobd_tf1.py")], ids=lambda p: p.name)
def test_train_tf1_is_python_3_5_and_2_7_syntax(program):
    source = program.read_text()
    tree = ast.parse(source, feature_version=(3, 5))
    assert newer_syntax(tree) == []
    assert "from __future__ import absolute_import, division, print_function" in source
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    # of the project's helpers only the TF 1.x one (dlobd_tf.py: Python 3.6+, TensorFlow 2, psutil)
    assert {m for m in imported if m.startswith(("dlobd", "psutil"))} <= {"dlobd_tf1"}


def old_pythons():
    """The Pythons 2.7 and 3.5 that run here (pyenv's 2.7.18 where it is installed; a pyenv shim
    of a version not selected does not run)."""
    found = []
    for candidate in ("/root/.pyenv/versions/2.7.18/bin/python", "python2.7", "python3.5"):
        path = shutil.which(candidate)
        if path and path not in found and subprocess.run(
                [path, "-c", "import sys; assert sys.version_info[:2] in ((2, 7), (3, 5))"],
                capture_output=True).returncode == 0:
            found.append(path)
    return found


@pytest.mark.parametrize("python", old_pythons() or [None])
def test_train_tf1_compiles_in_an_old_python_where_one_is_installed(tmp_path, python):
    if python is None:
        pytest.skip("no Python 2.7 or 3.5 here")
    copy = tmp_path / "train_tf1.py"
    copy.write_bytes(TF1.read_bytes())
    done = subprocess.run([python, "-m", "py_compile", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_train_tf1_s_lines_are_what_the_parser_reads(capsys):
    """The program's line helper against the native TensorFlow parser: a run of a chief, a worker
    and a parameter server parses finished, the chief leading the phases."""
    w = load_tf1()
    for task in ("chief:0", "worker:0", "worker:1"):
        trains = task != "chief:0"  # the chief watches the global step
        w.dlobd_line("start", [("task", task), ("workload", "tensorflow"), ("model", "alexnet"),
                               ("strategy", "ps"), ("num_workers", 2), ("num_ps", 1), ("tensorflow", "1.4.0"),
                               ("data_loading_s", None)])
        w.dlobd_line("warmup", [("task", task), ("warmup_steps", 2), ("warmup_s", 3.5)])
        for step in (4, 8):
            w.dlobd_line("step", [("task", task), ("step", step), ("epoch", 1), ("wall_clock_s", step / 4.0),
                                  ("loss", 6.9 if trains else None), ("images_per_s", 96.0),
                                  ("worker_images_per_s", 48.0 if trains else None), ("steps_per_s", 4.0)])
        w.dlobd_line("epoch", [("task", task), ("step", 8), ("epoch", 1), ("wall_clock_s", 2.1),
                               ("epoch_time_s", 2.05), ("top1_accuracy", None)])
        w.dlobd_line("summary", [("task", task), ("step", 8), ("epoch", 1), ("train_time_s", 2.05),
                                 ("images_per_s", 93.7), ("worker_images_per_s", 46.8 if trains else None),
                                 ("steps_per_s", 3.9), ("end_to_end_s", 9.5)])
    w.dlobd_line("start", [("task", "ps:0"), ("workload", "tensorflow"), ("role", "server"), ("protocol", "grpc")])
    r = tf.parse(capsys.readouterr().out)
    assert (r.status, r.finished) == ("ok", True), r.reason
    phases = {(x["phase"], x["task"]): x["value"] for x in r.rows if x["metric"] == "time_breakdown_s"}
    assert phases == {("training", "chief:0"): 2.0, ("tf_startup", "chief:0"): 7.5}
    assert {x["metric"] for x in r.rows} >= {"images_per_s", "worker_images_per_s", "steps_per_s", "loss",
                                             "train_time_s", "end_to_end_s", "epoch_time_s", "wall_clock_s"}
    assert r.meta["strategy"] == "ps" and r.meta["warmup_steps"] == "2"
    with pytest.raises(ValueError, match="without spaces"):
        w.dlobd_line("step", [("task", "chief 0")])


def test_train_tf1_reads_tf_config_and_refuses_what_it_cannot_run():
    w = load_tf1()
    config = {"cluster": {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]},
              "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}
    cluster, job, index = w.task_of({"TF_CONFIG": json.dumps(config)})
    assert (job, index, w.training_tasks(cluster)) == ("worker", 1, 2)
    assert w.task_of({}) == ({}, "local", 0) and w.training_tasks({}) == 1
    with pytest.raises(SystemExit, match="needs a chief, workers and parameter servers"):
        w.task_of({"TF_CONFIG": json.dumps({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})})
    with pytest.raises(SystemExit, match="not in its cluster"):
        w.task_of({"TF_CONFIG": json.dumps({**config, "task": {"type": "worker", "index": 2}})})
    with pytest.raises(SystemExit, match="not in its cluster"):
        w.task_of({"TF_CONFIG": json.dumps({**config, "task": {"type": "evaluator", "index": 0}})})
    assert w.parse_args(["--model", "alexnet", "--steps", "3"]).strategy == "ps"
    for argv in (["--model", "alexnet", "--steps", "3", "--strategy", "collective"],
                 ["--model", "alexnet"], ["--model", "alexnet", "--steps", "3", "--data-dir", "/d"],
                 ["--model", "mnist_softmax", "--steps", "3"]):
        with pytest.raises(SystemExit):
            w.parse_args(argv)
    # every model train_distributed.py has
    assert set(w.MODELS) == set(tf.MODELS.values())


def test_train_tf1_reads_the_data_sets_train_distributed_reads(tmp_path):
    w = load_tf1()
    write_idx(tmp_path / "mnist", 30, 12)
    x, y = w.load_dataset("mnist_softmax", str(tmp_path / "mnist"), "train")
    assert x.shape == (30, 4, 4, 1) and x.dtype.name == "float32" and y.tolist()[:12] == list(range(10)) + [0, 1]
    assert w.load_dataset("mnist_softmax", str(tmp_path / "mnist"), "test")[0].shape == (12, 4, 4, 1)
    cifar = tmp_path / "cifar"
    cifar.mkdir()
    record = bytes([4]) + bytes([1] * 1024 + [2] * 1024 + [3] * 1024)  # label, then R, G, B planes
    for name in w.CIFAR_FILES["train"] + w.CIFAR_FILES["test"]:
        (cifar / name).write_bytes(record * 2)
    x, y = w.load_dataset("cifar10_cnn", str(cifar), "train")
    assert x.shape == (10, 32, 32, 3) and x[0, 0, 0].tolist() == pytest.approx([1 / 255, 2 / 255, 3 / 255])
    assert y.tolist() == [4] * 10
    assert w.data_label("cifar10_cnn", str(cifar), 10) == "cifar10" and w.data_label("alexnet", None, 1000) == \
        "imagenet-synthetic"
    batches = w.Batches(x, y, 4, seed=1)
    seen = [batches.next()[0].shape for _ in range(5)]  # past the end: a new shuffle
    assert seen == [(4, 32, 32, 3)] * 5


# ---------------------------------------------------------------- a real run in a TF 1.x Python

TF1_PYTHON = os.environ.get("DLOBD_TEST_TF1_PYTHON")


@pytest.mark.skipif(not TF1_PYTHON, reason="DLOBD_TEST_TF1_PYTHON names no Python with TensorFlow 1.x (and numpy)")
@pytest.mark.parametrize("model", ["mnist_softmax", "alexnet"])
def test_a_run_of_the_launcher_in_a_tf1_python(tmp_path, monkeypatch, request, model):
    """runs.launch through the launcher, its supervisor and train_tf1.py in a TensorFlow 1.x
    Python (the paper profile's site build stands in for it), on 127.0.0.1 over grpc: two
    workers, a parameter server and the chief; the run is ok and its logs parse finished, with
    rows of every task and the chief's phases."""
    settings = {"DLOBD_PROFILE": "paper", "DLOBD_TF_RDMA_PYTHON": TF1_PYTHON}
    monkeypatch.setattr(provenance, "stack_setting", lambda name: settings.get(name))
    # the capabilities runs.launch judges are cached: not these settings' beyond this test
    capabilities.local_capabilities.cache_clear()
    request.addfinalizer(capabilities.local_capabilities.cache_clear)
    data = tmp_path / "data"
    write_idx(data / "mnist", 1200, 300)
    monkeypatch.setattr("dlobd.cluster.hadoop.stack_env", lambda: {**os.environ, "DLOBD_PYTHON": sys.executable,
                                                           "DLOBD_DATA_DIR": str(data)})
    fixed = {"parameter_servers": 1, "workers": 2}
    if model == "alexnet":  # the rdmatf specs' local settings, fewer steps
        fixed.update(steps=6, warmup_steps=1, images_per_step=8, image_size=64)
        spec = {"id": "tf1-unit", "stack": "tensorflow", "model": "alexnet", "dataset": "imagenet-synthetic"}
    else:
        fixed.update(batch=32, epochs=2)
        spec = {"id": "tf1-unit", "stack": "tensorflow", "model": "softmax-regression", "dataset": "mnist"}
    spec["scales"] = {"local": {"matrix": {"network": ["loopback"]}, "time_limit_s": 600, "fixed": fixed}}
    attempt = runs.launch(spec, "local", {"network": "loopback"}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    logs = {p.name: p.read_text() for p in (attempt / "tasks").glob("*.log")}
    assert record["status"] == "ok", (record["reason"], {n: t[-2500:] for n, t in logs.items()})
    assert sorted(logs) == ["chief-0.log", "ps-0.log", "worker-0.log", "worker-1.log"]
    assert "tensorflow-supervisor: every training task exited 0" in (attempt / "stdout.log").read_text()
    assert record["labels"]["strategy"] == "ps" and record["labels"]["parameter_servers"] == "1"
    plan_file = json.loads((attempt / tf.PLAN_FILE).read_text())
    assert {t["argv"][1] for t in plan_file["tasks"]} == {str(tf.WORKLOAD_TF1)}
    assert {t["argv"][0] for t in plan_file["tasks"]} == {TF1_PYTHON}

    parsed = stacks.parse_run("tensorflow", attempt)
    assert (parsed.status, parsed.finished) == ("ok", True), parsed.reason
    assert parsed.meta["model"] == tf.MODELS[spec["model"]] and parsed.meta["strategy"] == "ps"
    assert parsed.meta["tensorflow"].startswith("1.")
    summaries = [r for r in parsed.rows if r.get("step") is None and r["metric"] != "time_breakdown_s"]
    assert {r["task"] for r in summaries} == {"chief:0", "worker:0", "worker:1"}
    rates = {(r["task"], r["metric"]): r["value"] for r in summaries}
    assert all(rates[t, "images_per_s"] > 0 and rates[t, "train_time_s"] > 0
               for t in ("chief:0", "worker:0", "worker:1"))
    # both workers trained; the chief trains none
    assert rates["worker:0", "worker_images_per_s"] > 0 and rates["worker:1", "worker_images_per_s"] > 0
    assert ("chief:0", "worker_images_per_s") not in rates
    phases = {r["phase"]: r for r in parsed.rows if r["metric"] == "time_breakdown_s"}
    assert {r["task"] for r in phases.values()} == {"chief:0"}
    steps = {r["task"]: r["step"] for r in parsed.rows if r["metric"] == "wall_clock_s"}
    total = 6 if model == "alexnet" else 2 * (1200 // 32)
    # the cluster's global step: the run ends at the target, the last worker at most 1 step beyond it
    assert total <= max(steps.values()) <= total + 1 and steps["chief:0"] >= total
    if model == "mnist_softmax":
        assert "data_loading" in phases
        accuracy = [(r["task"], r["value"]) for r in parsed.rows if r["metric"] == "top1_accuracy"]
        assert [t for t, _ in accuracy] == ["chief:0"] * 2 and all(0 <= a <= 1 for _, a in accuracy)
    print({k: round(v, 1) for k, v in rates.items()})


PAPER_RUN = ROOT / "tests/data/logs/paper-profile/tf-1.4.0-rdmatf-fig1-grpc"


def test_the_tf1_version_is_the_one_the_tasks_printed():
    # a real run of the paper profile: rdmatf-fig1's two workers in TensorFlow 1.4.0 from PyPI
    assert tf.tf1_version(PAPER_RUN / "tasks") == "1.4.0"
    assert tf.tf1_version(ROOT / "no-such-folder") is None


def test_the_paper_profile_s_tf_1_4_run_parses_finished():
    """The same run through the native TensorFlow parser: the chief's steps of the two workers
    over gRPC, its summary, the parameter server's layout."""
    r = stacks.parse_run("tensorflow", PAPER_RUN)
    assert (r.status, r.finished) == ("ok", True), r.reason
    steps = [x["value"] for x in r.rows if x["metric"] == "steps_per_s"]
    assert steps and all(v > 0 for v in steps)
    assert (r.meta.get("strategy"), r.meta.get("tensorflow")) == ("ps", "1.4.0"), r.meta
