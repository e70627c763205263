"""The tasks of one TensorFlow cluster (chief, workers, parameter servers) placed on the hosts,
the point's TF protocol, and their run under the supervisor (`python -m dlobd.stacks.tensorflow
supervise`, one command for runner.run_command to time and monitor). Native TF and
tf_cnn_benchmarks launch through this.
"""

import functools
import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, provenance
from dlobd.cluster.remote import LOCAL_HOSTS, ssh_argv
from dlobd.spec import networks
from dlobd.stacks import runner

PLAN_FILE = "tasks.json"
SUPERVISOR_FAILED = "tensorflow-supervisor: failed: "


@dataclass
class Task:
    job: str                  # chief | worker | ps
    index: int
    host: str
    port: int | str | None    # its server's (a dry run's placeholder; None: it serves none)
    trains: bool              # the supervisor waits for it (the others serve until ended)
    argv: list = field(default_factory=list)
    env: dict = field(default_factory=dict)   # added to the supervisor's environment
    ports_chosen: str | None = None           # where its port was chosen (remote.worker_ports)

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def log(self) -> str:
        return f"tasks/{self.job}-{self.index}.log"


def place(task: Task, argv: list[str], env: dict, cwd: str) -> None:
    """A task's command where it runs: here with `env` added to the supervisor's environment,
    or on another host over ssh in that host's stack environment with `env` on the command line."""
    if task.host in LOCAL_HOSTS:
        task.argv, task.env = argv, env
    else:
        task.argv, task.env = ssh_argv(task.host, cwd, env, argv), {}


@dataclass(frozen=True)
class TF1Build:
    """The Python of a TensorFlow 1.x that runs a point's tasks (train_tf1.py), and whence it is."""
    python: str
    source: str


STACKS_BUILD = "DLOBD_PYTHON: the stacks' Python"
RDMA_BUILD = "DLOBD_TF_RDMA_PYTHON: the site's TensorFlow 1.x build with the RDMA channels"
TFOS_BUILD = (f"{provenance.TFOS_PYTHON}: TensorFlowOnSpark's Python on the paper profile, whose "
              "TensorFlow 1.4.0 from PyPI has gRPC only")


def transport(network: str, stack: str = "tensorflow") -> tuple:
    """The point's TF protocol and, for an RDMA channel or on the paper profile, the TF 1.x build
    that runs it (None: the stacks' Python)."""

    link = networks.resolve(stack, network)
    lacking = capabilities.missing(link.needs)
    if lacking:
        raise NotRunnable(f"network {network} (TF protocol {link.settings['protocol']}): "
                               + "; ".join(lacking))
    rdma = provenance.stack_setting("DLOBD_TF_RDMA_PYTHON")
    if link.transport != "tcp":
        # the verbs and MPI channels, or gRPC over RDMA, exist only in source builds of TF
        return link, TF1Build(rdma, RDMA_BUILD)
    if provenance.stack_setting("DLOBD_PROFILE") != "paper":
        return link, None
    # the paper profile's stacks' Python has no TensorFlow: gRPC runs in the TF 1.x build of the
    # RDMA channels where the site has one, as the papers compared the channels within one build;
    # else in TensorFlowOnSpark's Python, whose TensorFlow 1.4 has gRPC
    if rdma:
        return link, TF1Build(rdma, RDMA_BUILD)
    tfos = provenance.stack_setting(provenance.TFOS_PYTHON)
    if not tfos:
        raise NotRunnable(PAPER_TF)
    return link, TF1Build(tfos, TFOS_BUILD)


# what a build's Python is asked; the same text in Python 2.7 (TF 1.4's) and 3
TF_BUILD_PROBE = "import tensorflow as tf; print('%s %s' % (tf.__version__, tf.test.is_built_with_cuda()))"


@functools.cache
def _tensorflow_of(python: str, env: tuple) -> tuple[str, bool]:
    """(version, built with CUDA) of the TensorFlow that `python` imports, asked of it."""
    try:
        proc = subprocess.run([python, "-c", TF_BUILD_PROBE], capture_output=True, text=True,
                              env=dict(env), timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NotRunnable(f"{python}: cannot ask its TensorFlow whether it has CUDA: {exc}") from None
    said = proc.stdout.split()
    if proc.returncode != 0 or len(said) < 2:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise NotRunnable(f"{python}: cannot import TensorFlow to ask whether it has CUDA: {last}")
    return said[-2], said[-1] == "True"


def refuse_cpu_only(python: str, source: str, env: dict, dry_run: bool) -> None:
    """A GPU point's TensorFlow, asked on the launch host whether it was built with CUDA: refused
    without, since it would train on the CPU and its run would read as a GPU's. A dry run starts
    no Python; the launch asks."""
    if dry_run:
        return
    version, cuda = _tensorflow_of(python, tuple(sorted(env.items())))
    if not cuda:
        raise NotRunnable(f"a GPU point in {source}: its TensorFlow {version} ({python}) is built without "
                          "CUDA and would train on the CPU; give a build with CUDA")


PAPER_TF = (f"needs DLOBD_TF_RDMA_PYTHON or {provenance.TFOS_PYTHON}: the paper profile runs native "
            "TensorFlow in a TF 1.x (dlobd_stack_settings); its stacks' Python has no TensorFlow")


def run_tasks(ctx: runner.RunContext, tasks: list[Task], env: dict) -> runner.LaunchResult:
    """Run the tasks of one TF cluster under the supervisor, the run's one command; a dry run
    lists the tasks it would start (as the plan file names them) and writes nothing."""
    adir = Path(ctx.attempt_dir).resolve()
    plan = json.dumps({"tasks": [asdict(t) for t in tasks]}, indent=1) + "\n"
    if not ctx.dry_run:
        (adir / PLAN_FILE).write_text(plan)
    result = runner.run_command(ctx, [sys.executable, "-m", "dlobd.stacks.tensorflow", "supervise",
                                    str(adir / PLAN_FILE)], env=env, cwd=str(adir))
    if ctx.dry_run:
        result.extra["files"] = {PLAN_FILE: plan}
    # run.json keeps them too: where each task ran and how its port was chosen
    result.extra["processes"] = [{"name": t.name, "host": t.host, "command": t.argv, "env": t.env,
                                  "ports": {} if t.port is None else {"server": t.port},
                                  "ports_chosen": t.ports_chosen} for t in tasks]
    if result.status == "failed":
        result.reason = "; ".join(filter(None, [result.reason, supervisor_reason(adir / "stdout.log")]))
    return result


def supervisor_reason(stdout_log: Path) -> str | None:
    try:
        lines = stdout_log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    found = [ln[len(SUPERVISOR_FAILED):] for ln in lines if ln.startswith(SUPERVISOR_FAILED)]
    return found[-1] if found else None
