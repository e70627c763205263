"""`dlobd plan` (dlobd/execution/plan.py): what it says of an install on this machine, and of the clusters of
Ansible inventories (tests/inventories.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT
from dlobd.execution import plan
from inventories import EXAMPLE, write_other, write_plain


def test_jars_in_a_prefix_that_was_never_fully_provisioned_are_no_install(tmp_path):
    # a provisioning cut short leaves Hadoop's jars but no etc/dlobd-env.sh (written last)
    (tmp_path / "hadoop-3.4.1" / "lib").mkdir(parents=True)
    (tmp_path / "hadoop-3.4.1" / "lib" / "hadoop-common-3.4.1.jar").write_bytes(b"")
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan"], capture_output=True, text=True,
                         env={"DLOBD_PREFIX": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True).stdout
    hadoop = next(line for line in out.splitlines() if line.split()[1:2] == ["hadoop"])
    assert hadoop.split()[0] == "no" and "no etc/dlobd-env.sh" in hadoop


PLAN_LINE = re.compile(r"^  (runnable|partly|not runnable)\s+(\S+): (.*)$")


def plan_output(inventory_path) -> tuple[dict, dict]:
    """(experiment -> (verdict, the rest of its line), the settings its summary asks to add) of
    `dlobd plan --scale paper --inventory`."""
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--quiet",
                          "--inventory", str(inventory_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    lines = {m[2]: (m[1], m[3]) for m in map(PLAN_LINE.match, out.splitlines()) if m}
    summary = out[out.index(plan.SUMMARY_HEAD):]
    asks = {} if summary.startswith(f"{plan.SUMMARY_HEAD}: none") else \
        yaml.safe_load(summary.split("\n", 1)[1])["all"]["vars"]
    return lines, asks


def plan_lines(inventory_path) -> dict:
    """experiment -> (verdict, the rest of its line) of `dlobd plan --scale paper --inventory`."""
    return plan_output(inventory_path)[0]


def with_example_vars(root: Path, **settings) -> Path:
    """The example inventory with `settings` under its all: vars:."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["all"]["vars"].update(settings)
    root.mkdir(parents=True, exist_ok=True)
    (root / "hosts.yml").write_text(yaml.safe_dump(data))
    return root / "hosts.yml"


@pytest.mark.parametrize("write", [lambda root, **v: write_plain(root, **v), with_example_vars],
                         ids=["6-worker plain inventory", "example-ib"])
def test_the_settings_one_plan_names_are_all_a_second_plan_needs(tmp_path, write):
    """Applied as the summary gives them, the settings leave the second plan asking for none: what
    still blocks a point is the cluster's size, or a parameter the paper does not state."""
    _, asks = plan_output(write(tmp_path / "first"))
    assert asks and all(name in plan_settings() for name in asks), asks
    lines, again = plan_output(write(tmp_path / "second", **asks))
    assert again == {}
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
    # what the paper leaves unstated runs with the spec's assumed values: BigDL's IPoIB points,
    # fig6c's assumed 192 cores cut to the 4 workers outside the GPU label, fig7b's 96 cores
    assert lines["dlobd-fig6c"] == ("partly", lines["dlobd-fig6c"][1]) and lines["dlobd-fig6c"][1].startswith("1 of 2 points")
    assert lines["dlobd-fig7b"][0] == "partly" and lines["dlobd-fig7b"][1].startswith("1 of 6 points")
    assert "192 cores as 8 executors x 24 cores need 8 nodes" in lines["dlobd-fig7b"][1]
    pagerank = lines["slides-pagerank-32nodes"][1]
    assert "needs hibench" in pagerank and "needs 32 worker nodes" in pagerank
    # its TensorFlow runs in the paper image's Python (no DLOBD_TFOS_PYTHON given): only GPU hosts lack
    assert lines["tfgrpc-fig4"] == ("not runnable", "3 worker task(s), one per node, need as many workers "
                                                     "of group gpu; the cluster has 2")
    mmlspark = lines["dlobd-fig4c"][1]
    assert "needs cntk" in mmlspark
    for launcher_name, variable in (("CNTK_HOME_GPU_CUDNN", "mmlspark_cntk_homes"),
                                    ("MMLSPARK_MPI_HOME", "mmlspark_mpi_home"),
                                    ("MMLSPARK_PYTHON", "mmlspark_python")):
        assert re.search(rf"set {launcher_name} \(role mmlspark\) \(in the inventory: {variable}\)", mmlspark)
    assert asks["dlobd_paper_stacks"] == ["caffeonspark", "mmlspark"] and asks["hibench_enabled"] is True
    assert set(asks["mmlspark_cntk_homes"]) == {"cpu-mkl", "cpu-openblas", "gpu-cudnn"}
    # the spack method builds one CaffeOnSpark device per host: the plan asks for the git method
    assert asks["caffeonspark_install_method"] == "git" and "gpu-cudnn" in asks["caffeonspark_builds"]


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
    assert tensorflow_lines(out) == {
        "the paper profile's TensorFlow 1.x and TensorFlowOnSpark run in the paper image's Python "
        "(DLOBD_TFOS_PYTHON=/scratch/dlobd/libexec/apptainer/tfos-python/bin/python2.7; python_env_tfos_image \"\": "
        "the controller's build of containers/paper-tfos-bigdl.def, built or fetched by the preflight; not checked "
        "from here)"}
    lines, asks = plan_output(path)
    for eid in TF_PIECES:
        assert not re.search(r"needs tensorflow|DLOBD_TFOS_PYTHON", lines[eid][1]), lines[eid]
    assert lines["rdmatf-fig1"][0] == "runnable"
    # fig9's two IPoIB points (TFoS and native TF) run; its RDMA ones lack TF's verbs build only
    assert lines["dlobd-fig9"][1].startswith("2 of 4 points") and "needs tf-rdma" in lines["dlobd-fig9"][1]
    assert "DLOBD_TFOS_PYTHON" not in asks.get("dlobd_stack_settings", {})
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
        f"the paper profile's TensorFlow 1.x and TensorFlowOnSpark run in DLOBD_TFOS_PYTHON={python} "
        "(dlobd_stack_settings; not checked from here)"}
    lines, _ = plan_output(path)
    assert all(not re.search(r"needs tensorflow|DLOBD_TFOS_PYTHON", lines[eid][1]) for eid in TF_PIECES)


def test_the_apptainer_method_plans(tmp_path):
    """The plain inventory on the apptainer method: its image's TF 1.x Python stands in for a site's,
    so the TensorFlow experiments plan as the cluster's size allows."""
    lines, asks = plan_output(write_plain(tmp_path, dlobd_install_method="apptainer"))
    assert lines["tfgrpc-fig8"][0] in ("runnable", "partly")
    for eid in ("rdmatf-fig1", "dlobd-fig9", "dlobd-fig5b"):
        assert lines[eid][0] in ("runnable", "partly") and "DLOBD_TFOS_PYTHON" not in lines[eid][1], lines[eid]
    assert "DLOBD_TFOS_PYTHON" not in (asks.get("dlobd_stack_settings") or {})


def test_plan_of_the_example_inventory_counts_the_builds_its_roles_install():
    """The example runs the caffeonspark role (a CPU and a CUDA build) and the mmlspark role
    (CNTK's GPU build): their points plan runnable where the cluster's size allows, and only
    the devices without a build, and the nodes beyond its GPU workers (for GPU points) or beyond
    the worker outside their exclusive YARN label (for CPU points, Hadoop 2.7), are named."""
    lines = plan_lines(EXAMPLE)
    verdict, text = lines["dlobd-fig4a"]
    # cpu-openblas on 1 node, gpu-cudnn on the 2 GPU workers' label
    assert verdict == "partly" and text.startswith("3 of 20 points"), text
    assert "set CAFFEONSPARK_HOME_CPU_MKL " in text and "set CAFFEONSPARK_HOME_GPU " in text
    assert "CAFFEONSPARK_HOME_CPU_OPENBLAS" not in text and "CAFFEONSPARK_HOME_GPU_CUDNN" not in text
    assert "4 nodes: the cluster has 2 GPU worker(s)" in text and "2 nodes: the cluster has 1 worker(s)" in text
    verdict, text = lines["dlobd-fig4c"]
    assert verdict == "partly" and text.startswith("2 of 15 points")  # gpu-cudnn on 1 and 2 nodes
    assert "set CNTK_HOME_CPU_MKL " in text and "CNTK_HOME_GPU_CUDNN" not in text
    assert lines["dlobd-fig5c"][1].startswith("2 of 8 points")  # CNTK over IPoIB and RDMA, 2 nodes


def test_plan_of_another_inventory_runs_caffeonspark_on_its_gpu_workers(tmp_path):
    lines = plan_lines(write_other(tmp_path, gpu_hosts=range(3, 8), dlobd_paper_stacks=["caffeonspark"],
                                   caffeonspark_install_method="git", caffeonspark_builds=["gpu-cudnn"]))
    # the gpu-cudnn build's LeNet and CIFAR-10 Quick over IPoIB and RDMA on 2 and 4 of the five
    # GPU workers; the gpu device has no build
    verdict, text = lines["dlobd-fig5a"]
    assert verdict == "partly" and text.startswith("8 of 32 points"), text
    assert "set CAFFEONSPARK_HOME_GPU " in text and "needs 8 worker nodes" in text
    # the mmlspark role is not run there: CNTK's points say so
    assert "the inventory does not run the mmlspark role" in lines["dlobd-fig4c"][1]


def test_plan_names_mmlspark_python_where_the_inventory_gives_none(tmp_path):
    lines = plan_lines(write_other(tmp_path, gpu_hosts=range(3, 8), dlobd_paper_stacks=["mmlspark"],
                                   mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2-gpu"},
                                   mmlspark_mpi_home="/sw/openmpi-1.10"))
    verdict, text = lines["dlobd-fig4c"]
    assert verdict == "not runnable" and "set MMLSPARK_PYTHON (role mmlspark)" in text, text
