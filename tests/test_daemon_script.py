"""sbin/dlobd-daemon (role hadoop's template) with a daemon started through a wrapper that stays as
the JVM's parent, as Apptainer's runtime parent does under the apptainer install method: status
finds the daemon by its child's marker, stop's SIGTERM reaches it through the parent, and stop's
SIGKILL takes the whole group (killing the parent alone left the JVM running under Apptainer)."""

import os
import subprocess
import time
from pathlib import Path

import jinja2
import psutil
import pytest

from dlobd import ROOT

TEMPLATE = ROOT / "playbooks/roles/hadoop/templates/dlobd-daemon.j2"

# Stands in for `apptainer exec ... java`: the process started (its command line without the
# daemon's marker, like "Apptainer runtime parent: ...") runs the "JVM" as its child and forwards
# SIGTERM to it. IGNORE_TERM=1 makes the "JVM" ignore SIGTERM.
FAKE_JAVA = r"""#!/usr/bin/env bash
export FAKE_JVM_ARGS="$*"
exec bash -c 'python3 -c "
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN if os.environ.get(\"IGNORE_TERM\") else lambda *a: os._exit(0))
time.sleep(600)" $FAKE_JVM_ARGS & child=$!
trap "kill -TERM $child" TERM
wait $child; wait $child'
"""


def setup_prefix(tmp_path: Path, stop_timeout: int) -> Path:
    prefix = tmp_path / "prefix"
    java_home = tmp_path / "jvm"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin/java").write_text(FAKE_JAVA)
    (java_home / "bin/java").chmod(0o755)
    (prefix / "etc").mkdir(parents=True)
    (prefix / "sbin").mkdir()
    (prefix / "etc/dlobd-env.sh").write_text(
        f"export DLOBD_PREFIX={prefix} DLOBD_LOCAL_DIR={prefix} JAVA_HOME={java_home} HADOOP_HOME={tmp_path}/hadoop "
        f"HADOOP_CONF_DIR={prefix}/etc/hadoop DLOBD_HADOOP_CLASSPATH={tmp_path}/hadoop/lib\n")
    script = jinja2.Template(TEMPLATE.read_text()).render(
        ansible_managed="test", dlobd_prefix=str(prefix), dlobd_daemon_stop_timeout_s={"namenode": stop_timeout},
        hadoop_daemon_main_class={"namenode": "org.example.NameNode"}, dlobd_daemon_heap_mb={"namenode": 64},
        hadoop_daemon_java_opts={"namenode": ""})
    (prefix / "sbin/dlobd-daemon").write_text(script)
    (prefix / "sbin/dlobd-daemon").chmod(0o755)
    return prefix


def daemon(prefix: Path, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([prefix / "sbin/dlobd-daemon", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def marked_processes(prefix: Path) -> list[psutil.Process]:
    """Processes whose command line names this test's prefix (the daemon's log folder)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(prefix) in arg for arg in proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.parametrize("ignore_term", ["", "1"], ids=["sigterm", "sigkill"])
def test_daemon_behind_a_runtime_parent_is_found_and_stopped(tmp_path, ignore_term):
    # SIGTERM must be forwarded well within the timeout on a loaded machine; the SIGKILL case waits 1 s
    stop_timeout = 1 if ignore_term else 20
    prefix = setup_prefix(tmp_path, stop_timeout)
    started = daemon(prefix, "start", "namenode", IGNORE_TERM=ignore_term)
    assert started.returncode == 0, started.stderr
    pid = int((prefix / "var/run/namenode.pid").read_text())
    parent_cmdline = " ".join(psutil.Process(pid).cmdline())
    assert "-Ddlobd.daemon=namenode" not in parent_cmdline  # only the child carries the marker
    status = daemon(prefix, "status", "namenode")
    assert (status.returncode, status.stdout) == (0, f"namenode running (pid {pid})\n")
    stopped = daemon(prefix, "stop", "namenode")
    expected = "namenode killed after 1s" if ignore_term else "namenode stopped"
    assert stopped.stdout.startswith(expected), stopped.stdout
    deadline = time.monotonic() + 10
    while marked_processes(prefix) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_processes(prefix) == []
    assert daemon(prefix, "status", "namenode").stdout == "namenode stopped\n"
