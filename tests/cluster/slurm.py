#!/usr/bin/env python3
"""A real Slurm on an emulated cluster (tests/cluster/emulated.py): munged and slurmctld in the
root namespace, one slurmd inside each emulated host.

Debian's Slurm packages (slurmctld, slurmd, slurm-client, munge) run as plain processes, every
file of theirs (key, socket, configuration, state, spool, pids, logs) under one state folder. Each
slurmd runs in its host's network, UTS and mount namespaces (those of the host's sshd, so a job
sees what an ssh session on that host sees), with the run's configuration bound on /etc/slurm and
a node-local scratch folder of its own bound on one common path, as a cluster node's /tmp is.
Every object is recorded in the state file before it is made, so `down` removes exactly what
`up` made, also after a failed `up`.

    tests/cluster/slurm.py --state-dir DIR --emulated-state-dir EDIR up
    tests/cluster/slurm.py --state-dir DIR --emulated-state-dir EDIR env   (SLURM_CONF=... for a shell)
    tests/cluster/slurm.py --state-dir DIR down
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import emulated  # noqa: E402  (the harness beside this file)

STATE_NAME = "slurm-state.json"
# Ports of this harness's controller and daemons: not Slurm's defaults (6817/6818), so a site's
# or another harness's Slurm on the same machine is never contacted.
CTLD_PORT = 16817
SLURMD_PORT = 16818
# What each emulated node offers to jobs (the hosts share one machine's cores and memory).
NODE_CPUS = 2
NODE_MEMORY_MB = 4096
# The common path of every node's own scratch folder (bound per node, as a node's local disk).
SCRATCH_MOUNT = "node-local"
BINARIES = {"munged": "munge", "mungekey": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd",
            "sbatch": "slurm-client", "scontrol": "slurm-client", "sinfo": "slurm-client"}


class SlurmHarnessError(Exception):
    """A clear reason why the Slurm harness cannot come up or go down."""


def log(msg: str) -> None:
    print(f"[slurm] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ configuration (pure)

def slurm_conf(d: Path, controller: str, controller_address: str, nodes: list[tuple[str, str]],
               munge_socket: Path) -> str:
    """slurm.conf of the harness: one controller at `controller_address`, `nodes` as (name,
    address), every path under `d`."""
    lines = [
        "# Written by tests/cluster/slurm.py; removed by its `down`.",
        "ClusterName=dlobd-emulated",
        f"SlurmctldHost={controller}({controller_address})",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={d / 'ctld-state'}",
        f"SlurmdSpoolDir={d / 'spool'}/%n",
        f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'run'}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log'}/slurmd-%n.log",
        # no cgroups in this container: the step's processes are tracked by their parentage
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "DefMemPerCPU=1024",
        "MailProg=/bin/true",
        "ReturnToService=2",
        # a cancelled job's processes get SIGTERM, then SIGKILL after this many seconds
        "KillWait=30",
        # finished jobs stay visible to scontrol for 5 minutes (tests read their state)
        "MinJobAge=300",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/backfill",
    ]
    lines += [f"NodeName={name} NodeAddr={address} CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} State=UNKNOWN"
              for name, address in nodes]
    lines.append(f"PartitionName=emulated Nodes={','.join(n for n, _ in nodes)} Default=YES "
                 "MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ state

class State(emulated.State):
    @classmethod
    def load(cls, state_dir: Path) -> State | None:
        path = state_dir / STATE_NAME
        if not path.exists():
            return None
        return cls(path, json.loads(path.read_text()))


def conf_path(state_dir: Path) -> Path:
    return state_dir / "etc" / "slurm.conf"


def client_env(state_dir: Path) -> dict:
    return {**os.environ, "SLURM_CONF": str(conf_path(state_dir))}


def preflight() -> None:
    if os.geteuid() != 0:
        raise SlurmHarnessError("not root: slurmd inside namespace hosts needs root")
    missing = sorted({pkg for tool, pkg in BINARIES.items() if shutil.which(tool) is None})
    if missing:
        raise SlurmHarnessError(f"Slurm is missing: apt-get install --no-install-recommends {' '.join(missing)} "
                                "(make slurm-deps)")


def start(state: State, what: str, argv: list[str], log_file: Path) -> subprocess.Popen:
    with log_file.open("ab") as err:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
    try:
        create_time = psutil.Process(popen.pid).create_time()
    except psutil.NoSuchProcess:
        create_time = 0.0
    state.add("process", pid=popen.pid, create_time=create_time, netns=None, what=what)
    return popen


def wait_for(check, timeout: float, what: str, popen: subprocess.Popen | None = None, log_file: Path | None = None):
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if popen is not None and popen.poll() is not None:
            raise SlurmHarnessError(f"{what} exited with status {popen.returncode}; "
                                    f"{log_file}: {emulated.tail(log_file)}")
        if time.monotonic() > deadline:
            raise SlurmHarnessError(f"{what} not ready within {timeout:g} s"
                                    + (f"; {log_file}: {emulated.tail(log_file)}" if log_file else ""))
        time.sleep(0.1)


def in_host(sshd_pid: int, argv: list[str]) -> list[str]:
    """`argv` inside an emulated host's namespaces (network, UTS, mount: those of its sshd)."""
    return ["nsenter", "-t", str(sshd_pid), "-n", "-u", "-m", "--", *argv]


def slurmd_argv(host: str, emulated_dir: Path, node_scratch: Path, scratch_mount: Path, state_dir: Path) -> list[str]:
    """slurmd as a node of the emulated host: its network namespace, a UTS and mount namespace of
    its own (the machine's /sys/fs/cgroup stays visible, which slurmd reads at start; `ip netns
    exec`'s namespace hides it) with the host's /etc/hosts and ssh client configuration, stack
    folder and scratch, and the run's /etc/slurm."""
    # what `ip netns exec` binds for the host's sessions (/etc/hosts, the ssh client's config)
    netns_etc = sorted((Path("/etc/netns") / host).iterdir())
    mounts = [*((entry, Path("/etc") / entry.name) for entry in netns_etc),
              (emulated_dir / "hosts" / host / emulated.STACK_MOUNT, emulated_dir / emulated.STACK_MOUNT),
              (node_scratch, scratch_mount), (state_dir / "etc", Path("/etc/slurm"))]
    script = " && ".join(f"mount --bind {src} {dst}" for src, dst in mounts)
    return ["nsenter", f"--net=/run/netns/{host}", "unshare", "--uts", "--mount", "--propagation", "private",
            "sh", "-c", f'{script} && hostname "$0" && exec "$@"', host,
            "slurmd", "-D", "-N", host, "-f", str(conf_path(state_dir))]


def bind(state: State, sshd_pid: int, host: str, source: Path, target: Path) -> None:
    state.add("mount", sshd_pid=sshd_pid, host=host, target=str(target))
    emulated.sh(*in_host(sshd_pid, ["mount", "--bind", str(source), str(target)]))


def up(state_dir: Path, emulated_dir: Path, timeout: float = 60) -> dict:
    preflight()
    if State.load(state_dir) is not None:
        raise SlurmHarnessError(f"{state_dir / STATE_NAME} exists: Slurm is up or half made; run down first")
    cluster = emulated.running_state(emulated_dir)
    plan = emulated.plan_of(cluster)
    sshds = {i["netns"]: i for i in cluster.data["made"] if i["kind"] == "process"}
    begin = time.monotonic()
    made_dir = not state_dir.exists()
    state_dir.mkdir(parents=True, exist_ok=True)
    state = State(state_dir / STATE_NAME, {"emulated": str(emulated_dir), "state_dir_made": made_dir, "made": []})
    state.save()
    closed = [str(p) for p in (state_dir, *state_dir.parents) if not p.stat().st_mode & 0o001]
    if closed:
        raise SlurmHarnessError(f"munged needs every folder above its socket open to all (o+x): {', '.join(closed)}")
    for sub in ("etc", "munge", "run", "log", "spool", "ctld-state", "scratch"):
        state.add("dir", path=str(state_dir / sub))
        (state_dir / sub).mkdir()
    (state_dir / "munge").chmod(0o755)  # munged insists on its socket folder's mode
    key = state_dir / "munge" / "munge.key"
    emulated.sh("mungekey", "-c", "-k", str(key))
    socket_path = state_dir / "munge" / "munge.socket.2"
    munge_log = state_dir / "log" / "munged.log"
    munged = start(state, "munged", ["munged", "-F", f"--socket={socket_path}", f"--key-file={key}",
                                     f"--pid-file={state_dir / 'run' / 'munged.pid'}",
                                     f"--log-file={munge_log}", f"--seed-file={state_dir / 'munge' / 'seed'}"],
                   munge_log)
    wait_for(socket_path.exists, timeout, "munged", munged, munge_log)

    controller = socket.gethostname()
    nodes = [(h.name, h.address) for h in plan.hosts]
    conf = conf_path(state_dir)
    conf.write_text(slurm_conf(state_dir, controller, plan.bridge_address, nodes, socket_path))
    ctld_log = state_dir / "log" / "slurmctld.log"
    ctld = start(state, "slurmctld", ["slurmctld", "-D", "-f", str(conf)], ctld_log)
    env = client_env(state_dir)

    def ctld_answers() -> bool:
        return subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True).stdout.count("UP") > 0

    wait_for(ctld_answers, timeout, "slurmctld", ctld, ctld_log)

    scratch_mount = state_dir / SCRATCH_MOUNT
    state.add("dir", path=str(scratch_mount))
    scratch_mount.mkdir()
    for host in plan.hosts:
        sshd_pid = sshds[host.name]["pid"]
        if emulated.process_alive(sshd_pid, sshds[host.name]["create_time"]) is None:
            raise SlurmHarnessError(f"host {host.name}: its sshd is gone (make the emulated cluster again)")
        node_scratch = state_dir / "scratch" / host.name
        node_scratch.mkdir()
        # ssh sessions on the host (the launchers' remote tasks) see the same scratch as its jobs
        bind(state, sshd_pid, host.name, node_scratch, scratch_mount)
        slurmd_log = state_dir / "log" / f"slurmd-{host.name}.log"
        start(state, f"slurmd of {host.name}",
              slurmd_argv(host.name, emulated_dir, node_scratch, scratch_mount, state_dir), slurmd_log)

    def all_idle() -> bool:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env, capture_output=True, text=True).stdout
        states = dict(line.split() for line in out.splitlines() if line.strip())
        return len(states) == len(nodes) and all(s == "idle" for s in states.values())

    wait_for(all_idle, timeout, "every slurmd idle", log_file=ctld_log)
    state.data["up_s"] = round(time.monotonic() - begin, 3)
    state.data["conf"] = str(conf)
    state.data["nodes"] = [n for n, _ in nodes]
    state.data["scratch"] = str(scratch_mount)
    state.save()
    log(f"slurmctld at {plan.bridge_address}:{CTLD_PORT}, slurmd on {', '.join(n for n, _ in nodes)}; "
        f"up in {state.data['up_s']:.1f} s; SLURM_CONF={conf}")
    return state.data


def remove(item: dict) -> None:
    if item["kind"] == "mount":
        proc = psutil.Process(item["sshd_pid"]) if psutil.pid_exists(item["sshd_pid"]) else None
        if proc is not None and proc.name() == "sshd":
            emulated.sh(*in_host(item["sshd_pid"], ["umount", item["target"]]), check=False)
    else:
        emulated.remove(item)


def jobs_processes(state_dir: Path) -> list[psutil.Process]:
    """Processes whose command line or working directory is the harness's: job steps included."""
    return emulated.stray_processes(state_dir)


def down(state_dir: Path) -> None:
    if os.geteuid() != 0:
        raise SlurmHarnessError("not root")
    state = State.load(state_dir)
    if state is None:
        log(f"nothing to remove: no {STATE_NAME} in {state_dir}")
        return
    made = state.data["made"]
    # slurmd first (its jobs' steps end with it), then slurmctld, munged; then the rest
    processes = [i for i in made if i["kind"] == "process"]
    failed = []
    for item in [*reversed(processes), *[i for i in reversed(made) if i["kind"] != "process"]]:
        try:
            remove(item)
        except (emulated.HarnessError, OSError, psutil.Error) as exc:
            failed.append((item, str(exc)))
    emulated.stop_processes(jobs_processes(state_dir))
    if failed:
        state.data["made"] = [i for i, _ in failed]
        state.save()
        raise SlurmHarnessError("could not remove: " + "; ".join(f"{i['kind']}: {why}" for i, why in failed))
    state.path.unlink()
    state.path.with_suffix(".tmp").unlink(missing_ok=True)
    if state.data.get("state_dir_made") and state_dir.exists() and not any(state_dir.iterdir()):
        state_dir.rmdir()
    log(f"removed Slurm ({len(made)} objects)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--emulated-state-dir", type=Path)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--timeout", type=float, default=60)
    sub.add_parser("down")
    sub.add_parser("env", help="print SLURM_CONF=... for a shell")
    args = parser.parse_args(argv)
    state_dir = args.state_dir.resolve()
    try:
        if args.command == "up":
            if args.emulated_state_dir is None:
                raise SlurmHarnessError("up needs --emulated-state-dir (the emulated cluster's state)")
            try:
                data = up(state_dir, args.emulated_state_dir.resolve(), args.timeout)
            except (SlurmHarnessError, emulated.HarnessError, OSError):
                if (state_dir / STATE_NAME).exists():
                    log(f"bring-up failed; `down` removes what {state_dir / STATE_NAME} lists")
                raise
            print(f"slurm_up_s: {data['up_s']}")
        elif args.command == "down":
            down(state_dir)
        elif args.command == "env":
            print(f"SLURM_CONF={conf_path(state_dir)}")
    except (SlurmHarnessError, emulated.HarnessError, OSError) as exc:
        print(f"slurm harness: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
