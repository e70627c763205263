"""The tf_cnn_benchmarks launcher's command lines at paper scale, for every point of the specs
that name the stack, on an inventory's cluster big enough for all of them (dry runs: nothing is
started; Ansible reads the inventory, nothing is sent to its addresses)."""

import shlex
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import inventory, provenance
from dlobd.execution import runs
from dlobd import spec as dspec
from dlobd.stacks import tf_cnn_benchmarks as tfcnn
from dlobd.stacks import runner
from dlobd.stacks.shared import tf_cluster
from dlobd import NotRunnable

SPECS = {eid: s for eid, s in dspec.load_all(ROOT).items()
         if s.data["stack"] == "tf_cnn_benchmarks" and s.scale("paper").get("runnable")}
HOME = "/sw/tf-benchmarks"
PROTOCOL = {"ipoib": "grpc", "verbs": "grpc+verbs", "mpi": "grpc+mpi", "grpc+rdma": "grpc"}
GPU_HOSTS = [f"10.44.0.{i}" for i in range(11, 19)]   # g1..g8: 2 K80 each
CPU_HOSTS = ["10.44.0.21", "10.44.0.22"]               # c1, c2


def write_inventory(root: Path, settings: dict) -> Path:
    hosts = {"head": {"dlobd_cluster_address": "10.44.0.1", "dlobd_hardware": {"hca": "mlx5", "gpus": 0}}}
    hosts.update({f"g{i}": {"dlobd_cluster_address": a, "dlobd_hardware": {"hca": "mlx5", "ib_rate_gbps": 56,
                                                                          "gpus": 2, "gpu_model": "K80"}}
                  for i, a in enumerate(GPU_HOSTS, 1)})
    hosts.update({f"c{i}": {"dlobd_cluster_address": a, "dlobd_hardware": {"hca": "mlx5", "gpus": 0}}
                  for i, a in enumerate(CPU_HOSTS, 1)})
    for h in hosts.values():
        h.update(dlobd_prefix="/stack", dlobd_profile="paper", dlobd_stack_settings=settings)
    gpu = [f"g{i}" for i in range(1, 9)]
    groups = {"namenode": ["head"], "resourcemanager": ["head"], "workers": gpu + ["c1", "c2"], "gpu": gpu}
    path = root / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts, "children": {
        g: {"hosts": {h: None for h in members}} for g, members in groups.items()}}}))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return inventory.load(write_inventory(tmp_path_factory.mktemp("inv"), {
        "TF_CNN_BENCHMARKS_HOME": HOME, "DLOBD_TF_RDMA_PYTHON": "/sw/tf1/bin/python",
        "RDMA_GRPC_HOME": "/sw/rdma-grpc", "MVAPICH2_HOME": "/sw/mvapich2"}))


def flags(argv: list[str]) -> dict:
    return dict(a[2:].split("=", 1) for a in argv if a.startswith("--"))


def remote(argv: list[str]) -> tuple[str, list[str]]:
    """(host, the task's own argv) of an ssh command of stacks.ssh_argv."""
    assert argv[0] == "ssh"
    words = shlex.split(argv[-1])
    return argv[-2], words[words.index("dlobd-task") + 1:]


def rank(process: dict) -> tuple[str, list[str]]:
    """(host, the task's own argv) of a rank of the run's one mpirun (tf_cluster.place, rank)."""
    argv = process["command"]
    assert argv[:2] == ["bash", "-c"] and argv[3] == "dlobd-rank" and argv[5] == "/stack/etc/dlobd-env.sh"
    own = argv[argv.index("env") + 1:]
    while "=" in own[0]:
        own = own[1:]
    return process["host"], own


CASES = [(eid, pid, point) for eid, s in sorted(SPECS.items()) for pid, point in s.points("paper")]


def test_the_stack_is_named_by_these_specs():
    assert sorted(SPECS) == ["dlobd-fig11", "slides-inception3-4nodes", "slides-inception3-8nodes",
                             "slides-resnet50", "tfgrpc-fig4"]


@pytest.mark.parametrize("eid, pid, point", CASES, ids=[f"{e}:{p}" for e, p, _ in CASES])
def test_command_of_every_paper_point(cluster, tmp_path, eid, pid, point):
    spec = SPECS[eid]
    params = {**spec.scale("paper")["fixed"], **point}
    with provenance.inventory_in_use(cluster):
        result = runs.launch(spec.data, "paper", point, tmp_path / "runs", dry_run=True)
    assert result.status == "dry run", result.reason
    assert result.command[-2:] == ["supervise", str(Path(result.cwd) / "tasks.json")]
    network = point.get("network", "ipoib")
    tasks = {p["name"]: (rank(p) if network == "mpi" else remote(p["command"])) for p in result.extra["processes"]}
    n_workers = int(params.get("workers", params.get("nodes")))
    n_ps = int(params.get("parameter_servers", 1))
    assert sorted(tasks) == sorted([f"worker:{i}" for i in range(n_workers)] + [f"ps:{i}" for i in range(n_ps)])
    if network == "mpi":  # one mpirun of the TF build's MPI (MVAPICH2 by default), one rank per task
        mpirun = shlex.split(result.extra["mpirun"])
        assert mpirun[:3] == ["/sw/mvapich2/bin/mpirun", "-f", str(Path(result.cwd) / "mpi-hosts")]
        assert mpirun.count("-np") == len(tasks) and mpirun.count(":") == len(tasks) - 1
        hosts = list(dict.fromkeys(h for h, _ in tasks.values()))
        assert result.extra["files"]["mpi-hosts"] == "".join(
            f"{h}:{sum(x == h for x, _ in tasks.values())}\n" for h in hosts)
    # the paper profile's stacks' Python has no TensorFlow: gRPC too runs in the site's TF 1.x build
    python = "/sw/tf1/bin/python"
    worker_hosts = GPU_HOSTS[:n_workers]  # one worker per GPU node
    ps_hosts = CPU_HOSTS[:n_ps] if eid == "tfgrpc-fig4" else [worker_hosts[i % n_workers] for i in range(n_ps)]
    for name, (host, argv) in tasks.items():
        job, index = name.split(":")
        assert argv[:2] == [python, f"{HOME}/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"]
        f = flags(argv)
        assert (f["job_name"], f["task_index"]) == (job, index)
        assert host == (worker_hosts if job == "worker" else ps_hosts)[int(index)]
        assert [h.rsplit(":", 1)[0] for h in f["worker_hosts"].split(",")] == worker_hosts
        assert [h.rsplit(":", 1)[0] for h in f["ps_hosts"].split(",")] == ps_hosts
        assert f["server_protocol"] == PROTOCOL[network]
        assert f["variable_update"] == "parameter_server"
        assert f["model"] == str(point.get("model", spec.data["model"]))
        assert f["batch_size"] == str(params["batch"])
        assert f["device"] == "gpu"
        assert f["num_gpus"] == str(params.get("gpus_per_node", 1))
        # the papers state no batch counts: the script's own
        assert "num_batches" not in f and "num_warmup_batches" not in f
    assert result.labels["tf_build"] == tf_cluster.RDMA_BUILD
    assert not (tmp_path / "runs").exists()


def test_a_rehearsal_cuts_the_batches_and_keeps_the_layout(cluster, tmp_path):
    spec = SPECS["tfgrpc-fig4"]
    point = dict(spec.points("paper")[0][1])
    with provenance.inventory_in_use(cluster):
        measured, rehearsed = (runs.launch(spec.data, "paper", point, tmp_path / f"runs-{rehearse}", dry_run=True,
                                           rehearse=rehearse) for rehearse in (False, True))
    for result in (measured, rehearsed):
        assert result.status == "dry run", result.reason
    argvs = [{p["name"]: remote(p["command"])[1] for p in r.extra["processes"]} for r in (measured, rehearsed)]
    assert argvs[0].keys() == argvs[1].keys()
    def layout(f: dict) -> dict:  # every flag but the batch counts, the hosts without their ports
        return {k: ",".join(h.rsplit(":", 1)[0] for h in v.split(",")) if k.endswith("_hosts") else v
                for k, v in f.items() if not k.endswith("batches")}

    for name, argv in argvs[1].items():
        f = flags(argv)
        assert (f["num_batches"], f["num_warmup_batches"]) == ("2", "1")
        assert layout(f) == layout(flags(argvs[0][name]))


def test_without_a_checkout_the_point_says_how_to_get_it(tmp_path):
    cluster = inventory.load(write_inventory(tmp_path, {"DLOBD_TF_RDMA_PYTHON": "/sw/tf1/bin/python"}))
    spec = SPECS["dlobd-fig11"]
    with provenance.inventory_in_use(cluster):
        result = runs.launch(spec.data, "paper", {"network": "ipoib", "nodes": 2}, tmp_path / "runs", dry_run=True)
    assert result.status == "not runnable"
    assert "needs tf_cnn_benchmarks" in result.reason and "TF_CNN_BENCHMARKS_HOME" in result.reason
    # the launcher itself says the same when asked directly
    ctx = runner.RunContext(spec=spec.data, scale="paper", cluster="local", point={"network": "ipoib", "nodes": 2},
                          attempt_dir=tmp_path / "a", runs_dir=tmp_path, fixed=spec.scale("paper")["fixed"],
                          dry_run=True)
    with provenance.inventory_in_use(cluster), pytest.raises(NotRunnable, match="on no registry"):
        tfcnn.launch(ctx)


def test_too_few_gpu_workers_are_named(tmp_path, cluster):
    spec = SPECS["slides-inception3-8nodes"]
    small = inventory.Cluster(cluster.source, cluster.hosts, cluster.groups, cluster.launch_host,
                              {**cluster.settings, "DLOBD_GPU_WORKERS": " ".join(GPU_HOSTS[:3])})
    ctx = runner.RunContext(spec=spec.data, scale="paper", cluster="local", point={"network": "verbs", "batch": 16},
                          attempt_dir=tmp_path / "a", runs_dir=tmp_path, fixed=spec.scale("paper")["fixed"],
                          dry_run=True)
    with provenance.inventory_in_use(small), pytest.raises(
            NotRunnable, match="8 worker task.s., one per node, need as many workers of group gpu; the cluster has 3"):
        tfcnn.launch(ctx)


def test_an_mpi_point_without_the_builds_mpi_names_both_ways_out(tmp_path, cluster):
    spec = SPECS["dlobd-fig11"]
    point = {"network": "mpi", "nodes": 2}
    ctx = runner.RunContext(spec=spec.data, scale="paper", cluster="local", point=point, attempt_dir=tmp_path / "a",
                            runs_dir=tmp_path, fixed=spec.scale("paper")["fixed"], dry_run=True)
    for settings, said in [({}, "set MVAPICH2_HOME"), ({"DLOBD_TF_RDMA_MPI": "intelmpi"}, "DLOBD_TF_RDMA_MPI=intelmpi")]:
        lacking = {k: v for k, v in cluster.settings.items() if k != "MVAPICH2_HOME"}
        site = inventory.Cluster(cluster.source, cluster.hosts, cluster.groups, cluster.launch_host, {**lacking, **settings})
        with provenance.inventory_in_use(site), pytest.raises(NotRunnable) as found:
            tfcnn.launch(ctx)
        assert said in str(found.value) and "DLOBD_TF_RDMA_MPI" in str(found.value)
    # Debian's OpenMPI, named: its mpirun with a --host per rank
    site = inventory.Cluster(cluster.source, cluster.hosts, cluster.groups, cluster.launch_host,
                             {**cluster.settings, "DLOBD_TF_RDMA_MPI": "openmpi"})
    with provenance.inventory_in_use(site):
        result = tfcnn.launch(ctx)
    words = shlex.split(result.extra["mpirun"])
    assert words.count("--host") == words.count("-np") == 3  # 2 workers and a parameter server
