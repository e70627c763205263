"""The tasks of one TensorFlow cluster (chief, workers, parameter servers) placed on the hosts,
the point's TF protocol, and their run under the supervisor (`python -m dlobd.stacks.tensorflow
supervise`, one command for runner.run_command to time and monitor). Native TF and
tf_cnn_benchmarks launch through this.
"""

import functools
import json
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, provenance
from dlobd.cluster.remote import LOCAL_HOSTS, env_file, ssh_argv
from dlobd.spec import networks
from dlobd.stacks import runner
from dlobd.stacks.shared import mpi

PLAN_FILE = "tasks.json"
HOSTFILE = "mpi-hosts"
SUPERVISOR_FAILED = "tensorflow-supervisor: failed: "
# TF's MPI channel: every task must be a rank of one mpirun, of the MPI the build is linked against
MPI_PROTOCOL = "grpc+mpi"
TF_MPI = "DLOBD_TF_RDMA_MPI"
TF_MPI_DEFAULT = "mvapich2"   # the papers' MVAPICH2-2.3b
# A rank's lines reach mpirun's output as "<task>| <line>", each line written whole (MPIs tag
# what they read, not lines, where a task writes a line in parts); its last line says its exit
# status: mpirun ends only when every rank has, and a parameter server serves until it is ended.
RANK_SEPARATOR = "| "
RANK_EXIT = "dlobd-rank-exit: "


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


def place(task: Task, argv: list[str], env: dict, cwd: str, rank: bool = False) -> None:
    """A task's command where it runs: here with `env` added to the supervisor's environment,
    or on another host over ssh in that host's stack environment with `env` on the command line.
    As a rank of the run's one mpirun (`rank`): on its host in that host's stack environment
    (mpirun passes the launch host's to none but its own ranks), `env` over it, and a last line
    with its exit status."""
    if rank:
        script = (f'mkdir -p "$1" && cd "$1" && . "$2" || exit 1; shift 2; '
                  f'"$@" 2>&1 | sed -u "s/^/{task.name}{RANK_SEPARATOR}/"; code=${{PIPESTATUS[0]}}; '
                  f'echo "{task.name}{RANK_SEPARATOR}{RANK_EXIT}$code"; exit "$code"')
        task.argv = ["bash", "-c", script, "dlobd-rank", cwd, str(env_file()), "env",
                     *(f"{k}={v}" for k, v in sorted(env.items())), *argv]
        task.env = {}
    elif task.host in LOCAL_HOSTS:
        task.argv, task.env = argv, env
    else:
        task.argv, task.env = ssh_argv(task.host, cwd, env, argv), {}


def mpi_of(protocol: str) -> str | None:
    """The MPI whose one mpirun starts every task of a point over TF's MPI channel (the TF build's,
    DLOBD_TF_RDMA_MPI, else MVAPICH2 as in the papers); None for the other protocols."""
    if protocol != MPI_PROTOCOL:
        return None
    name = provenance.stack_setting(TF_MPI) or TF_MPI_DEFAULT
    if name not in mpi.MPIS:
        raise NotRunnable(f"{TF_MPI}={name}: not an MPI the launchers start ({', '.join(mpi.MPIS)})")
    return name


def mpmd(name: str, tasks: list[Task], hostfile: Path, check: bool) -> tuple[dict, str]:
    """One mpirun starting every task (placed as a rank) as a rank of its own command, grouped by
    host in the order the hosts first appear: (the plan's 'mpi' entry: the command and the tasks
    in rank order; the host file's text). OpenMPI places each rank by its own --host, Hydra
    (MPICH, MVAPICH2) by the host file's order."""
    hosts = list(dict.fromkeys(t.host for t in tasks))
    ranks = sorted(tasks, key=lambda t: hosts.index(t.host))
    per_host = {h: sum(t.host == h for t in tasks) for h in hosts}
    try:
        command = mpi.mpirun_prefix(name, None, hostfile, check)
    except NotRunnable as exc:
        raise NotRunnable(f"{MPI_PROTOCOL} starts every task under one mpirun of the MPI the TF build is "
                          f"linked against ({TF_MPI}, default {TF_MPI_DEFAULT}): {exc}") from None
    for i, t in enumerate(ranks):
        where = ["--host", f"{t.host}:{per_host[t.host]}"] if name == "openmpi" else []
        command += [*([":"] if i else []), "-np", "1", *where, *t.argv]
    return {"command": command, "ranks": [t.name for t in ranks]}, mpi.hostfile_text(name, list(per_host.items()))


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


def run_tasks(ctx: runner.RunContext, tasks: list[Task], env: dict, mpi_name: str | None = None) -> runner.LaunchResult:
    """Run the tasks of one TF cluster under the supervisor, the run's one command; with an MPI
    (mpi_of) the supervisor starts them as the ranks of one mpirun, the tasks placed as ranks. A
    dry run lists what it would start (as the plan file names it) and writes nothing."""
    adir = Path(ctx.attempt_dir).resolve()
    content = {"tasks": [asdict(t) for t in tasks]}
    files = {}
    if mpi_name:
        content["mpi"], files[HOSTFILE] = mpmd(mpi_name, tasks, adir / HOSTFILE, not ctx.dry_run)
    files[PLAN_FILE] = json.dumps(content, indent=1) + "\n"
    if not ctx.dry_run:
        for name, text in files.items():
            (adir / name).write_text(text)
    result = runner.run_command(ctx, [sys.executable, "-m", "dlobd.stacks.tensorflow", "supervise",
                                    str(adir / PLAN_FILE)], env=env, cwd=str(adir))
    if mpi_name:
        result.extra["mpirun"] = shlex.join(content["mpi"]["command"])
    if ctx.dry_run:
        result.extra["files"] = files
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
