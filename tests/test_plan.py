"""`dlobd plan` (dlobd/execution/plan.py): what it says of an install on this machine, and of the clusters of
Ansible inventories (tests/inventories.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import inventory
from dlobd.execution import plan
from inventories import EXAMPLE, PAPER_DATASETS, write_other, write_plain


def test_jars_in_a_prefix_that_was_never_fully_provisioned_are_no_install(tmp_path):
    # a provisioning cut short leaves Hadoop's jars but no etc/dlobd-env.sh (written last)
    (tmp_path / "hadoop-3.4.1" / "lib").mkdir(parents=True)
    (tmp_path / "hadoop-3.4.1" / "lib" / "hadoop-common-3.4.1.jar").write_bytes(b"")
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan"], capture_output=True, text=True,
                         env={"DLOBD_PREFIX": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True).stdout
    hadoop = next(line for line in out.splitlines() if line.split()[1:2] == ["hadoop"])
    assert hadoop.split()[0] == "no" and "no etc/dlobd-env.sh" in hadoop


PLAN_LINE = re.compile(r"^  (runnable|partly|not runnable)\s+(\S+): (.*)$")


def plan_output(inventory_path, whole: bool = False) -> tuple:
    """(experiment -> (verdict, the rest of its line), the settings its summary asks to add, as
    {'vars': ..., 'hosts': ...}) of `dlobd plan --scale paper --inventory`; `whole`: and the
    plan's output before its summary."""
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper",
                          "--inventory", str(inventory_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    lines = {m[2]: (m[1], m[3]) for m in map(PLAN_LINE.match, out.splitlines()) if m}
    summary = out[out.index(plan.SUMMARY_HEAD):]
    asks = {} if summary.startswith(f"{plan.SUMMARY_HEAD}: none") else \
        yaml.safe_load(summary.split("\n", 1)[1])["all"]
    return (lines, asks, out[:out.index(plan.SUMMARY_HEAD)]) if whole else (lines, asks)


def plan_lines(inventory_path) -> dict:
    """experiment -> (verdict, the rest of its line) of `dlobd plan --scale paper --inventory`."""
    return plan_output(inventory_path)[0]


def merged(into, more):
    """`more` added to `into` as the summary says to: mappings entry by entry, lists joined."""
    if isinstance(into, dict) and isinstance(more, dict):
        return {**into, **{k: merged(into.get(k), v) for k, v in more.items()}}
    if isinstance(into, list) and isinstance(more, list):
        return list(dict.fromkeys([*into, *more]))
    return more


def filled(asks, key=None, host=None):
    """The summary with each <placeholder> replaced by a value of its kind, as a site would."""
    if isinstance(asks, dict):
        return {k: filled(v, k, k if key == "hosts" else host) for k, v in asks.items()}
    if not (isinstance(asks, str) and asks.startswith("<")):
        return asks
    if key in ("cores", "memory_gb"):
        return {"cores": 48, "memory_gb": 192}[key]
    if key == "dlobd_ethernet_address":
        return f"10.99.0.{sum(map(ord, host)) % 250 + 1}"
    return f"/sw/{key}"


def with_example_vars(root: Path, **settings) -> Path:
    """The example inventory with `settings` under its all: vars:."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["all"]["vars"].update(settings)
    root.mkdir(parents=True, exist_ok=True)
    (root / "hosts.yml").write_text(yaml.safe_dump(data))
    return root / "hosts.yml"


def pasted(path: Path, asks: dict, root: Path) -> Path:
    """The inventory at `path` with a plan's summary added once, its placeholders filled."""
    data = yaml.safe_load(path.read_text())
    data["all"] = merged(data["all"], filled(asks))
    root.mkdir(parents=True, exist_ok=True)
    (root / "hosts.yml").write_text(yaml.safe_dump(data))
    return root / "hosts.yml"


@pytest.mark.parametrize("method", ["spack", "apptainer"])
@pytest.mark.parametrize("write", [lambda root, **v: write_plain(root, **v), with_example_vars],
                         ids=["6-worker plain inventory", "example-ib"])
def test_the_settings_one_plan_names_are_all_a_second_plan_needs(tmp_path, write, method):
    """Pasted once, placeholders filled, the summary leaves the second plan asking for nothing:
    what still blocks a point is the cluster's size, software never released, or a parameter the
    paper does not state. Neither plan names a setting the inventory cannot set (foreign_names)."""
    first = write(tmp_path / "first", dlobd_install_method=method)
    _, asks, said = plan_output(first, whole=True)
    assert foreign_names(said) == set()
    assert asks["vars"] and all(name in plan_settings() for name in asks["vars"]), asks
    assert all(set(v) <= {"dlobd_hardware", "dlobd_ethernet_address"} for v in asks.get("hosts", {}).values())
    lines, again, said = plan_output(pasted(first, asks, tmp_path / "second"), whole=True)
    assert again == {}, again
    assert foreign_names(said) == set()
    blocked = " ".join(text for verdict, text in lines.values() if verdict != "runnable")
    assert not re.search(r"\bset [A-Z_]+\b", blocked), blocked


def plan_settings() -> set:
    """The variables an inventory may set: the roles' defaults and dlobd's documented ones."""
    files = [*ROOT.glob("playbooks/roles/*/defaults/main.yml"), *ROOT.glob("playbooks/roles/*/defaults/main/*.yml")]
    return {name for f in files for name in yaml.safe_load(f.read_text()) or {}}


def test_one_plan_names_every_unmet_need_of_a_point(tmp_path):
    """A first plan of a plain inventory: no need hides another, and each setting a launcher
    names comes with the inventory variable that gives it."""
    lines, asks = plan_output(write_plain(tmp_path))
    # BigDL trains on the real CIFAR-10, which the datasets role installs only where asked (a download)
    for eid in ("dlobd-fig6c", "dlobd-fig7b"):
        assert lines[eid][0] == "not runnable" and "needs data set cifar10: the datasets role installed mnist, " \
            "fashion-mnist, cifar10-synthetic" in lines[eid][1], lines[eid]
    assert (asks["vars"]["datasets_names"], asks["vars"]["datasets_source"]) == (
        ["mnist", "fashion-mnist", "cifar10-synthetic", "cifar10"], "download")
    # what the paper leaves unstated runs with the spec's assumed values: fig7b's 192 cores in 24-core
    # executors ask for more nodes than the 4 workers outside the GPU label
    assert "192 cores as 8 executors x 24 cores need 8 nodes" in lines["dlobd-fig7b"][1]
    with_data, _ = plan_output(write_plain(tmp_path / "with-data", **PAPER_DATASETS))
    assert with_data["dlobd-fig6c"][0] == "partly" and with_data["dlobd-fig6c"][1].startswith("1 of 2 points")
    assert with_data["dlobd-fig7b"][0] == "partly" and with_data["dlobd-fig7b"][1].startswith("1 of 6 points")
    pagerank = lines["slides-pagerank-32nodes"][1]
    assert "needs hibench" in pagerank and "needs 32 worker nodes" in pagerank
    # its TensorFlow runs in the paper image's Python (no DLOBD_TFOS_PYTHON given): only GPU hosts lack
    assert lines["tfgrpc-fig4"] == ("not runnable", "3 worker task(s), one per node, need as many workers "
                                                     "of group gpu; the cluster has 2")
    mmlspark = lines["dlobd-fig4c"][1]
    assert "needs cntk" in mmlspark
    # each in the inventory's words, dlobd-env.sh's name in parentheses, not named twice
    assert "to mmlspark_cntk_homes (role mmlspark; CNTK_HOME_GPU_CUDNN)" in mmlspark
    for launcher_name, variable in (("MMLSPARK_MPI_HOME", "mmlspark_mpi_home"), ("MMLSPARK_PYTHON", "mmlspark_python")):
        assert f"set {variable} (role mmlspark; {launcher_name})" in mmlspark
    assert "(in the inventory: mmlspark" not in mmlspark
    assert asks["vars"]["dlobd_paper_stacks"] == ["caffeonspark", "mmlspark"] and asks["vars"]["hibench_enabled"] is True
    assert set(asks["vars"]["mmlspark_cntk_homes"]) == {"cpu-mkl", "cpu-openblas", "gpu-cudnn"}
    # the spack method builds one CaffeOnSpark device per host: the plan asks for the git method
    assert asks["vars"]["caffeonspark_install_method"] == "git" and "gpu-cudnn" in asks["vars"]["caffeonspark_builds"]


TF_PIECES = ("dlobd-fig5b", "dlobd-fig9", "rdmatf-fig1", "tfgrpc-fig4")


def tensorflow_lines(out: str) -> set:
    """The plan's lines of the capabilities tensorflow and tensorflowonspark."""
    return {line.split(None, 2)[2] for line in out.splitlines()
            if line.split()[1:2] in (["tensorflow"], ["tensorflowonspark"])}


def test_without_a_site_python_tensorflow_runs_in_the_paper_image_s(tmp_path):
    """The plain inventory (paper profile, spack method) names no DLOBD_TFOS_PYTHON: TensorFlow 1.x
    and TensorFlowOnSpark run in the paper image's Python, whose wrapper role python_env exports, so
    no TensorFlow piece of a point lacks anything and the summary asks for no such Python."""
    path = write_plain(tmp_path)
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--inventory", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    image = ("the paper image's Python (DLOBD_TFOS_PYTHON=/scratch/dlobd/libexec/apptainer/tfos-python/bin/python2.7; "
             "python_env_tfos_image \"\": the controller's build of containers/paper-tfos-bigdl.def, built or fetched "
             "by the preflight)")
    assert tensorflow_lines(out) == {
        f"the paper profile's TensorFlowOnSpark runs its points in {image}; not checked from here",
        f"the paper profile's native TensorFlow 1.x runs in {image}, gRPC only; not checked from here"}
    lines, asks = plan_output(path)
    for eid in TF_PIECES:
        assert not re.search(r"needs tensorflow|DLOBD_TFOS_PYTHON", lines[eid][1]), lines[eid]
    assert lines["rdmatf-fig1"][0] == "runnable"
    # fig9's two IPoIB points (TFoS and native TF) run; its RDMA ones lack TF's verbs build only
    assert lines["dlobd-fig9"][1].startswith("2 of 4 points") and "needs tf-rdma" in lines["dlobd-fig9"][1]
    assert "DLOBD_TFOS_PYTHON" not in asks["vars"].get("dlobd_stack_settings", {})
    # an image the inventory names is the one the plan names
    image = "https://images.example.org/paper-tfos-bigdl.sif"
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--inventory",
                          str(write_plain(tmp_path / "url", python_env_tfos_image=image))],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    assert all(f"python_env_tfos_image {image}, built or fetched by the preflight" in line
               for line in tensorflow_lines(out))


def test_a_site_python_given_is_the_one_tensorflow_runs_in(tmp_path):
    python = "/sw/py27-tf14/bin/python2.7"
    path = write_plain(tmp_path, dlobd_stack_settings={"DLOBD_TFOS_PYTHON": python})
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--inventory", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    assert tensorflow_lines(out) == {
        f"the paper profile's TensorFlowOnSpark runs its points in DLOBD_TFOS_PYTHON={python} "
        "(dlobd_stack_settings); not checked from here",
        f"the paper profile's native TensorFlow 1.x runs in DLOBD_TFOS_PYTHON={python} "
        "(dlobd_stack_settings), gRPC only; not checked from here"}
    lines, _ = plan_output(path)
    assert all(not re.search(r"needs tensorflow|DLOBD_TFOS_PYTHON", lines[eid][1]) for eid in TF_PIECES)


def test_each_python_named_is_the_one_its_points_run_in(tmp_path):
    """With the site's TF build for RDMA beside the paper image's Python, the plan says which runs
    what, as the launchers do: TensorFlowOnSpark's other points stay in the image's Python."""
    rdma = "/sw/tf1-verbs/bin/python"
    path = write_plain(tmp_path, dlobd_stack_settings={"DLOBD_TF_RDMA_PYTHON": rdma})
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--inventory", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    tfos, tf = sorted(tensorflow_lines(out), key=lambda line: "native" in line)
    assert "TensorFlowOnSpark runs its points in the paper image's Python" in tfos
    assert tfos.endswith(f", those of network rdma in DLOBD_TF_RDMA_PYTHON={rdma} (dlobd_stack_settings); "
                         "not checked from here")
    assert tf == (f"the paper profile's native TensorFlow 1.x runs in DLOBD_TF_RDMA_PYTHON={rdma} "
                  "(dlobd_stack_settings), every point; not checked from here")


def test_the_apptainer_method_plans(tmp_path):
    """The plain inventory on the apptainer method: its image's TF 1.x Python stands in for a site's,
    so the TensorFlow experiments plan as the cluster's size allows."""
    lines, asks = plan_output(write_plain(tmp_path, dlobd_install_method="apptainer"))
    # its image leaves MPI out (the build skips the role mpi), not TF-gRPC-Bench
    assert "needs mpi: the image of containers/paper-tfos-bigdl.def leaves MPI (and hr_reduce) out" in lines["scaffe-fig13"][1]
    for eid in ("rdmatf-fig1", "dlobd-fig9", "dlobd-fig5b", "tfgrpc-fig8"):
        assert lines[eid][0] in ("runnable", "partly") and "DLOBD_TFOS_PYTHON" not in lines[eid][1], lines[eid]
    assert "DLOBD_TFOS_PYTHON" not in (asks["vars"].get("dlobd_stack_settings") or {})


def test_plan_of_the_example_inventory_counts_the_builds_its_roles_install():
    """The example runs the caffeonspark role (a CPU and a CUDA build) and the mmlspark role
    (CNTK's GPU build): their points plan runnable where the cluster's size allows, and only
    the devices without a build, and the nodes beyond its GPU workers (for GPU points) or beyond
    the worker outside their exclusive YARN label (for CPU points, Hadoop 2.7), are named."""
    lines = plan_lines(EXAMPLE)
    verdict, text = lines["dlobd-fig4a"]
    # cpu-openblas on 1 node, gpu-cudnn on the 2 GPU workers' label
    assert verdict == "partly" and text.startswith("3 of 20 points"), text
    assert "add cpu-mkl to caffeonspark_builds (role caffeonspark, which records CAFFEONSPARK_HOME_CPU_MKL)" in text
    # where its MKL comes from
    assert ("its MKL: Intel's PyPI wheels, which the role installs into the prefix (caffeonspark_mkl_packages), "
            "or a site's MKL (caffeonspark_mkl_root)") in text
    assert "add gpu to caffeonspark_builds (role caffeonspark, which records CAFFEONSPARK_HOME_GPU)" in text
    assert "CAFFEONSPARK_HOME_CPU_OPENBLAS" not in text and "CAFFEONSPARK_HOME_GPU_CUDNN" not in text
    assert "4 nodes: the cluster has 2 GPU worker(s)" in text and "2 nodes: the cluster has 1 worker(s)" in text
    verdict, text = lines["dlobd-fig4c"]
    assert verdict == "partly" and text.startswith("2 of 15 points")  # gpu-cudnn on 1 and 2 nodes
    assert "add cpu-mkl: <its install> to mmlspark_cntk_homes (role mmlspark; CNTK_HOME_CPU_MKL)" in text
    assert "CNTK_HOME_GPU_CUDNN" not in text
    assert lines["dlobd-fig5c"][1].startswith("2 of 8 points")  # CNTK over IPoIB and RDMA, 2 nodes


def test_plan_of_another_inventory_runs_caffeonspark_on_its_gpu_workers(tmp_path):
    lines = plan_lines(write_other(tmp_path, gpu_hosts=range(3, 8), dlobd_paper_stacks=["caffeonspark"],
                                   caffeonspark_install_method="git", caffeonspark_builds=["gpu-cudnn"]))
    # the gpu-cudnn build's LeNet and CIFAR-10 Quick over IPoIB and RDMA on 2 and 4 of the five
    # GPU workers; the gpu device has no build
    verdict, text = lines["dlobd-fig5a"]
    assert verdict == "partly" and text.startswith("8 of 32 points"), text
    assert "add gpu to caffeonspark_builds (role caffeonspark, which records CAFFEONSPARK_HOME_GPU)" in text
    assert "needs 8 worker nodes" in text
    # the mmlspark role is not run there: CNTK's points say so
    assert "the inventory does not run the mmlspark role" in lines["dlobd-fig4c"][1]


def test_plan_names_mmlspark_python_where_the_inventory_gives_none(tmp_path):
    lines = plan_lines(write_other(tmp_path, gpu_hosts=range(3, 8), dlobd_paper_stacks=["mmlspark"],
                                   mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2-gpu"},
                                   mmlspark_mpi_home="/sw/openmpi-1.10"))
    verdict, text = lines["dlobd-fig4c"]
    assert verdict == "not runnable" and "set mmlspark_python (role mmlspark; MMLSPARK_PYTHON)" in text, text


PARENTHESES = re.compile(r"\(([^()]*)\)")
# what a parenthesis names the inventory's setting by: a role, a group, or a variable (dlobd_*, a role's)
INVENTORY_WORDS = re.compile(r"\brole [a-z_]+|\bgroup [a-z]+|\b[a-z]+_[a-z_]+\b")


def foreign_names(text: str) -> set:
    """The setting names in `text` the inventory cannot set: dlobd-env.sh names other than the
    entries of dlobd_stack_settings, outside parentheses, or in a parenthesis that names no
    inventory setting beside them."""
    found = set()
    while (inner := PARENTHESES.search(text)) is not None:
        if not INVENTORY_WORDS.search(inner[1]):
            found |= set(plan.SETTING_NAME.findall(inner[1]))
        text = text[:inner.start()] + text[inner.end():]
    return (found | set(plan.SETTING_NAME.findall(text))) - set(inventory.STACK_SETTINGS)


def test_names_the_inventory_cannot_set_are_found():
    assert foreign_names("MMLSpark 0.10's jars: set MMLSPARK_JARS_DIR (role mmlspark)") == {"MMLSPARK_JARS_DIR"}
    assert foreign_names("16 nodes: the cluster has 2 GPU host(s) (DLOBD_GPU_WORKERS)") == {"DLOBD_GPU_WORKERS"}
    assert foreign_names("set mmlspark_python (role mmlspark; MMLSPARK_PYTHON) (in the inventory: x)") == set()
    assert foreign_names("set SCAFFE_HOME to its install (a download (of OSU))") == set()
