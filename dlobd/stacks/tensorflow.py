"""Native distributed TensorFlow: the project's workload workloads/tensorflow/train_distributed.py,
one process per TF task (parameter servers + workers, or collective workers) talking gRPC,
configured through TF_CONFIG.

Parser: reads each task's log (its stdout+stderr) for the workload's DLOBD lines
(format in workloads/tensorflow/dlobd_tf.py), e.g.

  DLOBD event=start task=worker:0 workload=tensorflow model=resnet50 batch_size=8 ...
  DLOBD event=warmup task=worker:0 warmup_steps=1 warmup_s=30.2
  DLOBD event=step task=worker:0 step=10 epoch=1 wall_clock_s=12.3 loss=6.9 images_per_s=11.2 steps_per_s=0.7
  DLOBD event=epoch task=worker:0 step=20 epoch=1 wall_clock_s=25.0 epoch_time_s=24.6 top1_accuracy=0.41
  DLOBD event=summary task=worker:0 step=20 epoch=1 train_time_s=24.6 images_per_s=11.4 steps_per_s=0.7 end_to_end_s=31.2

Keys named like a metric of docs/metrics.md become rows in that metric's unit. Summary
values are run totals (empty step). A task's log is finished when it has its summary;
a parameter-server or worker server of the `ps` strategy prints only a start line
(role=server) and is finished by design when the launcher ends it.
At its summary, the task that leads the run (chief:0, or worker:0 of a collective run, or
local:0) also gives time_breakdown_s: phase `training` = the wall_clock_s of its last step
line (first counted step's start to last step's end) and, when a data set was read,
phase `data_loading` = the data_loading_s of its start line.
The same line format is read for TensorFlowOnSpark (dlobd.stacks.tensorflowonspark).

Launcher: one TF cluster per point, tasks as real processes with their own TF_CONFIG
(cluster, task, rpc_layer), spread round-robin over the cluster's workers (provenance.workers();
a task on another host starts over ssh in that host's own stack environment), each on a port
chosen on its host at launch or from the inventory's dlobd_worker_ports (remote.worker_ports).
`parameter_servers` among the fixed parameters selects the ps strategy (a chief beside worker 0,
the workers and the parameter servers), else every task is a collective worker; fixed
`single_node` makes a point of one worker one process without TF_CONFIG (task local:0), the
papers' single-node TensorFlow (rdmatf-fig1's baseline).
Workers come from the point's `workers`/`nodes` (else the fixed ones), the batch per worker
from `batch` (axis, else fixed) or fixed `images_per_step`; steps, warm-up steps, image size
and epochs from the fixed parameters. The network axis resolves through
config/networks.yaml: TCP values run TF's grpc; verbs/MPI channels and RDMA-gRPC need a TF
build that has them (capability tf-rdma, DLOBD_TF_RDMA_PYTHON runs the tasks) and are
not runnable otherwise; on the paper profile, whose stacks' Python has no TensorFlow, that build
runs the gRPC points too, else TensorFlowOnSpark's Python (DLOBD_TFOS_PYTHON) with its TensorFlow
1.4 from PyPI, which has gRPC (not runnable with neither; label tf_build names which ran). A supervisor (`python -m dlobd.stacks.tensorflow supervise`) is
the one command of the run: it writes each task's output to tasks/<job>-<index>.log,
waits for the training tasks, ends the servers and fails naming the first task that
failed.

TF 1.x: whenever the tasks run in a TF 1.x (the site's build, DLOBD_TF_RDMA_PYTHON, for an RDMA
channel; on the paper profile that build or TensorFlowOnSpark's Python for every channel) they
run workloads/tensorflow/train_tf1.py instead, which TF 1.x can run: between-graph replication with parameter servers, the
same arguments, tasks and DLOBD lines as the ps strategy's (the workers train, each until the
shared global step reaches the run's steps, the chief initializes the variables and watches;
fixed `parameter_servers`, at paper scale 1 where the spec states none, labelled as the
launcher's choice). A point of another scale without parameter servers, whose spec chose
the collective strategy (TensorFlow 2's), gets one too, labelled so.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from dlobd import ROOT, NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.cluster.remote import worker_ports
from dlobd.stacks import NO_LINES, LogError, ParseResult, runner, text_lines
from dlobd.stacks.shared.dlobd_lines import finish, read_dlobd_lines
from dlobd.stacks.shared.tf_cluster import (
    MPI_PROTOCOL,
    PLAN_FILE,
    RANK_EXIT,
    RANK_SEPARATOR,
    SUPERVISOR_FAILED,
    Task,
    mpi_of,
    place,
    run_tasks,
    transport,
)

LOG_FILES = ("stdout.log", "tasks/*.log")

def parse(text: str) -> ParseResult:
    try:
        lines, cut = text_lines(text)
        result = ParseResult()
        tasks = read_dlobd_lines(lines, result)
    except LogError as e:
        return ParseResult.unparseable(str(e))
    if not tasks:
        return ParseResult.unparseable(f"{NO_LINES} the workload's format: no 'DLOBD event=...' line")
    finish(result, tasks, cut)
    return result


# ---------------------------------------------------------------- launcher
#
# One run = one TF cluster of workloads/tensorflow/train_distributed.py processes (train_tf1.py
# in the site's TF 1.x build), each with its own TF_CONFIG. Strategy: `parameter_servers` among the fixed parameters -> ps (a chief
# drives the steps, ps and worker tasks serve); otherwise collective (every task a worker).
# The tasks run under a supervisor (`python -m dlobd.stacks.tensorflow supervise <plan>`),
# the one command runner.run_command times and monitors: it starts them in its process group
# (or over ssh on other hosts), waits for the tasks that train, ends the servers (they
# never exit on their own) and exits non-zero naming any task that failed.


WORKLOAD = ROOT / "workloads" / "tensorflow" / "train_distributed.py"
# the program of the tasks that run in a TF 1.x (tf_cluster.transport)
WORKLOAD_TF1 = ROOT / "workloads" / "tensorflow" / "train_tf1.py"
MODELS = {"resnet50": "resnet50", "inception3": "inception_v3", "inception_v3": "inception_v3",
          "alexnet": "alexnet", "softmax-regression": "mnist_softmax",
          "mnist_softmax": "mnist_softmax", "cifar10_cnn": "cifar10_cnn"}
# spec data set -> directory under $DLOBD_DATA_DIR (ImageNet-shaped data is made in the graph)
DATASETS = {"mnist": "mnist", "cifar10-synthetic": "cifar10-synthetic"}
# axes (or fixed parameters) that give the number of TF workers, first found wins
WORKER_KEYS = ("workers", "nodes")
# fixed parameters that are the paper's hardware or software, not settings of this workload
DESCRIPTIVE = {"device", "gpus_per_node", "mpi", "benchmark"}
STOP_GRACE_S = 10
# train_tf1.py's start line ends with the TensorFlow it runs
TF_VERSION = re.compile(r"^DLOBD event=start .* tensorflow=(\S+)$", re.M)


def _count(value, what: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}={value!r} is not a whole number") from None
    if n != float(value) or n < 0:
        raise ValueError(f"{what}={value!r} is not a count")
    return n


def layout(point: dict, fixed: dict) -> tuple[str, int, int]:
    """(strategy, workers, parameter servers) of a point: `local` (one process, no cluster)
    for one worker where the spec's fixed `single_node` says its one worker is TensorFlow on one
    node, as the papers' baselines are."""
    workers = next((point[k] for k in WORKER_KEYS if k in point),
                   next((fixed[k] for k in WORKER_KEYS if k in fixed), 1))
    workers = _count(workers, "workers")
    if workers < 1:
        raise ValueError("a TF cluster needs at least one worker")
    if workers == 1 and fixed.get("single_node"):
        return "local", 1, 0
    if "parameter_servers" in fixed:
        ps = _count(fixed["parameter_servers"], "parameter_servers")
        if ps < 1:
            raise ValueError("the ps strategy needs at least one parameter server")
        return "ps", workers, ps
    return "collective", workers, 0


def workload_args(model: str, strategy: str, workers: int, point: dict, fixed: dict,
                  protocol: str, data_dir: str | None) -> list[str]:
    """The workload's arguments (every task of a run gets the same)."""
    unknown = set(fixed) - DESCRIPTIVE - set(WORKER_KEYS) - {
        "parameter_servers", "batch", "images_per_step", "steps", "warmup_steps", "image_size",
        "epochs", "log_every", "learning_rate", "single_node"}
    if unknown:
        raise ValueError(f"fixed parameters the tensorflow launcher does not know: {sorted(unknown)}")
    batch = point.get("batch", fixed.get("batch", fixed.get("images_per_step")))
    if batch is None:
        raise ValueError("no batch size: give the axis `batch` or fixed `batch`/`images_per_step`")
    # ps: the chief waits for the scheduled steps at every step line, so between two lines
    # each worker needs several steps queued or the workers take turns instead of overlapping
    log_every = fixed.get("log_every", 4 * workers if strategy == "ps" else 1)
    # a local run has no strategy: without TF_CONFIG the workload trains in its one process
    args = ["--model", model, *(["--strategy", strategy] if strategy != "local" else []),
            "--batch-size", str(_count(batch, "batch")),
            "--protocol", protocol, "--log-every", str(_count(log_every, "log_every"))]
    for key, flag in (("steps", "--steps"), ("warmup_steps", "--warmup-steps"),
                      ("image_size", "--image-size"), ("epochs", "--epochs")):
        if key in fixed:
            args += [flag, str(_count(fixed[key], key))]
    if "learning_rate" in fixed:
        args += ["--learning-rate", str(float(fixed["learning_rate"]))]
    if data_dir:
        args += ["--data-dir", data_dir]
    elif "steps" not in fixed:
        raise ValueError(f"model {model} on synthetic data needs fixed `steps`")
    return args


def cluster_jobs(strategy: str, workers: int, ps: int, hosts: list[str]) -> list[tuple[str, int, str, bool]]:
    """(job, index, host, trains) of each task: the workers and parameter servers round-robin over
    the hosts (workers first, so they spread evenly), the chief beside worker 0, as TF's own
    examples put it (a spec's nodes are those of the workers and parameter servers); a local
    run's one task, `local:0`, on the first host."""
    if strategy == "local":
        return [("local", 0, hosts[0], True)]
    jobs = [("worker", i, strategy == "collective") for i in range(workers)]
    jobs += [("ps", i, False) for i in range(ps)]
    placed = [(job, i, hosts[n % len(hosts)], trains) for n, (job, i, trains) in enumerate(jobs)]
    return placed + ([("chief", 0, hosts[0], True)] if strategy == "ps" else [])


def cluster_tasks(strategy: str, workers: int, ps: int, hosts: list[str],
                  ports: list) -> list[Task]:
    """The tasks of cluster_jobs, each serving on its port of `ports` (in their order); a local
    run's one task serves none."""
    jobs = cluster_jobs(strategy, workers, ps, hosts)
    if strategy == "local":
        return [Task("local", 0, hosts[0], None, True)]
    if len(ports) < len(jobs):
        raise ValueError(f"{len(jobs)} tasks need {len(jobs)} ports, got {len(ports)}")
    return [Task(job, i, host, ports[n], trains) for n, (job, i, host, trains) in enumerate(jobs)]


def tf_config(tasks: list[Task], task: Task, protocol: str) -> dict:
    cluster: dict = {}
    for t in tasks:
        cluster.setdefault(t.job, []).append(f"{t.host}:{t.port}")
    return {"cluster": cluster, "task": {"type": task.job, "index": task.index}, "rpc_layer": protocol}


def tf1_layout(point: dict, fixed: dict) -> tuple[int, int, dict]:
    """(workers, parameter servers, labels) of a point run by train_tf1.py in a TF 1.x build:
    parameter servers always. The fixed ones (at the paper scale the specs assume one where the
    paper states none), else 1, labelled: a scale's choice of the collective strategy is
    TensorFlow 2's, which TF 1.x has not (TensorFlowOnSpark 1.0's launcher makes the same choice,
    so dlobd-fig9's two frameworks still compare like for like)."""
    strategy, workers, ps = layout(point, fixed)
    if strategy == "ps":
        return workers, ps, {"parameter_servers": str(ps)}
    if strategy == "local":
        return 1, 0, {}
    return workers, 1, {"parameter_servers": f"1 ({runner.LAUNCHER_CHOICE}: TF 1.x has no collective "
                                             "strategy, which this scale's spec chose)"}


def tf1_tasks(workers: int, ps: int, hosts: list[str], ports: list[int]) -> list[Task]:
    """The ps strategy's tasks (cluster_tasks: the same names, hosts and ports), but in TF 1.x
    the workers train (each until the global step reaches the run's steps, then it exits) and
    the chief initializes the variables and watches the global step."""
    tasks = cluster_tasks("ps", workers, ps, hosts, ports)
    for t in tasks:
        t.trains = t.job in ("chief", "worker")
    return tasks


def build_plan_tf1(point: dict, fixed: dict, model: str, workers: int, ps: int, hosts: list[str],
                   ports: list, python: str, protocol: str, data_dir: str | None, cwd: str) -> list[Task]:
    """build_plan's counterpart for the site's TF 1.x build: train_tf1.py, the ps strategy's
    arguments, TF 1.x's tasks (tf1_tasks); or, without parameter servers, a local run's."""
    strategy = "ps" if ps else "local"
    args = workload_args(model, strategy, workers, point, fixed, protocol, data_dir)
    tasks = tf1_tasks(workers, ps, hosts, ports) if ps else cluster_tasks(strategy, 1, 0, hosts, ports)
    return place_all(tasks, [python, str(WORKLOAD_TF1), *args], protocol, cwd)


def task_hosts(link, workers: list[str]) -> list[str]:
    """Where the tasks run: loopback keeps them all on this host, whatever the cluster has;
    other networks spread them over the cluster's workers."""
    return ["127.0.0.1"] if link.address == "loopback" or not workers else workers


def build_plan(point: dict, fixed: dict, model: str, hosts: list[str], ports: list,
               python: str, protocol: str, data_dir: str | None, cwd: str) -> list[Task]:
    """Every task with its full command line: local tasks run `python workload ...` with
    TF_CONFIG added to the supervisor's environment; tasks on other hosts run over ssh in their
    host's stack environment with TF_CONFIG on the command line."""
    strategy, workers, ps = layout(point, fixed)
    args = workload_args(model, strategy, workers, point, fixed, protocol, data_dir)
    return place_all(cluster_tasks(strategy, workers, ps, hosts, ports), [python, str(WORKLOAD), *args],
                     protocol, cwd)


def tf1_version(tasks_dir: Path) -> str | None:
    """The TensorFlow version train_tf1.py's tasks printed in their start lines, if any did."""
    for log in sorted(tasks_dir.glob("*.log")):
        found = TF_VERSION.search(log.read_text(errors="replace"))
        if found:
            return found[1]
    return None


def place_all(tasks: list[Task], argv: list[str], protocol: str, cwd: str) -> list[Task]:
    """Every task running `argv` with its own TF_CONFIG (place); a local run's task without."""
    for t in tasks:
        env = {"TF_CPP_MIN_LOG_LEVEL": "1"}
        if t.job != "local":
            env["TF_CONFIG"] = json.dumps(tf_config(tasks, t, protocol), separators=(",", ":"))
        place(t, list(argv), env, cwd, rank=protocol == MPI_PROTOCOL)  # a list of its own per task
    return tasks


def launch(ctx: runner.RunContext) -> runner.LaunchResult:

    network = str(ctx.point.get("network", "loopback"))
    link, tf1 = transport(network)
    protocol = link.settings["protocol"]
    env = hadoop.stack_env()
    python = tf1.python if tf1 else env.get("DLOBD_PYTHON")
    if not provenance.present(python):
        raise NotRunnable("no stacks' Python with TensorFlow (DLOBD_PYTHON; run `make provision`)")
    spec_model = str(ctx.point.get("model", ctx.spec.get("model")))
    model = MODELS.get(spec_model)
    if model is None:
        raise NotRunnable(f"model {spec_model}: not among the project's TensorFlow workloads "
                               f"({', '.join(sorted(MODELS))})")
    dataset = str(ctx.spec["scales"][ctx.scale].get("dataset", ctx.spec.get("dataset")))
    data_dir = None
    if dataset in DATASETS:
        data_dir = str(Path(env.get("DLOBD_DATA_DIR", "")) / DATASETS[dataset])
        if not env.get("DLOBD_DATA_DIR") or not provenance.present(data_dir):
            raise NotRunnable(f"data set {dataset}: no {data_dir} (DLOBD_DATA_DIR; run `make provision`)")
    hosts = task_hosts(link, capabilities.worker_addresses(link, provenance.workers()))
    adir = Path(ctx.attempt_dir).resolve()
    for key in WORKER_KEYS:
        runner.unstated(ctx.scale, key, ctx.point.get(key, ctx.fixed.get(key)))
    labels = {}
    if tf1:
        # a TF 1.x: train_tf1.py, parameter servers
        workers, ps, labels = tf1_layout(ctx.point, ctx.fixed)
        labels["tf_build"] = tf1.source
        strategy = "ps" if ps else "local"
    else:
        strategy, workers, ps = layout(ctx.point, ctx.fixed)
    serving = [host for job, _, host, _ in cluster_jobs(strategy, workers, ps, hosts) if job != "local"]
    ports, chosen = worker_ports(serving, ctx.dry_run)
    if tf1:
        tasks = build_plan_tf1(ctx.point, ctx.fixed, model, workers, ps, hosts, ports,
                               python, protocol, data_dir, str(adir))
    else:
        tasks = build_plan(ctx.point, ctx.fixed, model, hosts, ports, python, protocol, data_dir, str(adir))
    for t in tasks:
        t.ports_chosen = chosen.get(t.host)  # None for a local run's task, which serves none
    if strategy == "local":
        labels["strategy"] = "local: one process without a TF cluster, the paper's single-node TensorFlow"
    result = run_tasks(ctx, tasks, env, mpi_of(protocol))
    if ctx.dry_run:
        if labels:
            result.labels = labels
        return result
    result.versions = {"stack": f"tensorflow 1.x in {tf1.python} ({tf1.source})" if tf1
                       else f"tensorflow {provenance.versions()['tensorflow']}"}
    if tf1:
        # provenance reads the stacks' Python, which has none: the version the tasks printed
        printed = tf1_version(adir / "tasks")
        if printed:
            result.versions["tensorflow"] = printed
    result.labels = {"network": network, "protocol": protocol, "strategy": strategy,
                     "data": runner.data_label(dataset), **({"emulated": "true"} if link.emulated else {}),
                     **labels}
    result.hosts = [{"name": h, "address": h, "roles": [t.name for t in tasks if t.host == h]}
                    for h in dict.fromkeys(t.host for t in tasks)]
    return result


# ---------------------------------------------------------------- supervisor


def _say(text: str) -> None:
    print(f"tensorflow-supervisor: {text}", flush=True)


def _ended(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


def _stop(procs: dict) -> None:
    """End every task still running: close its stdin (an ssh task's remote side ends on
    EOF), SIGTERM, then SIGKILL after a grace period."""
    running = {name: p for name, p in procs.items() if p.poll() is None}
    for name, p in running.items():
        if p.stdin:
            p.stdin.close()
        p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for name, p in running.items():
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        _say(f"stopped {name} ({_ended(p.returncode)})")


def _ranks(mpi: dict, tasks: list[Task], base: Path) -> str | None:
    """Start the tasks as the ranks of one mpirun; each rank's lines go to its task's log, until
    every training task has said it exited 0 (then mpirun, with the servers in it, is ended) or
    one says otherwise. None, else what failed."""
    by_name = {t.name: t for t in tasks}
    for t in tasks:
        (base / t.log).parent.mkdir(parents=True, exist_ok=True)
    logs = {t.name: open(base / t.log, "xb") for t in tasks}
    proc = subprocess.Popen(mpi["command"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
    _say(f"started {len(tasks)} tasks as the ranks of one mpirun (pid {proc.pid}): "
         + ", ".join(f"{i} {name} on {by_name[name].host}" for i, name in enumerate(mpi["ranks"])))
    exits: dict[str, int] = {}
    failure = None
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            name, separator, text = line.partition(RANK_SEPARATOR)
            if not separator or name not in by_name:
                sys.stdout.write(line)  # mpirun's own
                continue
            if not text.startswith(RANK_EXIT):
                logs[name].write(text.encode())
                continue
            t, exits[name] = by_name[name], int(text[len(RANK_EXIT):])
            _say(f"{name} {_ended(exits[name])}")
            training_done = all(exits.get(x.name) == 0 for x in tasks if x.trains)
            if exits[name]:
                failure = f"{name} {_ended(exits[name])} (log {t.log})"
            elif not t.trains and not training_done:
                failure = f"{name} {_ended(0)} before training ended (log {t.log})"
            if failure or training_done:
                break
        else:
            failure = f"mpirun {_ended(proc.wait())} before every training task ended"
    finally:
        _stop({"mpirun": proc})
        for log in logs.values():
            log.close()
    return failure


def _processes(tasks: list[Task], base: Path, poll_s: float) -> str | None:
    """Start each task as a process of its own (over ssh where it runs elsewhere), servers first
    so the training tasks find them; wait until every training task exited 0, then end the
    servers. None, else what failed."""
    procs: dict[str, subprocess.Popen] = {}
    failure = None
    try:
        for t in sorted(tasks, key=lambda t: t.trains):
            (base / t.log).parent.mkdir(parents=True, exist_ok=True)
            with open(base / t.log, "xb") as log:
                procs[t.name] = subprocess.Popen(t.argv, env={**os.environ, **t.env}, stdout=log,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
            where = t.host if t.port is None else f"{t.host}:{t.port}"
            _say(f"started {t.name} on {where} (pid {procs[t.name].pid}, log {t.log})")
        training = [t for t in tasks if t.trains]
        while failure is None:
            for t in tasks:
                code = procs[t.name].poll()
                if code is None:
                    continue
                if code != 0:
                    failure = f"{t.name} {_ended(code)} (log {t.log})"
                elif not t.trains and any(procs[x.name].poll() is None for x in training):
                    failure = f"{t.name} {_ended(code)} before training ended (log {t.log})"
                if failure:
                    break
            if failure is None and all(procs[t.name].poll() == 0 for t in training):
                break
            time.sleep(poll_s)
    finally:
        _stop(procs)
    return failure


def supervise(plan_path: Path, poll_s: float = 0.2) -> int:
    """Run the tasks of a plan, as processes or as the ranks of one mpirun (the plan's 'mpi');
    0 when every training task exited 0, else 1 naming the task."""
    plan_path = Path(plan_path)
    plan = json.loads(plan_path.read_text())
    tasks = [Task(**t) for t in plan["tasks"]]
    # a SIGTERM to the supervisor ends its tasks too (SIGKILL of the group needs no help)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if plan.get("mpi"):
        failure = _ranks(plan["mpi"], tasks, plan_path.parent)
    else:
        failure = _processes(tasks, plan_path.parent, poll_s)
    if failure:
        print(SUPERVISOR_FAILED + failure, flush=True)
        return 1
    _say("every training task exited 0")
    return 0


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m dlobd.stacks.tensorflow",
                                description="Supervise the tasks of one native TF run.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("supervise", help="start the tasks of a plan file, wait, end the servers")
    s.add_argument("plan", type=Path, help=f"the run's {PLAN_FILE}")
    a = p.parse_args(argv)
    return supervise(a.plan)


if __name__ == "__main__":
    sys.exit(main())
