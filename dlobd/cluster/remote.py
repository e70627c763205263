"""Running on the cluster's hosts: free ports here, and a command on another host over ssh that
ends with its connection."""

import shlex
import socket


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


def ssh_argv(host: str, cwd: str, env: dict, argv: list[str]) -> list[str]:
    """`ssh <host>` running argv in cwd with env; the remote process ends when the connection does.

    ssh passes no environment, so the variables go on the remote command line. The remote
    shell starts the task in the background and waits for it; a watcher reading stdin kills
    it at EOF, which comes when the launcher closes the pipe or the ssh client dies (time
    limit), so no process outlives its run on another host.
    """
    # (a background job's stdin is /dev/null, so the watcher reads the connection as fd 3)
    keep_alive = ('exec 3<&0; "$@" </dev/null 3<&- & task=$!; '
                  '{ read -r _ <&3; kill -TERM "$task" 2>/dev/null; } & watch=$!; '
                  'wait "$task"; code=$?; kill "$watch" 2>/dev/null; exit "$code"')
    remote = (f"cd {shlex.quote(cwd)} && exec env "
              + " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))
              + f" bash -c {shlex.quote(keep_alive)} dlobd-task "
              + " ".join(shlex.quote(a) for a in argv))
    return ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", host, remote]
