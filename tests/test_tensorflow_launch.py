"""The native TensorFlow launcher: task layout, TF_CONFIG, command lines (local and over
ssh), the network axis, and the supervisor on real (small, non-TF) processes."""

import dataclasses
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dlobd.cluster import provenance
from dlobd.execution import runs
from dlobd.cluster.remote import free_ports, ssh_argv
from dlobd.stacks import tensorflow as tf
from dlobd.stacks.shared import tf_cluster
from dlobd.cluster import capabilities
from dlobd import NotRunnable

PY = "/opt/stack/bin/python"


def ps_plan(hosts, point=None, fixed=None, protocol="grpc", data_dir=None):
    fixed = fixed or {"parameter_servers": 1, "batch": 8, "steps": 4, "image_size": 32}
    point = point or {"network": "loopback", "nodes": 2}
    strategy, workers, ps = tf.layout(point, fixed)
    return tf.build_plan(point, fixed, "resnet50", hosts, list(range(20000, 20000 + workers + ps + 1)),
                         PY, protocol, data_dir, "/runs/a/attempt-001")


def test_layout_from_the_spec():
    assert tf.layout({"nodes": 2}, {"parameter_servers": 1}) == ("ps", 2, 1)
    assert tf.layout({"workers": 3}, {"parameter_servers": 2}) == ("ps", 3, 2)
    assert tf.layout({"batch": 4}, {"workers": 2, "parameter_servers": 1}) == ("ps", 2, 1)
    assert tf.layout({"nodes": 2}, {}) == ("collective", 2, 0)
    assert tf.layout({}, {}) == ("collective", 1, 0)
    with pytest.raises(ValueError, match="not a whole number"):
        tf.layout({"nodes": "two"}, {})
    with pytest.raises(ValueError, match="at least one parameter server"):
        tf.layout({"nodes": 1}, {"parameter_servers": 0})


def test_ps_cluster_tf_config_and_command():
    tasks = ps_plan(["127.0.0.1"])
    assert [t.name for t in tasks] == ["worker:0", "worker:1", "ps:0", "chief:0"]
    assert [t.trains for t in tasks] == [False, False, False, True]  # only the chief trains
    assert len({t.port for t in tasks}) == 4
    chief = tasks[-1]
    config = json.loads(chief.env["TF_CONFIG"])
    assert config == {"cluster": {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"],
                                  "ps": ["127.0.0.1:20002"], "chief": ["127.0.0.1:20003"]},
                      "task": {"type": "chief", "index": 0}, "rpc_layer": "grpc"}
    assert json.loads(tasks[1].env["TF_CONFIG"])["task"] == {"type": "worker", "index": 1}
    assert chief.argv[:2] == [PY, str(tf.WORKLOAD)]
    args = chief.argv[2:]
    assert args[args.index("--strategy") + 1] == "ps"
    assert args[args.index("--batch-size") + 1] == "8"
    assert args[args.index("--steps") + 1] == "4"
    assert args[args.index("--image-size") + 1] == "32"
    assert args[args.index("--log-every") + 1] == "8"  # 4 steps queued per worker per line
    assert "--data-dir" not in args  # ImageNet-shaped data is made in the graph
    assert all(t.argv == chief.argv for t in tasks)  # one command line, TF_CONFIG tells them apart
    assert chief.log == "tasks/chief-0.log"


def test_collective_workers_all_train():
    fixed = {"batch": 4, "steps": 3}
    tasks = tf.build_plan({"nodes": 2}, fixed, "alexnet", ["127.0.0.1"], [1, 2], PY, "grpc", None, "/x")
    assert [(t.name, t.trains) for t in tasks] == [("worker:0", True), ("worker:1", True)]
    assert json.loads(tasks[0].env["TF_CONFIG"])["cluster"] == {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    assert tasks[0].argv[tasks[0].argv.index("--log-every") + 1] == "1"


def test_batch_and_data_set_arguments():
    # the rdmatf specs give images per step; an axis `batch` wins over fixed values
    args = tf.workload_args("alexnet", "ps", 1, {}, {"images_per_step": 24, "steps": 8}, "grpc", None)
    assert args[args.index("--batch-size") + 1] == "24"
    args = tf.workload_args("alexnet", "ps", 1, {"batch": 4}, {"batch": 8, "steps": 8}, "grpc", None)
    assert args[args.index("--batch-size") + 1] == "4"
    args = tf.workload_args("mnist_softmax", "ps", 2, {}, {"batch": 128, "epochs": 1, "workers": 2,
                                                           "parameter_servers": 1, "device": "cpu"},
                            "grpc", "/data/mnist")
    assert args[args.index("--data-dir") + 1] == "/data/mnist" and "--steps" not in args
    with pytest.raises(ValueError, match="needs fixed `steps`"):
        tf.workload_args("resnet50", "ps", 1, {}, {"batch": 8}, "grpc", None)
    with pytest.raises(ValueError, match="does not know.*'optimizer'"):
        tf.workload_args("resnet50", "ps", 1, {}, {"batch": 8, "steps": 2, "optimizer": "adam"}, "grpc", None)
    with pytest.raises(ValueError, match="no batch size"):
        tf.workload_args("resnet50", "ps", 1, {}, {"steps": 2}, "grpc", None)


def test_free_ports_are_distinct():
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(1024 <= p < 65536 for p in ports)


def test_multi_host_tasks_go_round_robin_over_ssh_in_their_hosts_own_environment(monkeypatch):
    monkeypatch.setattr(provenance, "prefix", lambda: Path("/sw/dlobd"))
    hosts = ["10.0.0.1", "10.0.0.2"]
    tasks = ps_plan(hosts)
    # the chief beside worker 0, as TF's examples place it: the nodes are the workers' and the ps's
    assert [(t.name, t.host) for t in tasks] == [("worker:0", "10.0.0.1"), ("worker:1", "10.0.0.2"),
                                                ("ps:0", "10.0.0.1"), ("chief:0", "10.0.0.1")]
    chief = tasks[-1]
    assert chief.env == {}  # everything goes on the remote command line
    assert chief.argv[:2] == ["ssh", "-o"] and chief.argv[-2] == "10.0.0.1"
    assert "BatchMode=yes" in chief.argv
    remote = shlex.split(chief.argv[-1])
    # the folder is made where the runs folder is not shared; the host's own dlobd-env.sh, not
    # the launch host's variables, gives the task its addresses and paths
    assert remote[:11] == ["mkdir", "-p", "/runs/a/attempt-001", "&&", "cd", "/runs/a/attempt-001", "&&",
                           ".", "/sw/dlobd/etc/dlobd-env.sh", "&&", "exec"]
    assert remote[11] == "env"
    assigned = dict(w.split("=", 1) for w in remote[12:14])
    assert set(assigned) == {"TF_CONFIG", "TF_CPP_MIN_LOG_LEVEL"}  # only the run's own variables
    config = json.loads(assigned["TF_CONFIG"])
    assert config["task"] == {"type": "chief", "index": 0}
    assert config["cluster"]["worker"] == ["10.0.0.1:20000", "10.0.0.2:20001"]
    assert config["cluster"]["chief"] == ["10.0.0.1:20003"]
    assert remote[14:16] == ["bash", "-c"]
    assert remote[17:20] == ["dlobd-task", PY, str(tf.WORKLOAD)]
    assert remote[20:] == tf.workload_args("resnet50", "ps", 2, {"nodes": 2}, {
        "parameter_servers": 1, "batch": 8, "steps": 4, "image_size": 32}, "grpc", None)


def test_loopback_keeps_the_tasks_on_this_host():
    from dlobd.spec import networks

    workers = ["10.0.0.1", "10.0.0.2"]
    assert tf.task_hosts(networks.resolve("tensorflow", "loopback"), workers) == ["127.0.0.1"]
    assert tf.task_hosts(networks.resolve("tensorflow", "eth-1g-emulated"), workers) == workers
    assert tf.task_hosts(networks.resolve("tensorflow", "eth-1g-emulated"), []) == ["127.0.0.1"]


def _remote_as_local(argv):
    """The remote shell command of an ssh task, run here with bash instead of over ssh."""
    return ["bash", "-c", argv[-1]]


@pytest.fixture
def host_env(tmp_path, monkeypatch):
    """The prefix of a host whose dlobd-env.sh names it 10.9.9.9."""
    prefix = tmp_path / "host-prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc" / "dlobd-env.sh").write_text(
        "export DLOBD_CLUSTER_ADDRESS=10.9.9.9\nexport SPARK_LOCAL_IP=$DLOBD_CLUSTER_ADDRESS\n")
    monkeypatch.setattr(provenance, "prefix", lambda: prefix)


def test_remote_task_ends_when_its_connection_does(tmp_path, host_env):
    # the keep-alive wrapper of an ssh task, run locally: EOF on stdin (the supervisor
    # closing the pipe, or the ssh client dying) ends the task
    argv = ssh_argv("h", str(tmp_path), {"X": "1"}, ["sleep", "60"])
    p = subprocess.Popen(_remote_as_local(argv), stdin=subprocess.PIPE)
    time.sleep(0.5)
    assert p.poll() is None
    start = time.monotonic()
    p.stdin.close()
    p.wait(timeout=10)
    assert time.monotonic() - start < 5


def test_remote_task_passes_env_cwd_and_exit_status(tmp_path, host_env, monkeypatch):
    script = ("import os, sys; print(os.getcwd(), os.environ['TF_CONFIG'], os.environ['DLOBD_CLUSTER_ADDRESS'], "
              "os.environ['SPARK_LOCAL_IP']); sys.exit(3)")
    # the launch host's own identity does not reach the task: its host's dlobd-env.sh gives it
    monkeypatch.setenv("DLOBD_CLUSTER_ADDRESS", "10.1.1.1")
    cwd = tmp_path / "not-shared" / "attempt-001"  # a host without the runs folder gets it made
    argv = ssh_argv("h", str(cwd), {"TF_CONFIG": '{"a": 1}'}, [sys.executable, "-c", script])
    # stdin stays open, as the supervisor keeps it while the task runs
    p = subprocess.Popen(_remote_as_local(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.wait(timeout=30) == 3
    assert p.stdout.read().strip() == f'{cwd} {{"a": 1}} 10.9.9.9 10.9.9.9'
    p.stdin.close()


def test_rdma_channels_are_not_runnable_here():
    if not capabilities.missing(["tf-rdma"]):
        pytest.skip("this machine has a TF build with RDMA channels")
    with pytest.raises(NotRunnable) as e:
        tf.transport("verbs")
    assert "grpc+verbs" in str(e.value) and "needs tf-rdma" in str(e.value)
    with pytest.raises(NotRunnable, match="grpc\\+mpi.*needs tf-rdma"):
        tf.transport("mpi")
    with pytest.raises(NotRunnable, match="needs rdma-grpc"):
        tf.transport("grpc+rdma")
    link, python = tf.transport("loopback")
    assert (link.settings["protocol"], python) == ("grpc", None)


def test_rdma_channel_with_a_tf_build_that_has_it(monkeypatch, tmp_path):
    rdma_python = tmp_path / "python"
    rdma_python.write_text("")
    monkeypatch.setenv("DLOBD_TF_RDMA_PYTHON", str(rdma_python))
    monkeypatch.setattr(capabilities, "missing", lambda needs: [])
    link, tf1 = tf.transport("verbs")
    assert (link.settings["protocol"], tf1.python) == ("grpc+verbs", str(rdma_python))
    tasks = ps_plan(["127.0.0.1"], protocol=link.settings["protocol"])
    assert json.loads(tasks[0].env["TF_CONFIG"])["rpc_layer"] == "grpc+verbs"
    assert tasks[0].argv[tasks[0].argv.index("--protocol") + 1] == "grpc+verbs"


# ---------------------------------------------------------------- supervisor on real processes


def write_plan(tmp_path, tasks):
    (tmp_path / "tasks").mkdir()
    (tmp_path / tf.PLAN_FILE).write_text(json.dumps({"tasks": [
        {"job": job, "index": i, "host": "127.0.0.1", "port": 0, "trains": trains,
         "argv": [sys.executable, "-c", code], "env": {}} for job, i, trains, code in tasks]}))
    return tmp_path / tf.PLAN_FILE


SERVE = "import time; print('serving', flush=True); time.sleep(120)"


def test_supervisor_waits_for_training_and_ends_the_servers(tmp_path, capsys):
    path = write_plan(tmp_path, [("ps", 0, False, SERVE), ("chief", 0, True,
                                                             "import time; time.sleep(1); print('done')")])
    start = time.monotonic()
    assert tf.supervise(path, poll_s=0.05) == 0
    assert time.monotonic() - start < 10
    out = capsys.readouterr().out
    assert "stopped ps:0 (was killed by SIGTERM)" in out and "every training task exited 0" in out
    assert (tmp_path / "tasks" / "ps-0.log").read_text() == "serving\n"
    assert (tmp_path / "tasks" / "chief-0.log").read_text() == "done\n"


def test_supervisor_names_the_worker_that_failed(tmp_path, capsys):
    path = write_plan(tmp_path, [("worker", 0, True, "import time; time.sleep(30)"),
                                 ("worker", 1, True, "import sys; sys.exit(3)")])
    start = time.monotonic()
    assert tf.supervise(path, poll_s=0.05) == 1
    assert time.monotonic() - start < 10  # worker:0 was not waited for
    out = capsys.readouterr().out
    assert tf.SUPERVISOR_FAILED + "worker:1 exited with status 3 (log tasks/worker-1.log)" in out
    (tmp_path / "stdout.log").write_text(out)
    assert tf_cluster.supervisor_reason(tmp_path / "stdout.log") == "worker:1 exited with status 3 (log tasks/worker-1.log)"


def test_supervisor_fails_when_a_server_dies_before_training_ends(tmp_path, capsys):
    path = write_plan(tmp_path, [("ps", 0, False, "pass"), ("chief", 0, True, "import time; time.sleep(30)")])
    assert tf.supervise(path, poll_s=0.05) == 1
    assert "failed: ps:0 exited with status 0 before training ended" in capsys.readouterr().out


def test_launch_records_the_failed_task(monkeypatch, tmp_path):
    """runs.launch through the launcher and the supervisor, with a stand-in workload (no TF):
    worker:1 fails, the run is `failed` and its reason names the task."""
    workload = tmp_path / "workload.py"
    workload.write_text(
        "import json, os, sys, time\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "if task['type'] == 'worker' and task['index'] == 1:\n"
        "    sys.exit(4)\n"
        "time.sleep(60)\n")
    monkeypatch.setattr(tf, "WORKLOAD", workload)
    monkeypatch.setattr("dlobd.cluster.hadoop.stack_env", lambda: {**__import__("os").environ,
                                                           "DLOBD_PYTHON": sys.executable})
    spec = {"id": "tf-unit", "stack": "tensorflow", "model": "resnet50",
            "scales": {"local": {"matrix": {"nodes": [2]}, "dataset": "imagenet-synthetic",
                                 "time_limit_s": 60,
                                 "fixed": {"parameter_servers": 1, "batch": 2, "steps": 1}}}}
    attempt = runs.launch(spec, "local", {"nodes": 2}, tmp_path / "runs")
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "failed"
    assert "worker:1 exited with status 4 (log tasks/worker-1.log)" in record["reason"]
    assert record["labels"]["strategy"] == "ps" and record["labels"]["data"] == "synthetic"
    assert sorted(p.name for p in (attempt / "tasks").iterdir()) == [
        "chief-0.log", "ps-0.log", "worker-0.log", "worker-1.log"]
    plan_file = json.loads((attempt / tf.PLAN_FILE).read_text())
    assert {t["job"] for t in plan_file["tasks"]} == {"chief", "ps", "worker"}
    assert Path(record["command"][-1]) == (attempt / tf.PLAN_FILE).resolve()


def test_on_the_paper_profile_grpc_runs_in_a_tf1(monkeypatch, tmp_path):
    """The paper profile's stacks' Python has no TensorFlow: a gRPC point runs in the TF 1.x build
    that has the RDMA channels (the papers compared the channels within one build), else in
    TensorFlowOnSpark's Python, and with neither it is not runnable, naming both settings."""
    settings = {"DLOBD_PROFILE": "paper"}
    monkeypatch.setattr(provenance, "stack_setting", lambda name: settings.get(name))
    with pytest.raises(NotRunnable, match="needs DLOBD_TF_RDMA_PYTHON or DLOBD_TFOS_PYTHON: the paper profile"):
        tf.transport("loopback")
    settings["DLOBD_TFOS_PYTHON"] = str(tmp_path / "python2.7")
    link, tf1 = tf.transport("loopback")
    assert (link.settings["protocol"], tf1) == ("grpc", tf_cluster.TF1Build(str(tmp_path / "python2.7"),
                                                                            tf_cluster.TFOS_BUILD))
    settings["DLOBD_TF_RDMA_PYTHON"] = str(tmp_path / "python")
    link, tf1 = tf.transport("loopback")
    assert (link.settings["protocol"], tf1) == ("grpc", tf_cluster.TF1Build(str(tmp_path / "python"),
                                                                            tf_cluster.RDMA_BUILD))
    settings["DLOBD_PROFILE"] = "modern"
    assert tf.transport("loopback")[1] is None


def test_a_gpu_point_s_build_that_cannot_import_tensorflow_is_refused_and_a_dry_run_asks_none(tmp_path):
    """The launch asks the build's own Python: one without TensorFlow (this machine's system
    Python) is refused with its import error; a dry run starts no Python at all."""
    with pytest.raises(NotRunnable, match=r"^/usr/bin/python3: cannot import TensorFlow to ask whether "
                                          r"it has CUDA: ModuleNotFoundError: No module named 'tensorflow'"):
        tf_cluster.refuse_cpu_only("/usr/bin/python3", "DLOBD_PYTHON", {"PATH": "/usr/bin"}, dry_run=False)
    tf_cluster.refuse_cpu_only(str(tmp_path / "no-such-python"), "DLOBD_PYTHON", {}, dry_run=True)
    with pytest.raises(NotRunnable, match="no-such-python: cannot ask its TensorFlow"):
        tf_cluster.refuse_cpu_only(str(tmp_path / "no-such-python"), "DLOBD_PYTHON", {}, dry_run=False)


# ---------------------------------------------------------------- TF's MPI channel: one mpirun


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_grpc_mpi_tasks_run_as_the_ranks_of_one_mpirun(tmp_path, monkeypatch, capsys, mpi_name):
    """A real mpirun of each MPI family starts a parameter server and two workers on this host as
    ranks, each in the stack environment of dlobd-env.sh; each rank's lines reach its task's log
    untagged; the run ends when the workers have, and mpirun ends the server with it."""
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc" / "dlobd-env.sh").write_text("export FROM_ENV_FILE=sourced\n")
    monkeypatch.setenv("DLOBD_PREFIX", str(prefix))
    marker = f"serving-{tmp_path.name}"
    programs = {("ps", 0): f"import time, sys; print('{marker}', flush=True); time.sleep(120)",
                ("worker", 0): "import os; print('w0', os.environ['FROM_ENV_FILE'], os.environ['OWN'])",
                ("worker", 1): "import os, time; time.sleep(1); print('w1', os.getcwd())"}
    tasks = [tf_cluster.Task(job, i, "localhost", 0, job == "worker") for job, i in programs]
    for t in tasks:
        tf_cluster.place(t, [sys.executable, "-c", programs[(t.job, t.index)]], {"OWN": t.name},
                         str(tmp_path), rank=True)
    entry, hostfile = tf_cluster.mpmd(mpi_name, tasks, tmp_path / tf_cluster.HOSTFILE, check=True)
    assert hostfile == ("localhost slots=3\n" if mpi_name == "openmpi" else "localhost:3\n")
    (tmp_path / tf_cluster.HOSTFILE).write_text(hostfile)
    (tmp_path / tf.PLAN_FILE).write_text(json.dumps({"tasks": [dataclasses.asdict(t) for t in tasks],
                                                     "mpi": entry}))
    assert tf.supervise(tmp_path / tf.PLAN_FILE) == 0
    out = capsys.readouterr().out
    assert "started 3 tasks as the ranks of one mpirun" in out and "every training task exited 0" in out
    logs = tmp_path / "tasks"
    assert (logs / "worker-0.log").read_text() == "w0 sourced worker:0\n"
    assert (logs / "worker-1.log").read_text() == f"w1 {tmp_path}\n"
    assert marker in (logs / "ps-0.log").read_text()
    time.sleep(1)
    assert not [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_a_failing_rank_is_named_and_ends_the_mpirun(tmp_path, monkeypatch, capsys):
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc" / "dlobd-env.sh").write_text("")
    monkeypatch.setenv("DLOBD_PREFIX", str(prefix))
    tasks = [tf_cluster.Task("ps", 0, "localhost", 0, False), tf_cluster.Task("worker", 0, "localhost", 0, True)]
    for t, code in zip(tasks, ["import time; time.sleep(120)", "import sys; sys.exit(3)"]):
        tf_cluster.place(t, [sys.executable, "-c", code], {}, str(tmp_path), rank=True)
    entry, hostfile = tf_cluster.mpmd("openmpi", tasks, tmp_path / tf_cluster.HOSTFILE, check=True)
    (tmp_path / tf_cluster.HOSTFILE).write_text(hostfile)
    (tmp_path / tf.PLAN_FILE).write_text(json.dumps({"tasks": [dataclasses.asdict(t) for t in tasks], "mpi": entry}))
    start = time.monotonic()
    assert tf.supervise(tmp_path / tf.PLAN_FILE) == 1
    assert time.monotonic() - start < 30
    assert tf.SUPERVISOR_FAILED + "worker:0 exited with status 3 (log tasks/worker-0.log)" in capsys.readouterr().out
