"""`dlobd plan` (dlobd/execution/plan.py): what it says of an install on this machine, and of the clusters of
Ansible inventories (tests/inventories.py)."""

import re
import subprocess
import sys

from dlobd import ROOT
from inventories import EXAMPLE, write_other


def test_jars_in_a_prefix_that_was_never_fully_provisioned_are_no_install(tmp_path):
    # a provisioning cut short leaves Hadoop's jars but no etc/dlobd-env.sh (written last)
    (tmp_path / "hadoop-3.4.1" / "lib").mkdir(parents=True)
    (tmp_path / "hadoop-3.4.1" / "lib" / "hadoop-common-3.4.1.jar").write_bytes(b"")
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan"], capture_output=True, text=True,
                         env={"DLOBD_PREFIX": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True).stdout
    hadoop = next(line for line in out.splitlines() if line.split()[1:2] == ["hadoop"])
    assert hadoop.split()[0] == "no" and "no etc/dlobd-env.sh" in hadoop


PLAN_LINE = re.compile(r"^  (runnable|partly|not runnable)\s+(\S+): (.*)$")


def plan_lines(inventory_path) -> dict:
    """experiment -> (verdict, the rest of its line) of `dlobd plan --scale paper --inventory`."""
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--quiet",
                          "--inventory", str(inventory_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    return {m[2]: (m[1], m[3]) for m in map(PLAN_LINE.match, out.splitlines()) if m}


def test_plan_of_the_example_inventory_counts_the_builds_its_roles_install():
    """The example runs the caffeonspark role (a CPU and a CUDA build) and the mmlspark role
    (CNTK's GPU build): their points plan runnable where the cluster's size allows, and only
    the devices without a build, or a GPU device on a worker without GPUs, are named."""
    lines = plan_lines(EXAMPLE)
    verdict, text = lines["dlobd-fig4a"]
    assert verdict == "partly" and text.startswith("2 of 20 points")  # cpu-openblas on 1 and 2 nodes
    assert "set CAFFEONSPARK_HOME_CPU_MKL " in text and "set CAFFEONSPARK_HOME_GPU " in text
    assert "CAFFEONSPARK_HOME_CPU_OPENBLAS" not in text and "CAFFEONSPARK_HOME_GPU_CUDNN" not in text
    assert "worker(s) 192.168.100.2 have no GPU" in text
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
