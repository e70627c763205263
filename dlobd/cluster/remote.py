"""Running on the cluster's hosts: a command on another host over ssh that runs in that host's own
stack environment and ends with its connection, the ports a run's processes bind and where they
were chosen, and the checks that a process of a run carries its own host's identity and ports."""

import re
import shlex
import socket
import subprocess
from collections import Counter
from pathlib import Path

from dlobd.cluster import provenance

# The launch host's own processes: they run here, with this host's environment and free ports
LOCAL_HOSTS = ("127.0.0.1", "localhost")
# The variables of dlobd-env.sh that name the host it was written for (the stack_env role's
# template exports each as that host's dlobd_cluster_address)
IDENTITY = ("DLOBD_CLUSTER_ADDRESS", "SPARK_LOCAL_IP", "TFOS_SERVER_HOST")
# dlobd-env.sh's range of ports for the processes of runs on the workers (dlobd_worker_ports)
WORKER_PORTS = "DLOBD_WORKER_PORTS"
PORT_PROBE_TIMEOUT_S = 60
# bound to port 0 at once, so the OS gives n distinct ports free on that host now
PORT_PROBE = ("import socket, sys\n"
              "socks = [socket.socket() for _ in range(int(sys.argv[1]))]\n"
              "for s in socks:\n    s.bind(('', 0))\n"
              "print(*[s.getsockname()[1] for s in socks])\n")
SSH = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"]


def free_ports(n: int) -> list[int]:
    """n distinct ports free on this host now (the OS's choice; released before the job's
    own processes bind them)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def env_file() -> Path:
    """The stack environment of every host: its own dlobd-env.sh, at the same path on each."""
    return provenance.prefix() / "etc" / "dlobd-env.sh"


def ssh_argv(host: str, cwd: str, env: dict, argv: list[str]) -> list[str]:
    """`ssh <host>` running argv in cwd, in that host's own stack environment with `env` (the
    run's own variables) over it; the remote process ends when the connection does.

    The remote side sources the host's own dlobd-env.sh, as its daemons do, rather than getting
    the launch host's variables: its addresses (IDENTITY) and paths are that host's. cwd is made
    where it is missing, so a host that does not share the runs folder has one too (the task's
    output comes back over the connection). ssh passes no environment, so `env` goes on the
    remote command line. The remote shell starts the task in the background and waits for it; a
    watcher reading stdin kills it at EOF, which comes when the launcher closes the pipe or the
    ssh client dies (time limit), so no process outlives its run on another host.
    """
    # (a background job's stdin is /dev/null, so the watcher reads the connection as fd 3)
    keep_alive = ('exec 3<&0; "$@" </dev/null 3<&- & task=$!; '
                  '{ read -r _ <&3; kill -TERM "$task" 2>/dev/null; } & watch=$!; '
                  'wait "$task"; code=$?; kill "$watch" 2>/dev/null; exit "$code"')
    assignments = "".join(f"{shlex.quote(f'{k}={v}')} " for k, v in sorted(env.items()))
    remote = (f"mkdir -p {shlex.quote(cwd)} && cd {shlex.quote(cwd)} && . {shlex.quote(str(env_file()))}"
              f" && exec env {assignments}bash -c {shlex.quote(keep_alive)} dlobd-task "
              + " ".join(shlex.quote(a) for a in argv))
    return [*SSH, host, remote]


# ---------------------------------------------------------------- ports of a run's processes

def port_range() -> tuple[int, int] | None:
    """(first, last) of dlobd_worker_ports (DLOBD_WORKER_PORTS of dlobd-env.sh), None where the
    inventory sets none; ValueError naming the setting where it is no range of ports."""
    text = (provenance.stack_setting(WORKER_PORTS) or "").strip()
    if not text:
        return None
    found = re.fullmatch(r"(\d+)-(\d+)", text)
    if not found or not 1024 <= int(found[1]) <= int(found[2]) <= 65535:
        raise ValueError(f"{WORKER_PORTS}={text!r} (dlobd_worker_ports): not a range of ports "
                         "FIRST-LAST within 1024-65535, e.g. 40000-40999")
    return int(found[1]), int(found[2])


def placeholder(host: str, i: int = 0, n: int = 1) -> str:
    """What a dry run shows for the i-th of the n ports a host will choose at launch."""
    return f"<port chosen on {host}>" if n == 1 else f"<port {i + 1} chosen on {host}>"


def ports_on(host: str, n: int) -> list[int]:
    """n distinct ports free now on `host`, chosen there over ssh by the stacks' Python (the
    same path on every host); RuntimeError naming the host where it cannot say."""
    python = provenance.stack_setting("DLOBD_PYTHON") or "python3"
    argv = [*SSH, "-o", "ConnectTimeout=10", host, shlex.join([python, "-c", PORT_PROBE, str(n)])]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PORT_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"choosing {n} port(s) on {host} over ssh: {exc}") from None
    ports = proc.stdout.split()
    if proc.returncode != 0 or len(ports) != n or not all(p.isdigit() for p in ports):
        raise RuntimeError(f"choosing {n} port(s) on {host} over ssh failed (exit status {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-300:] or 'no output'}")
    return [int(p) for p in ports]


def worker_ports(hosts: list[str], dry_run: bool) -> tuple[list, dict]:
    """A port for each entry of `hosts` (the host of the process that binds it), and how each
    host's were chosen ({host: "on <host>" or "from dlobd_worker_ports <range>"}): the launch
    host's own processes (LOCAL_HOSTS) take ports free here; another host's take the first of
    dlobd_worker_ports where the inventory sets it (a site that opens only that range between
    its hosts), else ports that host chooses at launch (a dry run shows placeholders)."""
    span = port_range()
    picked, chosen = {}, {}
    for host, n in Counter(hosts).items():
        if host in LOCAL_HOSTS:
            picked[host], chosen[host] = free_ports(n), f"on {host}"
        elif span:
            if n > span[1] - span[0] + 1:
                raise ValueError(f"{n} processes on {host} need {n} ports; {WORKER_PORTS} "
                                 f"{span[0]}-{span[1]} (dlobd_worker_ports) holds {span[1] - span[0] + 1}")
            picked[host] = list(range(span[0], span[0] + n))
            chosen[host] = f"from dlobd_worker_ports {span[0]}-{span[1]}"
        else:
            picked[host] = ([placeholder(host, i, n) for i in range(n)] if dry_run else ports_on(host, n))
            chosen[host] = f"on {host}"
    left = {host: iter(ports) for host, ports in picked.items()}
    return [next(left[host]) for host in hosts], chosen


# ---------------------------------------------------------------- checks of a run's processes

ASSIGNED = re.compile(r"\b(" + "|".join(IDENTITY) + r")=([^\s'\"\\;&]*)")
SOURCES_OWN_ENV = re.compile(r"(?:^|&& )\. \S*/etc/dlobd-env\.sh(?: |$)")


def _what(process: dict) -> str:
    command = shlex.join(str(a) for a in process.get("command") or [])
    return (f"process {process.get('name')} on {process.get('host')} "
            f"(`{command[:160]}{' ...' if len(command) > 160 else ''}`)")


def identity_errors(process: dict, hosts) -> list[str]:
    """Where a process of a run (an entry of LaunchResult.extra["processes"]: name, host, command,
    env) would not have its own host's identity: an IDENTITY variable, in its env or on its
    command line, that names anything but its host; a command over ssh to another host than its
    own, or one that does not source that host's dlobd-env.sh. `hosts` are the cluster's hosts
    (records with address and ethernet_address, as the inventory's Host): a host is known by
    either address."""
    host = str(process.get("host"))
    hosts = list(hosts)
    own = [host, *(a for h in hosts if host in (h.address, h.ethernet_address)
                   for a in (h.address, h.ethernet_address) if a and a != host)]
    names = {a: h.name for h in hosts for a in (h.address, h.ethernet_address) if a}
    errors = []
    if host not in LOCAL_HOSTS and host not in names:
        errors.append(f"{_what(process)}: its host {host} is none of the cluster's hosts "
                      "(rule: a process runs on a host of the cluster)")
    command = [str(a) for a in process.get("command") or []]
    assigned = [(k, str(v)) for k, v in (process.get("env") or {}).items() if k in IDENTITY]
    assigned += ASSIGNED.findall(shlex.join(command))
    for name, value in assigned:
        if value not in own:
            whose = f"the address of {names[value]}" if value in names else "not its host's address"
            errors.append(f"{_what(process)}: {name}={value} is {whose} (rule: a process carries "
                          f"its own host's identity, {' or '.join(own)})")
    if command[:1] == ["ssh"]:
        if command[-2] not in own:
            errors.append(f"{_what(process)}: ssh runs it on {command[-2]}, not on its host {host} "
                          "(rule: a process runs where it is placed)")
        if not SOURCES_OWN_ENV.search(command[-1]):
            errors.append(f"{_what(process)}: the remote command does not source {host}'s own "
                          "dlobd-env.sh (rule: a process on another host runs in that host's "
                          "stack environment)")
    return errors


def port_errors(process: dict) -> list[str]:
    """Where a process of a run does not record how the ports it binds were chosen (`ports`,
    {what: port}, and `ports_chosen`), or they were chosen neither on its own host ("on <host>";
    a dry run's placeholders name that host) nor from the inventory's dlobd_worker_ports (every
    port within the range)."""
    if "ports" not in process or "ports_chosen" not in process:
        return [f"{_what(process)}: no ports and ports_chosen recorded (rule: a process records "
                "the ports it binds and where they were chosen)"]
    host, chosen, ports = str(process.get("host")), process["ports_chosen"], process["ports"]
    if not ports:
        return []
    span = re.fullmatch(r"from dlobd_worker_ports (\d+)-(\d+)", str(chosen))
    if chosen == f"on {host}":
        wrong = {what: p for what, p in ports.items()
                 if not (isinstance(p, int) and 0 <= p <= 65535 or
                         isinstance(p, str) and re.fullmatch(rf"<port (\d+ )?chosen on {re.escape(host)}>", p))}
        return [f"{_what(process)}: port {what} {p!r} is neither a port nor one {host} chooses "
                "(rule: a port is chosen on the host that binds it)" for what, p in wrong.items()]
    if span:
        first, last = int(span[1]), int(span[2])
        return [f"{_what(process)}: port {what} {p!r} is outside dlobd_worker_ports {first}-{last} "
                "(rule: a port of the range is within it)"
                for what, p in ports.items() if not (isinstance(p, int) and first <= p <= last)]
    return [f"{_what(process)}: ports chosen {chosen!r}, neither on its host ({host}) nor from "
            "dlobd_worker_ports (rule: a port is chosen on the host that binds it, or from the "
            "inventory's range)"]
