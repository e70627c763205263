"""The Slurm path for real: Debian's Slurm on 1 master + 2 emulated hosts (tests/cluster/slurm.py),
one sbatch job spanning the three nodes that starts HDFS and YARN from the hosts' provisioned
prefix, runs a TensorFlowOnSpark point and a native TensorFlow point with tasks on both workers
through the pipeline and tears down; the same points run without Slurm (the emulated cluster's own
daemons, launched from the master) for compare-paths; a second job cancelled mid-run, a third
warned of its time limit mid-run; and the points of an experiment that needs no cluster daemons submitted
one Slurm job each by Snakemake's Slurm executor (profiles/slurm).

The hosts, by what the environment asks:
- by default (make test) the session's `emulated_site` (conftest), provisioned once for
  test_emulated_provision too: the jobs run from the hosts' provisioned prefix (slurm+prefix);
- DLOBD_SLURM_TEST_APPTAINER=1 (make test-slurm): hosts of their own, provisioned with the
  apptainer method from the modern image (conftest's `modern_image`): the jobs start HDFS and YARN
  from the image, and every run must say slurm+apptainer and name it;
- DLOBD_SLURM_TEST_EMULATED (a state dir; its inventory as DLOBD_SLURM_TEST_INVENTORY): a
  developer's cluster, already provisioned by either method, reused as found.
Traffic goes only to loopback and the harness's namespace addresses. `make bench-slurm` prints the
`name: value` lines this module writes.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from conftest import EMULATED_TIER, EmulatedSite, make_emulated_site, remove_emulated_site
from dlobd import ROOT
from dlobd.execution import apptainer, runs, slurmenv
from dlobd.results import comparepaths

sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated as emulated_harness  # noqa: E402  (the harness lives with the tests)
from cluster import slurm as slurm_harness  # noqa: E402

# the apptainer hosts': clear of the default plan (10.77), bench-emulated's (10.79) and the other
# emulated tests' (10.78.x)
SUBNET = "10.78.9.0/24"
# the emulated link the specs' local matrices name
NETWORK = f"{EMULATED_TIER}-emulated"
# rdmatf-fig6's 2-node point on the emulated link (tasks on both workers; the first of its
# repeats), through the pipeline
PIPELINE_POINTS = {"rdmatf-fig6": {"network": NETWORK, "nodes": 2, "repeat": 1}}
# dlobd-fig5b's 2 TF nodes on YARN (one executor per worker) on the emulated link: not in its
# spec's local matrix (loopback only), so launched beside the pipeline (DLOBD_LAUNCH)
LAUNCHED_POINTS = {"dlobd-fig5b": {"gpus": 2, "network": NETWORK, "workload": "mnist"}}
POINTS = {**PIPELINE_POINTS, **LAUNCHED_POINTS}
# an experiment whose points start every process they need (TF-gRPC-Bench on a node's loopback):
# one Slurm job per point through profiles/slurm
EXECUTOR_EXPERIMENT = "tfgrpc-fig13"
LAUNCH = """
import copy, json, sys
from dlobd import spec
from dlobd.execution import runs
data = copy.deepcopy(spec.load_all()[sys.argv[3]].data)
print(runs.launch(data, "local", json.loads(sys.argv[2]), sys.argv[1], cluster="emulated"))
"""

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and slurmd need root"),
]


def bench(name: str, value) -> None:
    print(f"\n{name}: {value}")


@dataclass
class Cluster:
    site: EmulatedSite
    slurm_dir: Path
    up_s: float

    @property
    def state_dir(self) -> Path:
        return self.site.state_dir

    @property
    def plan(self) -> dict:
        return self.site.plan

    def name(self, short: str) -> str:
        return self.site.host(short)["name"]

    def address(self, short: str) -> str:
        return self.site.host(short)["address"]

    def env(self) -> dict:
        return slurm_harness.client_env(self.slurm_dir)

    def image(self) -> str | None:
        """The image the hosts' stack runs from (a stack provisioned with the apptainer method,
        e.g. a reused cluster's: slurm+apptainer), else None (slurm+prefix)."""
        master_stack = self.state_dir / "hosts" / self.name("master") / "stack"
        return (slurmenv.prefix_image(str(master_stack)) or {}).get("path")

    def execution_path(self) -> str:
        return "slurm+apptainer" if self.image() else "slurm+prefix"

    def sbatch(self, shared: Path, points: dict, launched: dict) -> int:
        env = {**self.env(), "DLOBD_CHECKOUT": str(ROOT), "DLOBD_SHARED": str(shared),
               "DLOBD_SCRATCH": str(self.slurm_dir / slurm_harness.SCRATCH_MOUNT),
               "DLOBD_PREFIX": str(self.state_dir / "stack"),
               "DLOBD_POINTS": " ".join(f"{exp}/{runs.point_id(p)}" for exp, p in points.items()),
               "DLOBD_LAUNCH": " ".join(f"{exp}={json.dumps(p, separators=(',', ':'))}" for exp, p in launched.items())}
        done = subprocess.run(["sbatch", "--parsable", "--nodes=3", "--time=00:30:00", "--signal=B:USR1@120",
                               f"--output={shared}/dlobd-%j.out", str(ROOT / "slurm" / "dlobd.sbatch")],
                              env=env, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip())

    def job_state(self, job_id: int) -> str:
        out = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], env=self.env(),
                             capture_output=True, text=True).stdout
        return next((f.split("=", 1)[1] for f in out.split() if f.startswith("JobState=")), "")

    def wait_job(self, job_id: int, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while (state := self.job_state(job_id)) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            assert time.monotonic() < deadline, f"job {job_id} still {state} after {timeout} s"
            time.sleep(2)
        return state


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    reused = os.environ.get("DLOBD_SLURM_TEST_EMULATED")
    own = None
    if reused:
        state_dir = Path(reused)
        assert (state_dir / "state.json").is_file(), f"DLOBD_SLURM_TEST_EMULATED={reused}: no emulated cluster there"
        logs = tmp_path_factory.mktemp("reused-logs")
        site = EmulatedSite(state_dir, Path(os.environ["DLOBD_SLURM_TEST_INVENTORY"]), logs)
    elif os.environ.get("DLOBD_SLURM_TEST_APPTAINER") == "1":
        image = request.getfixturevalue("modern_image")
        apptainer_vars = {"dlobd_install_method": "apptainer", "apptainer_image": str(image),
                          "apptainer_image_shared": True, "apptainer_binary": str(apptainer.find_apptainer())}
        site = own = make_emulated_site(tmp_path_factory.mktemp("slurm-hosts"), SUBNET, EMULATED_TIER, apptainer_vars)
    else:
        site = request.getfixturevalue("emulated_site")
    assert site.plan["network"] == NETWORK, f"the points need hosts linked by {NETWORK}, not {site.plan['network']}"
    if not reused:
        rc, out, _ = site.runs["first"]
        assert rc == 0, "the emulated hosts' provisioning failed:\n" + out[-5000:]
    # munged wants every folder above its socket open to all: not pytest's 0700 tmp folders
    harness_dir = Path(tempfile.mkdtemp(prefix="dlobd-slurm-harness-", dir="/tmp"))
    harness_dir.chmod(0o755)
    c = Cluster(site, harness_dir, 0.0)
    try:
        c.up_s = slurm_harness.up(c.slurm_dir, site.state_dir)["up_s"]
        yield c
    finally:
        slurm_harness.down(c.slurm_dir)
        harness_dir.rmdir()
        if own is not None:
            remove_emulated_site(own)


def job_processes(marker: str) -> list[str]:
    """Live processes whose command line names `marker` (a job's directory)."""
    return [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(p.info["cmdline"] or [])]


def test_slurm_comes_up_on_the_master_and_both_workers(cluster):
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=cluster.env(), capture_output=True, text=True).stdout
    assert dict(line.split() for line in out.splitlines()) == {cluster.name(n): "idle" for n in ("master", "worker1", "worker2")}
    bench("slurm_up_s", f"{cluster.up_s:.3f}")


@pytest.fixture(scope="module")
def local_runs(cluster, tmp_path_factory):
    """The same points without Slurm: the emulated cluster's own daemons, launched from the master."""
    runs_dir = tmp_path_factory.mktemp("local-path") / "runs"
    rc, out, _ = cluster.site.playbook("cluster-up.yml")
    assert rc == 0, out[-3000:]
    try:
        for experiment, point in POINTS.items():
            on_master = emulated_harness.host_command(
                cluster.state_dir, "master", ["env", f"DLOBD_PREFIX={cluster.state_dir / 'stack'}",
                                              sys.executable, "-c", LAUNCH, str(runs_dir), json.dumps(point), experiment])
            done = subprocess.run(on_master, capture_output=True, text=True, timeout=900, cwd=ROOT)
            assert done.returncode == 0, done.stderr[-3000:]
    finally:
        cluster.site.playbook("cluster-down.yml")
    return runs_dir


@pytest.fixture(scope="module")
def finished_job(cluster, tmp_path_factory):
    shared = tmp_path_factory.mktemp("shared")
    start = time.monotonic()
    job_id = cluster.sbatch(shared, PIPELINE_POINTS, LAUNCHED_POINTS)
    state = cluster.wait_job(job_id, timeout=1500)
    return job_id, shared, state, time.monotonic() - start


def test_one_job_starts_hdfs_yarn_runs_both_points_on_both_workers_and_tears_down(cluster, finished_job):
    job_id, shared, state, _ = finished_job
    out = (shared / f"dlobd-{job_id}.out").read_text()
    assert state == "COMPLETED", out[-3000:]
    job_dir = shared / f"slurm-{job_id}"
    plan = json.loads((job_dir / "job.json").read_text())
    assert plan["master"] == cluster.name("master")
    assert plan["workers"] == [cluster.name("worker1"), cluster.name("worker2")]
    # the daemons bind the harness's namespace addresses only (the rendered configuration's source)
    assert plan["addresses"] == {cluster.name(n): cluster.address(n) for n in ("master", "worker1", "worker2")}
    ready = json.loads((job_dir / "ready.json").read_text())
    bench("slurm_job_cluster_ready_s", ready["job_start_to_ready_s"])
    records = {}
    for experiment, point in POINTS.items():
        attempts = runs.attempts(runs.point_dir(shared / "runs", "slurm", "local", experiment, point))
        assert len(attempts) == 1, (experiment, out[-3000:])
        records[experiment] = runs.read_attempt(attempts[0], shared / "runs").record
    ok = sum(r["status"] == "ok" for r in records.values())
    bench("slurm_points_ok", ok)
    bench("slurm_points_total", len(records))
    for experiment, record in records.items():
        assert record["status"] == "ok", (experiment, record.get("reason"))
        assert record["execution"]["path"] == cluster.execution_path()
        assert record["execution"]["slurm"]["job_id"] == job_id
        assert record["execution"]["slurm"]["nodes"] == [cluster.name(n) for n in ("master", "worker1", "worker2")]
        assert (record["execution"]["image"] or {}).get("path") == cluster.image()
        # tasks (native TF: ps:0, worker:0 ...) or executors (TFoS: executor:1 ...) on both workers
        used = {h["address"] for h in record["hosts"] if any(":" in r for r in h["roles"])}
        assert used >= {cluster.address("worker1"), cluster.address("worker2")}, (experiment, record["hosts"])
    # the daemons' logs are on the shared file system, one folder per node
    for short, daemon in (("master", "namenode"), ("master", "resourcemanager"), ("worker1", "datanode"),
                          ("worker2", "nodemanager")):
        assert (job_dir / "logs" / cluster.name(short) / "var-log" / daemon / f"{daemon}.log").stat().st_size > 0
    # torn down: no job directory on any node, nothing of the job running
    scratch = cluster.slurm_dir / "scratch"
    assert [p for p in scratch.glob("*/dlobd-slurm-*")] == []
    assert job_processes(plan["job_dir"]) == []


def test_compare_paths_finds_the_same_statuses_on_both_paths(local_runs, finished_job, capsys):
    _job_id, shared, _state, _ = finished_job
    rows = comparepaths.compare(local_runs, shared / "runs")
    print(comparepaths.report(rows, local_runs, shared / "runs"))
    assert len(rows) == len(POINTS)
    bench("cross_path_mismatches", sum(r.mismatch for r in rows))
    assert [r.mismatch for r in rows] == [False] * len(POINTS)
    assert all(r.a.record["execution"]["path"] == "bare-metal" for r in rows)


def test_a_cancelled_job_stops_everything_keeps_its_logs_and_says_why(cluster, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    experiment = "rdmatf-fig6"
    job_id = cluster.sbatch(shared, {experiment: POINTS[experiment]}, {})
    point_dir = runs.point_dir(shared / "runs", "slurm", "local", experiment, POINTS[experiment])
    deadline = time.monotonic() + 600
    # cancel once the point's command runs (its stdout exists) and has not finished
    while not (list(point_dir.glob("attempt-*/stdout.log")) and cluster.job_state(job_id) == "RUNNING"):
        assert cluster.job_state(job_id) in ("PENDING", "RUNNING", "CONFIGURING"), (shared / f"dlobd-{job_id}.out").read_text()
        assert time.monotonic() < deadline, "the point never started"
        time.sleep(1)
    time.sleep(3)
    assert not list(point_dir.glob("attempt-*/run.json")), "the point finished before the cancel"
    subprocess.run(["scancel", str(job_id)], env=cluster.env(), check=True)
    assert cluster.wait_job(job_id, timeout=180) == "CANCELLED"
    plan = json.loads((shared / f"slurm-{job_id}" / "job.json").read_text())
    deadline = time.monotonic() + 60
    while (left := job_processes(plan["job_dir"]) + job_processes(str(shared))) and time.monotonic() < deadline:
        time.sleep(1)
    assert left == []
    attempt = runs.attempts(point_dir)[0]
    record = runs.read_attempt(attempt, shared / "runs").record
    assert record["status"] == "failed"
    assert "cancelled by Slurm" in record["reason"]
    assert (attempt / "stdout.log").exists()
    assert [p for p in (cluster.slurm_dir / "scratch").glob("*/dlobd-slurm-*")] == []
    assert (shared / f"slurm-{job_id}" / "logs" / cluster.name("master") / "var-log" / "namenode" / "namenode.log").exists()


def test_a_job_warned_of_its_time_limit_records_its_run_hung_and_tears_down(cluster, tmp_path):
    # The warning Slurm sends before the time limit (the script's --signal=B:USR1@<s>) is sent
    # here by hand once the point runs: when Slurm's own would come depends on how fast the point
    # is on this machine (a quiet one finished the TFoS point before it).
    shared = tmp_path / "shared"
    shared.mkdir()
    job_id = cluster.sbatch(shared, {}, LAUNCHED_POINTS)
    experiment, point = next(iter(LAUNCHED_POINTS.items()))
    point_dir = runs.point_dir(shared / "runs", "slurm", "local", experiment, point)
    deadline = time.monotonic() + 600
    while not (list(point_dir.glob("attempt-*/prepare.log")) and cluster.job_state(job_id) == "RUNNING"):
        assert cluster.job_state(job_id) in ("PENDING", "RUNNING", "CONFIGURING"), (shared / f"dlobd-{job_id}.out").read_text()
        assert time.monotonic() < deadline, "the point never started"
        time.sleep(1)
    assert not list(point_dir.glob("attempt-*/run.json")), "the point finished before the warning"
    subprocess.run(["scancel", "--batch", "--signal=USR1", str(job_id)], env=cluster.env(), check=True)
    state = cluster.wait_job(job_id, timeout=600)
    out = (shared / f"dlobd-{job_id}.out").read_text()
    assert "SIGUSR1 received" in out, out[-3000:]
    # the trap ends the batch script (exit 143)
    assert state == "FAILED", state
    attempt = runs.attempts(point_dir)[0]
    record = runs.read_attempt(attempt, shared / "runs").record
    assert record["status"] == "hung" and record["reason"].startswith("Slurm time limit"), record.get("reason")
    # what the run wrote is kept (the signal may come while it stages its data or trains)
    assert (attempt / "prepare.log").stat().st_size > 0
    plan = json.loads((shared / f"slurm-{job_id}" / "job.json").read_text())
    assert job_processes(plan["job_dir"]) == []
    assert [p for p in (cluster.slurm_dir / "scratch").glob("*/dlobd-slurm-*")] == []


def test_the_slurm_executor_profile_runs_each_point_as_a_slurm_job_of_its_own(cluster, tmp_path):
    runs_dir, state_dir = tmp_path / "runs", tmp_path / "state"
    env = {**cluster.env(), "DLOBD_PREFIX": str(cluster.state_dir / "stack")}
    # only the runs (rule `runs`): the report rule would write into the checkout's report/
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "snakemake"), "--profile", "profiles/slurm", "--slurm-no-account",
         "--slurm-logdir", str(tmp_path / "slurm-logs"), "--config", f"experiments=[{EXECUTOR_EXPERIMENT}]",
         "launch=True", f"runs_dir={runs_dir}", f"state_dir={state_dir}", "--", "runs"],
        env=env, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    records = [runs.read_attempt(attempt, runs_dir).record
               for attempt in sorted(runs_dir.glob(f"local/local/{EXECUTOR_EXPERIMENT}/*/attempt-*"))]
    assert len(records) == 3  # loopback x uniform, random, skew
    nodes = {cluster.name(n) for n in ("master", "worker1", "worker2")}
    for record in records:
        assert record["status"] == "ok", record.get("reason")
        execution = record["execution"]
        assert execution["path"] == cluster.execution_path()
        assert (execution["image"] or {}).get("path") == cluster.image()
        assert len(execution["slurm"]["nodes"]) == 1 and set(execution["slurm"]["nodes"]) <= nodes
    # each point was a job of its own
    assert len({r["execution"]["slurm"]["job_id"] for r in records}) == 3
    bench("slurm_executor_points_ok", sum(r["status"] == "ok" for r in records))
