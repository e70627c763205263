"""Provenance helpers that read the provisioned environment."""

import os
import stat
from pathlib import Path

import pytest

from dlobd.cluster import provenance

DATA = Path(__file__).parent / "data"


def test_workers_are_read_from_the_space_separated_env_file_list(monkeypatch):
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "10.9.0.2 10.9.0.3"})
    assert provenance.workers() == ["10.9.0.2", "10.9.0.3"]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": ""})
    assert provenance.workers() == []


def test_hosts_of_an_emulated_cluster_carry_its_link(monkeypatch):
    hosts = [{"name": "10.77.0.2", "address": "10.77.0.2", "roles": ["worker"]},
             {"name": "vm", "address": "127.0.0.1", "roles": ["worker:0", "ps:0"]}]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_EMULATED_LINK": "emulated Ethernet eth-1g"})
    assert provenance.with_link(hosts) == [{**hosts[0], "link": "emulated Ethernet eth-1g"}, hosts[1]]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {})
    monkeypatch.delenv("DLOBD_EMULATED_LINK", raising=False)
    assert provenance.with_link(hosts) == hosts


def test_run_json_carries_each_hosts_fingerprint_and_the_calibration(tmp_path, monkeypatch):
    """This host's files are read from its folder and the prefix; another host's over ssh, from
    the folder its dlobd-env.sh names (faked here: no traffic leaves the test), a missing one is
    null, a damaged one an error naming it."""
    import json
    import subprocess

    prefix = tmp_path / "prefix"
    own = prefix / "hosts" / "vm"
    for folder in (prefix, own):
        (folder / "etc").mkdir(parents=True)
    (own / "etc/fabric.json").write_text(json.dumps({"schema": 1, "host": "vm", "summary": "x"}))
    (prefix / "etc/calibration.json").write_text('{"link": "loopback (one host: vm)"')  # cut short
    monkeypatch.setattr(provenance, "prefix", lambda: prefix)
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "127.0.0.1 10.9.0.2 10.9.0.3",
                                                           "DLOBD_LOCAL_DIR": str(own)})
    monkeypatch.setattr(provenance, "is_local_address", lambda host: host.startswith("127."))
    remote = {"10.9.0.2": (0, json.dumps({"schema": 1, "host": "w2"})), "10.9.0.3": (0, "__absent__\n")}
    calls = []
    real_run = subprocess.run

    def fake_ssh(argv, **kwargs):
        if argv[0] != "ssh":
            return real_run(argv, **kwargs)
        calls.append(argv)
        address = argv[argv.index("ConnectTimeout=10") + 1]
        if argv[-1].endswith('echo "$DLOBD_LOCAL_DIR"'):  # the host's own folder, as its dlobd-env.sh names it
            return subprocess.CompletedProcess(argv, 0, f"/w/{address}\n", "")
        code, out = remote[address]
        return subprocess.CompletedProcess(argv, code, out, "")

    monkeypatch.setattr(provenance.subprocess, "run", fake_ssh)
    got = provenance.collect({"path": "local", "slurm": None, "image": None})
    host = [h["name"] for h in got["hosts"] if h["address"] == "127.0.0.1"][0]
    assert got["fabric"] == {host: {"schema": 1, "host": "vm", "summary": "x"},
                             "10.9.0.2": {"schema": 1, "host": "w2"}, "10.9.0.3": None}
    assert got["calibration"]["error"].startswith(f"127.0.0.1:{prefix}/etc/calibration.json: not JSON")
    assert [c[-1] for c in calls] == [
        f'. {prefix}/etc/dlobd-env.sh >/dev/null 2>&1; echo "$DLOBD_LOCAL_DIR"',
        "cat /w/10.9.0.2/etc/fabric.json 2>/dev/null || echo __absent__",
        f'. {prefix}/etc/dlobd-env.sh >/dev/null 2>&1; echo "$DLOBD_LOCAL_DIR"',
        "cat /w/10.9.0.3/etc/fabric.json 2>/dev/null || echo __absent__"]
    # a path of this host's folder is the same path of that host's folder there; others stay
    assert provenance.host_path("10.9.0.2", own / "var/yarn/logs") == Path("/w/10.9.0.2/var/yarn/logs")
    assert provenance.host_path("10.9.0.2", prefix / "data") == prefix / "data"


# ---------------------------------------------------------------- versions under the apptainer method
# The stacks' Java, Python and MPI are the image's, asked through the prefix's wrappers (here small
# scripts that answer as the image's commands do), never the host's own on its PATH.

def script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def image_prefix(tmp_path, monkeypatch):
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc/dlobd-env.sh").write_text(
        f"export DLOBD_INSTALL_METHOD=apptainer\n"
        f"export JAVA_HOME={prefix}/libexec/apptainer/jvm\n"
        f"export DLOBD_PYTHON={prefix}/python/bin/python\n"
        f"export DLOBD_PYTHON_HOME={prefix}/python\n"
        "export HADOOP_VERSION=2.7.3 SPARK_VERSION=2.1.2\n")
    # Java 8 prints its version on stderr, after whatever the container runtime says first
    script(prefix / "libexec/apptainer/jvm/bin/java",
           "echo 'INFO:    underlay of /etc/localtime required more than 50 bind mounts' >&2\n"
           "echo 'openjdk version \"1.8.0_504\"' >&2\n")
    script(prefix / "python/bin/python", "echo 2.7.18\n")
    monkeypatch.setenv("DLOBD_PREFIX", str(prefix))
    provenance.provisioned_env.cache_clear()
    provenance.versions.cache_clear()
    yield prefix
    provenance.provisioned_env.cache_clear()
    provenance.versions.cache_clear()


def test_java_python_and_mpi_are_the_images_through_the_prefix(image_prefix):
    found = provenance.versions()
    assert found["java"] == 'openjdk version "1.8.0_504"'
    assert found["python"] == "2.7.18"
    assert found["mpi"] is None  # no MPI wrapper in this prefix: the host's mpirun is not the stacks'
    assert (found["hadoop"], found["spark"]) == ("2.7.3", "2.1.2")


def test_an_mpi_wrapper_in_the_prefix_is_asked(image_prefix):
    script(image_prefix / "bin/mpirun", "echo 'mpirun (Open MPI) 4.1.6'\necho 'Report bugs' \n")
    assert provenance.versions()["mpi"] == "mpirun (Open MPI) 4.1.6"


def test_a_java_that_fails_gives_no_version(image_prefix):
    os.remove(image_prefix / "libexec/apptainer/jvm/bin/java")
    assert provenance.versions()["java"] is None


def test_changed_since_names_the_files_that_differ_from_a_commit_and_none_for_an_unknown_one(tmp_path):
    import subprocess
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "spec.yaml").write_text("a: 1\n")
    (tmp_path / "figure.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "recorded"], check=True)
    recorded = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "figure.py").write_text("x = 2\n")        # a change elsewhere than the runs' sources
    assert provenance.changed_since(recorded, ("spec.yaml",), tmp_path) == ()
    (tmp_path / "spec.yaml").write_text("a: 2\n")         # uncommitted: still a change
    assert provenance.changed_since(recorded, ("spec.yaml", "gone.py"), tmp_path) == ("spec.yaml",)
    assert provenance.changed_since("0" * 40, ("spec.yaml",), tmp_path) is None


def test_daemon_cpus_gives_each_daemon_of_the_prefix_the_cpus_it_may_run_on(tmp_path, monkeypatch):
    import subprocess
    import sys
    import time

    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path / "stack"))
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    # a NodeManager of this prefix started pinned to one CPU, one of another prefix as it is
    pinned = subprocess.Popen([*sleeper, "-Ddlobd.daemon=nodemanager", f"-Dhadoop.home.dir={tmp_path}/stack/hadoop"],
                              preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    other = subprocess.Popen([*sleeper, "-Ddlobd.daemon=datanode", "-Dhadoop.home.dir=/elsewhere/hadoop"])
    try:
        deadline = time.monotonic() + 10
        while not provenance.daemon_cpus() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert provenance.daemon_cpus() == {"nodemanager": 1}
        assert provenance.system()["daemon_cpus"] == {"nodemanager": 1}
    finally:
        for proc in (pinned, other):
            proc.kill()
            proc.wait()


def test_cpu_isa_names_the_vector_instruction_sets_of_a_real_cpuinfo(tmp_path):
    # this project's machine of 2026-11-30: an AMD EPYC with AVX2 and no AVX-512
    assert provenance.cpu_isa(DATA / "cpuinfo/amd-epyc-avx2.txt") == ["sse4_2", "avx", "avx2", "fma"]
    assert provenance.cpu_isa(tmp_path / "absent") is None
    assert provenance.system()["cpu_isa"] == provenance.cpu_isa()
