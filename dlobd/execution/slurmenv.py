"""The Slurm job this process runs in, as a run's supervisor and its record see it: the job's
plan (job.json, which dlobd/execution/slurmjob.py writes), its execution path and image, and
whether the job is being ended.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from dlobd.cluster import provenance
from dlobd.execution import apptainer

EXECUTION_PATHS = ("local", "slurm+apptainer", "slurm+prefix", "bare-metal")

# What the interrupted runs of a job are recorded as (docs/runs-and-results.md statuses).
INTERRUPTIONS = {
    "USR1": ("hung", "Slurm time limit"),
    "TERM": ("failed", "cancelled by Slurm"),
}
INTERRUPT_FILE = "interrupted.json"
# How long a run whose command a signal ended waits for the trap to say why (it starts a Python)
INTERRUPT_WAIT_S = 15.0


class JobError(Exception):
    """A clear reason why the job's cluster cannot be planned, started or stopped."""


def expand_nodelist(nodelist: str) -> list[str]:
    """Host names of a Slurm node list (`n[01-03],gpu7`), as `scontrol show hostnames` gives them."""
    try:
        done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                              text=True, timeout=30)
    except FileNotFoundError:
        raise JobError("scontrol is missing: Slurm's client commands are needed (Debian: slurm-client)") from None
    if done.returncode != 0:
        raise JobError(f"scontrol show hostnames {nodelist!r} failed: {done.stderr.strip()}")
    return done.stdout.split()


@dataclasses.dataclass
class JobPlan:
    job_id: int
    master: str
    workers: list[str]
    addresses: dict[str, str]   # node name -> the address its daemons bind to
    provisioned: str            # the provisioned prefix (same path on every node)
    job_dir: str                # node-local: the job's own prefix, same path on every node
    shared_dir: str             # on the shared file system: job.json, daemon logs, state
    ports: dict[str, int]
    secret: str                 # the job's Spark RPC secret (standalone use; YARN makes its own)
    execution_path: str
    image: dict | None = None   # {path, sha256} of the image a prefix of the apptainer method runs

    @property
    def nodes(self) -> list[str]:
        return [self.master, *[w for w in self.workers if w != self.master]]

    def daemons(self, host: str) -> list[str]:
        """The daemons `host` runs, in start order."""
        master = ["namenode", "resourcemanager"] if host == self.master else []
        worker = ["datanode", "nodemanager"] if host in self.workers else []
        order = ["namenode", "datanode", "resourcemanager", "nodemanager"]
        return [d for d in order if d in master + worker]

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(dataclasses.asdict(self), indent=1) + "\n")
        path.chmod(0o600)  # it carries the secret

    @classmethod
    def load(cls, path: Path) -> JobPlan:
        try:
            plan = cls(**json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError, TypeError) as exc:
            raise JobError(f"{path}: not a job plan ({exc})") from None
        if plan.execution_path not in EXECUTION_PATHS:
            raise JobError(f"{path}: execution path {plan.execution_path!r} is not one of {', '.join(EXECUTION_PATHS)}")
        return plan


def prefix_image(provisioned: str) -> dict | None:
    """{path, sha256} of the Apptainer image a prefix provisioned with the apptainer method runs
    everything from (its wrappers), or None for a prefix that runs from itself."""

    env = provenance.source_env(Path(provisioned, "etc", "dlobd-env.sh"), base={})
    if env.get("DLOBD_INSTALL_METHOD") != "apptainer":
        return None
    image = env.get("DLOBD_APPTAINER_IMAGE")
    if not image or not Path(image).is_file():
        raise JobError(f"{provisioned}: provisioned with the apptainer method, but its image "
                       f"{image or '(DLOBD_APPTAINER_IMAGE unset)'} is not there (provision the prefix again)")
    return {"path": image, "sha256": apptainer.image_sha256(Path(image))}


def interruption(environ=None, wait_s: float = 0.0) -> tuple[str, str] | None:
    """(status, reason) when the Slurm job this process runs in is being ended: the batch
    script's trap wrote why (waiting up to `wait_s` for it: Slurm signals every process of the
    job at once, so a command may end before the trap has written), or Slurm itself says the
    job was cancelled or timed out."""
    environ = os.environ if environ is None else environ
    job_json = environ.get("DLOBD_SLURM_JOB_JSON")
    if job_json:
        marker = Path(job_json).parent / INTERRUPT_FILE
        deadline = time.monotonic() + wait_s
        while True:
            if marker.is_file():
                data = json.loads(marker.read_text())
                return data["status"], data["reason"]
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id or shutil.which("scontrol") is None:
        return None
    done = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True)
    state = next((f.split("=", 1)[1] for f in done.stdout.split() if f.startswith("JobState=")), "")
    if state == "CANCELLED":
        return INTERRUPTIONS["TERM"]
    if state == "TIMEOUT":
        return INTERRUPTIONS["USR1"]
    return None


def ended_by_signal(exit_status: int | None) -> bool:
    """Whether a command's exit status says a signal ended it (negative from Python's
    subprocess, 128 + signal from a shell)."""
    return exit_status is not None and (exit_status < 0 or 128 < exit_status <= 128 + 64)


def interrupted_outcome(signal_name: str) -> tuple[str, str]:
    if signal_name not in INTERRUPTIONS:
        raise JobError(f"signal {signal_name!r}: the job traps {', '.join(INTERRUPTIONS)}")
    return INTERRUPTIONS[signal_name]


def execution(environ=None) -> dict:
    """The execution path of this process's runs, for run.json: the Slurm job, its nodes and
    image, from the job's plan (slurm/dlobd.sbatch); in a Slurm job without one (a point the
    Snakemake Slurm executor submitted, profiles/slurm), from Slurm's variables and the
    provisioned prefix; outside Slurm, `local` or `bare-metal` by the cluster's hosts."""
    environ = os.environ if environ is None else environ
    job_json = environ.get("DLOBD_SLURM_JOB_JSON")
    if job_json and Path(job_json).is_file():
        plan = JobPlan.load(Path(job_json))
        return {"path": plan.execution_path,
                "slurm": {"job_id": plan.job_id, "nodes": plan.nodes, "master": plan.master,
                          "workers": plan.workers, "partition": environ.get("SLURM_JOB_PARTITION")},
                "image": plan.image}

    if environ.get("SLURM_JOB_ID"):
        image = prefix_image(str(provenance.prefix()))
        return {"path": "slurm+apptainer" if image else "slurm+prefix",
                "slurm": {"job_id": int(environ["SLURM_JOB_ID"]),
                          "nodes": expand_nodelist(environ.get("SLURM_JOB_NODELIST", "")),
                          "partition": environ.get("SLURM_JOB_PARTITION")},
                "image": image}

    hosts = provenance.workers()
    remote = [h for h in hosts if not provenance.is_local_address(h)]
    return {"path": "bare-metal" if remote else "local", "slurm": None, "image": None}


