"""What a stack launcher gets and gives back (RunContext, LaunchResult), and how it runs its
command: logs in the attempt, a monitor sampler on every host, the spec's time limit.

The run supervisor (dlobd/execution/runs.py) builds the context, calls a stack's `launch`,
and writes run.json from the result.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dlobd import NotRunnable
from dlobd import spec as dspec
from dlobd.cluster import hadoop, provenance

RUN_JSON = "run.json"  # the record the supervisor writes beside a run's logs
# the label of a value a launcher picks where the spec gives none (a paper scale's unstated
# settings are the spec's `assumed`)
LAUNCHER_CHOICE = "the spec gives none: the launcher's choice"


def unstated(scale: str, name: str, value) -> None:
    """NotRunnable for a parameter the paper scale gives in words, as its paper does ('not
    stated', 'same at every core count'), with no value assumed for it: no number to run with.
    (At other scales words where a number belongs are a defect of the spec, which the
    launcher's own check names.)"""
    if scale == "paper" and isinstance(value, str) and not re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        raise NotRunnable(f"{name} is {value!r} in the spec: the paper gives no number to run with, "
                          f"and the scale assumes none (scales.paper.assumed)")


def count_within(ctx: "RunContext", name: str, available: int, what: str) -> tuple[int, str | None]:
    """(a count the cluster has `available` of, its label or None): the point's or the scale's
    stated one as it is; an override, or a value the scale assumes, as it is where the cluster
    has that many; an assumed count the scale leaves open (`within_cluster`) cut to the cluster.
    `what` names what is counted and where the cluster gives it ('GPUs (DLOBD_GPU_WORKERS x
    DLOBD_GPUS_PER_NODE)'). SettingError for an override the cluster cannot meet, NotRunnable
    for an assumed value it cannot meet, each with the values accepted."""
    entry = ctx.spec["scales"][ctx.scale]
    given = ctx.point.get(name, ctx.fixed.get(name))
    if name in ctx.overridden:
        if int(given) > available:
            raise dspec.SettingError(f"{name}={given}, set on {ctx.overridden[name]}: this cluster has "
                                     f"{available} {what}; accepted: 1 to {available}")
        return int(given), None
    if name in ctx.point or name not in dspec.assumed(entry):
        if given is None:
            raise ValueError(f"{ctx.spec['id']} {ctx.scale}: no {name}: the paper states none and "
                             f"scales.{ctx.scale}.assumed gives none")
        return int(given), None
    value = int(dspec.assumed(entry)[name])
    if available < 1:
        raise NotRunnable(f"{name}: this cluster has no {what}")
    if value <= available:
        return value, dspec.assumed_text(entry, name)
    if name in dspec.within_cluster(entry):
        return available, dspec.assumed_text(entry, name, available) + \
            f"; the assumed {value} cut to this cluster's {available} {what}"
    raise NotRunnable(f"{name}={value}, assumed (not stated by the paper; scales.{ctx.scale}.assumed of "
                      f"experiments/{ctx.spec['id']}.yaml), is more than this cluster's {available} {what}: "
                      f"accepted 1 to {available}; give one with ASSUME='{name}=<n>'")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class RunContext:
    """What a stack launcher gets: the point, where to write, and how long it may take.

    With `dry_run` the launcher has no side effect at all (no data staged, nothing built, no
    file written: `attempt_dir` is where the attempt would be, and does not exist) and returns
    the exact command through run_command, which runs nothing."""

    spec: dict
    scale: str
    cluster: str
    point: dict
    attempt_dir: Path
    runs_dir: Path
    fixed: dict = field(default_factory=dict)
    time_limit_s: float | None = None
    dry_run: bool = False
    # setting -> where its value was given in place of the one the scale assumes
    overridden: dict = field(default_factory=dict)


@dataclass
class LaunchResult:
    """What a stack launcher returns; runs.launch turns it into run.json.

    A dry run's result (status `dry run`) may add to `extra` what else the command would
    start or write: `processes`, [{name, host, command, env}] (the tasks a supervisor starts,
    servers on other hosts), `files`, {name: text} (files written into the attempt, by names
    relative to it), `env` (the command's environment beyond dlobd-env.sh), and `notes` on what
    only the launch can know."""

    command: list | None
    status: str
    reason: str | None = None
    exit_status: int | None = None
    cwd: str | None = None
    hosts: list | None = None
    versions: dict = field(default_factory=dict)  # e.g. {"stack": "bigdl 2.4.0"}
    labels: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


MONITOR_SCRIPT = Path(hadoop.__file__).resolve().parent / "monitor.py"
MONITOR_INTERVAL_S = 1.0


def _container_pattern(host: str) -> str:
    """Command lines of this cluster's YARN containers on `host`: they name their log directory,
    which is in that host's own folder."""
    try:
        dirs = [str(provenance.host_path(host, d)) for d in hadoop.container_log_dirs()]
    except hadoop.HadoopError:
        return r"(?!)"  # no YARN here: match nothing
    return "|".join(re.escape(d.rstrip("/")) + r"/application_\d+_\d+/container_" for d in dirs)


def start_samplers(ctx: RunContext, pid: int) -> list[subprocess.Popen]:
    """One psutil sampler per host of the cluster for the job rooted at `pid`:
    `monitor/<host>.csv` (docs/runs-and-results.md). Remote hosts run the same script over
    ssh from the stacks' Python (the monitoring role installs it) and stream the CSV back."""
    out_dir = ctx.attempt_dir / "monitor"
    out_dir.mkdir(exist_ok=True)
    limit = [] if ctx.time_limit_s is None else ["--max-seconds", str(ctx.time_limit_s + 120)]
    samplers = []
    log = open(out_dir / "samplers.log", "ab")

    def common(host: str) -> list[str]:
        return ["--interval", str(MONITOR_INTERVAL_S), "--match", _container_pattern(host), *limit]

    with log:
        samplers.append(subprocess.Popen(
            [sys.executable, str(MONITOR_SCRIPT), "--out", str(out_dir / f"{socket.gethostname()}.csv"),
             "--pid", str(pid), "--host", socket.gethostname(), *common("127.0.0.1")],
            stdout=log, stderr=log, start_new_session=True))
        remote_script = provenance.prefix() / "lib" / "dlobd-monitor.py"
        python = provenance.stack_setting("DLOBD_PYTHON") or "python3"
        for host in provenance.workers():
            if provenance.is_local_address(host):
                continue
            with open(out_dir / f"{host}.csv", "xb") as csv_out:
                samplers.append(subprocess.Popen(
                    ["ssh", "-o", "BatchMode=yes", host, python, str(remote_script), "--out", "-",
                     "--host", host, *[shlex.quote(a) for a in common(host)]],
                    stdout=csv_out, stderr=log, start_new_session=True))
    return samplers


def stop_samplers(samplers: list[subprocess.Popen]) -> None:
    """The local sampler ends with its job; the others are told to stop."""
    for proc in samplers[1:]:
        proc.terminate()
    for proc in samplers:
        try:
            proc.wait(timeout=3 * MONITOR_INTERVAL_S + 5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_command(ctx: RunContext, command: list, env: dict | None = None,
                cwd: str | None = None, yarn_tag: str | None = None,
                keep_stdin: bool = False) -> LaunchResult:
    """Run one command with stdout.log/stderr.log in the attempt, monitor samples of every
    host, and the spec's time limit.

    A command past its limit has its whole process group killed (and, with `yarn_tag`, the
    YARN applications carrying the tag) and is `hung`. With `yarn_tag` the applications'
    ResourceManager records and container logs are kept in the attempt, whatever the end.
    With `keep_stdin` the command reads a pipe held open until it ends (a command of
    stacks.ssh_argv ends its remote side when that pipe closes).
    """
    if ctx.dry_run:
        result = LaunchResult(list(command), "dry run", cwd=cwd)
        # what the command needs beyond dlobd-env.sh: a pasted command exports it first
        stack = hadoop.stack_env()
        result.extra["env"] = {k: v for k, v in (env or {}).items() if stack.get(k) != v}
        return result
    out = open(ctx.attempt_dir / "stdout.log", "xb")
    err = open(ctx.attempt_dir / "stderr.log", "xb")
    with out, err:
        job_start = now_iso()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd,
                                stdin=subprocess.PIPE if keep_stdin else None,
                                start_new_session=True)
        samplers = start_samplers(ctx, proc.pid)
        try:
            code = proc.wait(timeout=ctx.time_limit_s)
            result = (LaunchResult(list(command), "ok", exit_status=code, cwd=cwd) if code == 0
                      else LaunchResult(list(command), "failed", f"exit status {code}",
                                        exit_status=code, cwd=cwd))
        except subprocess.TimeoutExpired:
            reason = f"killed after the time limit of {ctx.time_limit_s} s"
            # the applications first: a client-mode AM that loses its driver would
            # unregister as if the job had succeeded
            killed = _kill_yarn(yarn_tag)
            if killed:
                reason += f"; YARN application(s) {', '.join(killed)} killed"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            result = LaunchResult(list(command), "hung", reason,
                                  exit_status=proc.returncode, cwd=cwd)
        finally:
            job_end = now_iso()
            if proc.stdin:
                proc.stdin.close()
            stop_samplers(samplers)
    # the command's own span: what the harness adds around it is the rest of the run
    result.extra.update(job_start=job_start, job_end=job_end)
    if yarn_tag:
        hadoop.save_applications(yarn_tag, ctx.attempt_dir)
    return result


def _kill_yarn(tag: str | None) -> list[str]:
    if not tag:
        return []

    return hadoop.kill_applications(tag)


def data_label(dataset) -> str:
    """`synthetic` for generated data, else the data set name (docs/design.md, Vocabulary)."""
    if not dataset:
        return "unknown"
    return "synthetic" if "synthetic" in str(dataset) else str(dataset)
