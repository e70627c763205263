"""docs/new-cluster.md is what `dlobd guide` writes from the specs and the settings modules."""

import re
import subprocess
import sys

import yaml

from dlobd import ROOT
from dlobd.cluster import capabilities, fabric, inventory
from dlobd.execution import plan
from inventories import write_plain
from dlobd.results import guide


def test_the_new_cluster_guide_is_current():
    assert (ROOT / guide.OUT).read_text() == guide.render(), "run `dlobd guide`"


def test_the_guide_has_a_row_per_experiment_and_every_setting():
    text = guide.render()
    rows = guide.rows(ROOT)
    assert len(rows) == 42 and all(f"| {r['id']} |" in text for r in rows)
    assert all(f"`{name}`" in text for name in inventory.STACK_SETTINGS)
    # every hardware field, and the variables of the roles that record settings or check them
    assert all(field in text for field in fabric.HARDWARE_FIELDS)
    assert all(f"`{variable}" in text for variable in (
        "dlobd_stack_settings", "dlobd_paper_stacks", "registered_stacks", "rdma_spark_tarball",
        "rdma_spark_sha256", "hibench_enabled", "hibench_dir", "mmlspark_cntk_homes", "caffeonspark_builds"))
    checked = yaml.safe_load((ROOT / "playbooks/roles/registered_stacks/defaults/main.yml").read_text())
    assert all(f"`{name}`" in text for name in checked["registered_stacks_checks"])
    # the estimates come from the specs: TF-gRPC-Bench's own duration, unknown where no time is stated
    fig8 = next(r for r in rows if r["id"] == "tfgrpc-fig8")
    assert fig8["estimate"] == "0.30 for 9 of 9 points" and fig8["nodes"] == "2 or more"
    assert next(r for r in rows if r["id"] == "dlobd-fig11")["gpus"] == "16 (2 per node)"


def test_the_guide_names_only_what_the_plan_of_a_paper_inventory_says(tmp_path):
    """What the guide says site.yml installs the plan finds installed; every inventory variable its
    table of settings names is a role's variable; the settings each launcher name maps to are
    those the plan asks for."""
    text = guide.render()
    installed = re.search(r"installed by `site.yml` on every host: ([^;]+);", text)[1].split(", ")
    caps = capabilities.inventory_capabilities(inventory.load(write_plain(tmp_path)))
    assert installed and all(caps[c][0] and "installed by site.yml" in caps[c][1] for c in installed)
    # no site.yml install on the paper profile: the plain inventory (spack, no DLOBD_TFOS_PYTHON) runs
    # it in the paper image's Python, as the guide says
    assert "tensorflow" not in installed and "in the paper image's Python (`python_env_tfos_image`" in text
    assert caps["tensorflow"][0] and "the paper image's Python" in caps["tensorflow"][1]
    defaults = [*ROOT.glob("playbooks/roles/*/defaults/main.yml"), *ROOT.glob("playbooks/roles/*/defaults/main/*.yml")]
    known = {name for f in defaults for name in yaml.safe_load(f.read_text()) or {}}
    table = text[text.index("| a message names (`dlobd-env.sh`) |"):]
    named = re.findall(r"^\| `[^`]+` \| `([a-z_]+)`", table, re.MULTILINE)
    assert named and set(named) <= known, set(named) - known


def test_the_readme_links_the_guide():
    assert "(docs/new-cluster.md)" in (ROOT / "README.md").read_text()


def test_what_the_guide_says_of_the_plan_the_plan_does(tmp_path):
    """The guide's claims about the plan, held against plans of the plain inventory: where each
    install method runs TensorFlowOnSpark's Python, the summary's shape and its costs, and what
    YARN gets per worker."""
    text = " ".join(guide.render().split())
    for method, claim in (("spack", "on the `spack` and `registry` methods, in the paper image's Python"),
                          ("apptainer", "on the `apptainer` method in its own image's Python")):
        assert claim in text
        caps = capabilities.inventory_capabilities(inventory.load(write_plain(tmp_path / method,
                                                                               dlobd_install_method=method)))
        assert caps["tensorflowonspark"][0], caps["tensorflowonspark"]
        assert "/libexec/apptainer/tfos-python/bin/python2.7" in caps["tensorflowonspark"][1]
    assert "under `all: hosts: <host>:`" in text and "`# cost of`" in text and "says `not obtainable`" in text
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--inventory",
                          str(write_plain(tmp_path / "plan"))],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    summary = yaml.safe_load(out[out.index(plan.SUMMARY_HEAD):].split("\n", 1)[1])["all"]
    assert set(summary) == {"vars", "hosts"} and all("dlobd_hardware" in v for v in summary["hosts"].values())
    assert "\n# cost of caffeonspark_builds: " in out
    assert "prints what each worker's NodeManager gets" in text
    assert re.search(r"^  ib-c1: memory its own x dlobd_yarn_memory_fraction 0.25, found at provisioning", out, re.MULTILINE)
    assert "not obtainable" in out
