"""docs/new-cluster.md is what `dlobd guide` writes from the specs and the settings modules."""

import re

import yaml

from dlobd import ROOT
from dlobd.cluster import capabilities, fabric, inventory
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
