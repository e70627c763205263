"""Session fixtures for tests that need the provisioned local cluster.

`provisioned`: this machine provisioned from scratch with playbooks/site.yml into a fresh prefix
(a temporary folder; Maven's ~/.m2 and pip's cache are reused, so it takes minutes), run twice:
both runs' output and time are kept for the tests to check. `cluster`: the same prefix with HDFS
and YARN up (cluster-up.yml); stopped at the end of the session, and any daemon left is killed.

Other integration tests (experiment slices) use `stack_cluster`: `cluster` with DLOBD_PREFIX
pointing at it, so `runs.launch` runs its jobs there.

`emulated_site`: 1 master + 2 workers in network namespaces linked by emulated Ethernet eth-1g
(tests/cluster/emulated.py), provisioned once with site.yml over SSH. test_emulated_provision
checks that provisioning and runs points across the workers; test_slurm then runs its Slurm on
the same hosts, so the session provisions them once. Removed at the end of the session.
`modern_image`: the modern Apptainer image, built or reused from DLOBD_TEST_IMAGES (default the
stack's images folder), for make test-apptainer and make test-slurm.

DLOBD_TEST_CLUSTER=<prefix> makes the fixtures use that provisioned prefix with its cluster
already running on the inventory's default ports (a developer's own, e.g. ~/dlobd-stack) instead of provisioning a new one;
the tests that check provisioning itself are skipped then.
The cluster gets ports of its own: the local inventory's ports shifted by the first offset (a
multiple of 100) at which all of them are free on loopback, so a developer's running cluster on
the default ports (or another session's test cluster) is left alone. `cluster.ports` has them.
"""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from dlobd import ROOT, playbook_settings
from dlobd.cluster import provenance
from dlobd.execution import apptainer

sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated as emulated_harness  # noqa: E402  (the harness lives with the tests)

ANSIBLE_PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"
# Offsets tried for the test cluster's ports; all keep the shifted ports clear of the defaults.
PORT_OFFSETS = range(100, 800, 100)
# The shared emulated site: clear of the default plan (10.77) and of the other emulated tests'
# subnets (10.78.3, 10.78.7, 10.78.9; test_emulated_hosts uses this one too, before the site is
# made). eth-1g: the tier the specs' emulated points name.
EMULATED_SUBNET = "10.78.4.0/24"
EMULATED_TIER = "eth-1g"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports() -> dict[str, int]:
    """The inventory's daemon ports shifted by the first offset at which every one is free."""
    ports = playbook_settings()["dlobd_ports"]
    for offset in PORT_OFFSETS:
        shifted = {name: port + offset for name, port in ports.items()}
        if all(port_free(p) for p in shifted.values()):
            return shifted
    raise RuntimeError(f"no free set of ports for the test cluster: tried {ports} shifted by {list(PORT_OFFSETS)}")


@dataclass
class Run:
    rc: int
    out: str
    seconds: float

    def recap(self) -> dict[str, int]:
        match = re.search(r"^localhost\s+:\s+(.*)$", self.out, re.MULTILINE)
        assert match, "no PLAY RECAP line in the playbook's output"
        return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(1))}

    def changed_tasks(self) -> list[str]:
        task, found = None, []
        for line in self.out.splitlines():
            if line.startswith("TASK ["):
                task = line
            elif line.startswith("changed:") and task not in found:
                found.append(task)
        return found


@dataclass
class Provisioned:
    prefix: Path
    log_dir: Path
    ports: dict[str, int]
    runs: dict[str, Run] = field(default_factory=dict)
    reused: bool = False  # a developer's running cluster (DLOBD_TEST_CLUSTER), left as found
    extra_vars: dict = field(default_factory=dict)  # more -e variables for every playbook

    @property
    def env_file(self) -> Path:
        return self.prefix / "etc" / "dlobd-env.sh"

    @property
    def local_dir(self) -> Path:
        """This host's folder in the prefix (dlobd_local_dir's default): its configuration and state."""
        return self.prefix / "hosts" / socket.gethostname()

    def playbook(self, name: str, record: str | None = None, args: tuple[str, ...] = ()) -> Run:
        cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(ROOT / "playbooks" / name), *args,
               "-e", json.dumps({"dlobd_prefix": str(self.prefix), "dlobd_ports": self.ports, **self.extra_vars})]
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600, cwd=ROOT)
        run = Run(done.returncode, done.stdout + done.stderr, time.monotonic() - start)
        # Every run's output is kept, numbered, never overwritten.
        n = len(list(self.log_dir.glob("*.log")))
        (self.log_dir / f"{n:02d}-{name.removesuffix('.yml')}.log").write_text(run.out)
        if record:
            self.runs[record] = run
        return run

    def daemons(self) -> dict[str, psutil.Process]:
        """The running daemons of this prefix, by name."""
        return provenance.daemons(self.prefix)


@pytest.fixture(scope="session")
def provisioned(tmp_path_factory):
    base = tmp_path_factory.mktemp("dlobd")
    reused = os.environ.get("DLOBD_TEST_CLUSTER")
    if reused:
        prefix = Path(reused).expanduser()
        if not (prefix / "etc" / "dlobd-env.sh").is_file():
            pytest.fail(f"DLOBD_TEST_CLUSTER={reused}: no provisioned prefix there (etc/dlobd-env.sh)")
        (base / "logs").mkdir()
        yield Provisioned(prefix=prefix, log_dir=base / "logs", ports=playbook_settings()["dlobd_ports"], reused=True)
        return
    p = Provisioned(prefix=base / "stack", log_dir=base / "logs", ports=free_ports())
    p.log_dir.mkdir()
    try:
        first = p.playbook("site.yml", record="first")
        assert first.rc == 0, first.out[-5000:]
        p.runs["daemons_after_first"] = p.daemons()
        p.playbook("site.yml", record="rerun")
        yield p
    finally:
        p.playbook("cluster-down.yml")
        for proc in p.daemons().values():
            proc.kill()
        shutil.rmtree(p.prefix, ignore_errors=True)


@pytest.fixture
def cluster(provisioned):
    """The provisioned prefix with HDFS and YARN running (started again if a test stopped it)."""
    if len(provisioned.daemons()) < 4:
        run = provisioned.playbook("cluster-up.yml", record="cluster-up")
        assert run.rc == 0, run.out[-5000:]
    return provisioned


@contextlib.contextmanager
def stack_environment(prefix: Path, monkeypatch):
    """runs.launch reading the stack environment of `prefix` (DLOBD_PREFIX), its cached
    provenance dropped on the way in and out."""
    monkeypatch.setenv("DLOBD_PREFIX", str(prefix))
    provenance.provisioned_env.cache_clear()
    provenance.versions.cache_clear()
    try:
        yield
    finally:
        provenance.provisioned_env.cache_clear()
        provenance.versions.cache_clear()


@pytest.fixture
def stack_cluster(cluster, monkeypatch):
    """`cluster`, with the stack environment (DLOBD_PREFIX) pointing at it for runs.launch."""
    with stack_environment(cluster.prefix, monkeypatch):
        yield cluster


@dataclass
class EmulatedSite:
    state_dir: Path
    inventory: Path
    log_dir: Path
    runs: dict = field(default_factory=dict)
    extra_vars: dict = field(default_factory=dict)  # more -e variables for every playbook

    @property
    def plan(self) -> dict:
        return json.loads((self.state_dir / "state.json").read_text())["plan"]

    @property
    def hosts(self) -> dict[str, dict]:
        return {h["name"]: h for h in self.plan["hosts"]}

    def host(self, short: str) -> dict:
        return self.hosts[f"{self.plan['prefix']}-{short}"]

    def playbook(self, name: str, record: str | None = None) -> tuple[int, str, float]:
        cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(self.inventory), str(ROOT / "playbooks" / name)]
        if self.extra_vars:
            cmd += ["-e", json.dumps(self.extra_vars)]
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
        out = done.stdout + done.stderr
        # Every run's output is kept, numbered, never overwritten.
        n = len(list(self.log_dir.glob("*.log")))
        (self.log_dir / f"{n:02d}-{name.removesuffix('.yml')}.log").write_text(out)
        result = (done.returncode, out, time.monotonic() - start)
        if record:
            self.runs[record] = result
        return result


def play_recap(out: str) -> dict[str, dict[str, int]]:
    """A playbook's PLAY RECAP per host: {host: {ok: .., changed: .., unreachable: .., failed: ..}}."""
    tail = out[out.rindex("PLAY RECAP"):]
    return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
            for host, counts in re.findall(r"^(\S+)\s+:\s+(.*)$", tail, re.MULTILINE)}


def make_emulated_site(base: Path, subnet: str, tier: str, extra_vars: dict | None = None, workers: int = 2,
                       **plan_options) -> EmulatedSite:
    """1 master + `workers` emulated workers under `base` (plan_options as make_plan takes them:
    shared_prefix, gpu_workers, site ...), provisioned with site.yml (runs['first'])."""
    site = EmulatedSite(state_dir=base / "state", inventory=base / "hosts.yml", log_dir=base / "logs",
                        extra_vars=extra_vars or {})
    site.log_dir.mkdir(parents=True)
    emulated_harness.up(site.state_dir, emulated_harness.make_plan(workers, subnet, tier, **plan_options),
                        site.inventory, "/usr/sbin/sshd", sshd_timeout=15)
    site.playbook("site.yml", record="first")
    return site


def remove_emulated_site(site: EmulatedSite) -> None:
    site.playbook("cluster-down.yml")
    emulated_harness.down(site.state_dir)


@contextlib.contextmanager
def emulated_site_in(base: Path, subnet: str, tier: str = EMULATED_TIER, workers: int = 2, **plan_options):
    """make_emulated_site under `base`, its daemons stopped and its hosts removed on leaving, also
    when making it failed half-way."""
    site = None
    try:
        site = make_emulated_site(base, subnet, tier, workers=workers, **plan_options)
        yield site
    finally:
        if site is not None:
            remove_emulated_site(site)
        elif (base / "state" / "state.json").exists():
            emulated_harness.down(base / "state")


@pytest.fixture(scope="session")
def emulated_site(provisioned, tmp_path_factory):
    """The shared emulated hosts; they use this machine's Debian packages, which `provisioned`
    installs. A failed provisioning is kept in runs['first'] for the tests to report."""
    with emulated_site_in(tmp_path_factory.mktemp("emulated-site"), EMULATED_SUBNET) as site:
        yield site


@pytest.fixture(scope="session")
def modern_image() -> Path:
    images = Path(os.environ.get("DLOBD_TEST_IMAGES") or apptainer.default_images_dir())
    found = subprocess.run([sys.executable, "-m", "dlobd.cli", "image", "--images", str(images), "build",
                            str(apptainer.CONTAINERS_DIR / "modern.def")], cwd=ROOT, text=True,
                           capture_output=True)
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-3000:]
    path = Path(re.search(r"^(?:built|reused): (\S+\.sif)", found.stdout, re.M).group(1))
    assert path.exists()
    return path
