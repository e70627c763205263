"""An inventory's own settings win over the playbooks' defaults (the dlobd role's, at Ansible's
lowest precedence), in every form Ansible users write them: `all: vars:`, group_vars/all.yml beside
the inventory, host_vars, a group's vars, an INI inventory. The plan, the dry run and the playbooks
read the same values, and say where each came from; a misspelled or contradictory setting stops
the preflight, naming it and where it was set."""

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import inventory, provenance
from dlobd.execution import plan
from dlobd import spec as dspec
from dlobd.spec import validation
from inventories import PAPER_DATASETS

BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
SETTINGS = {"dlobd_profile": "paper", "dlobd_install_method": "spack", "dlobd_prefix": "/lustre/scratch/me/dlobd"}
# head: NameNode and ResourceManager; w1, w2: workers with an HCA each (no GPU) and 96 cores, so
# that dlobd-fig7a's 8 executors of 24 cores fit on them. Every host is this machine (local
# connection): the playbooks reach no other.
HOSTS = {"head": "10.99.0.1", "w1": "10.99.0.2", "w2": "10.99.0.3"}
HARDWARE = {"hca": "mlx5", "ib_rate_gbps": 100, "link_layer": "InfiniBand", "gpus": 0, "cores": 96}
GROUPS = {"namenode": ["head"], "resourcemanager": ["head"], "workers": ["w1", "w2"], "gpu": []}


def host_vars(name: str) -> dict:
    return {"ansible_connection": "local", "dlobd_cluster_address": HOSTS[name], "dlobd_hardware": HARDWARE}


def write_inventory(root: Path, form: str, settings: dict = SETTINGS) -> tuple[Path, str]:
    """An inventory of the three hosts with `settings` in `form`, and the papers' data sets (BigDL's
    paper points train on the real CIFAR-10); its path and where Ansible (and so the settings
    lookup) says the settings were set."""
    settings = {**settings, **PAPER_DATASETS}
    root.mkdir(parents=True, exist_ok=True)
    hosts = {name: host_vars(name) for name in HOSTS}
    children = {g: {"hosts": {h: None for h in members}} for g, members in GROUPS.items()}
    data = {"all": {"hosts": hosts, "children": children}}
    path = root / "hosts.yml"
    if form == "all-vars":
        data["all"]["vars"] = settings
        where = f"{path} (all: vars:)"
    elif form == "group-vars-all-file":
        (root / "group_vars").mkdir()
        (root / "group_vars" / "all.yml").write_text(yaml.safe_dump(settings))
        where = str(root / "group_vars" / "all.yml")
    elif form == "host-vars":
        (root / "host_vars").mkdir()
        for name in HOSTS:
            (root / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(settings))
        where = str(root / "host_vars" / "head.yml")
    elif form == "group-vars":
        children["site"] = {"children": {g: None for g in GROUPS}, "vars": settings}
        where = f"{path} (vars of group site)"
    elif form == "ini":
        path = root / "hosts.ini"
        lines = [f"{name} " + " ".join(f"{k}='{json.dumps(v)}'" if isinstance(v, dict) else f"{k}={v}"
                                       for k, v in host_vars(name).items()) for name in HOSTS]
        for group, members in GROUPS.items():
            lines += [f"[{group}]", *members]
        lines += ["[all:vars]", *(f"{k}={v}" for k, v in settings.items())]
        path.write_text("\n".join(lines) + "\n")
        where = f"{path} (all: vars:)"
    if form != "ini":
        path.write_text(yaml.safe_dump(data))
    return path, where


FORMS = ("all-vars", "group-vars-all-file", "host-vars", "group-vars", "ini")


def run(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def read_by_all(root: Path, form: str) -> dict:
    """What the plan, the dry run and a check run of site.yml make of one form's inventory."""
    path, where = write_inventory(root / form, form)
    playbook = [str(BIN / "ansible-playbook"), "-i", str(path), "playbooks/site.yml", "--check",
                # only the settings (always-tagged roles run too); this machine is none of the
                # declared hosts, so their hardware is not checked here
                "--tags", "settings", "--skip-tags", "fabric"]
    return {"form": form, "path": path, "where": where,
            "plan": run([str(BIN / "dlobd"), "plan", "--scale", "paper", "--inventory", str(path)]),
            "dry_run": run(["make", "-s", "experiments", "SCALE=paper", "DRY_RUN=1", f"INVENTORY={path}",
                            "ID=dlobd-fig7a", "RUNS=" + str(root / "runs")]),
            "site": run(playbook)}


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    root = tmp_path_factory.mktemp("forms")
    with ThreadPoolExecutor(max_workers=3) as pool:
        return {r["form"]: r for r in pool.map(lambda f: read_by_all(root, f), FORMS)}


@pytest.mark.parametrize("form", FORMS)
def test_the_plan_reads_the_inventory_s_settings(forms, form):
    found = forms[form]
    cluster = inventory.load(found["path"])
    assert {name: cluster.in_effect[name] for name in SETTINGS} == {
        name: (value, found["where"]) for name, value in SETTINGS.items()}
    assert cluster.prefix == Path(SETTINGS["dlobd_prefix"])
    out = found["plan"].stdout
    assert found["plan"].returncode == 0, found["plan"].stderr
    for name, value in SETTINGS.items():
        assert f'{name} = "{value}"  <- {found["where"]}' in out
    assert "dlobd_paper_env = \"tfos-bigdl\"  <- default (role dlobd)" in out
    assert "yes  paper-profile      dlobd_profile is paper" in out
    # the spack method installs its environment's tf-cnn-benchmarks without a path from the inventory
    assert f"yes  tf_cnn_benchmarks  TF_CNN_BENCHMARKS_HOME={SETTINGS['dlobd_prefix']}/tf-cnn-benchmarks" in out


@pytest.mark.parametrize("form", FORMS)
def test_the_dry_run_reads_the_inventory_s_settings(forms, form):
    done = forms[form]["dry_run"]
    assert done.returncode == 0, done.stdout + done.stderr
    # the paper profile's BigDL (its models at the package root) on the inventory's prefix
    assert "--class com.intel.analytics.bigdl.models.vgg.Train" in done.stdout
    assert f"-f {SETTINGS['dlobd_prefix']}/data/cifar10" in done.stdout


@pytest.mark.parametrize("form", FORMS)
def test_a_check_run_of_site_yml_reads_the_inventory_s_settings(forms, form):
    found = forms[form]
    done = found["site"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for name, value in SETTINGS.items():
        assert f'{name} = "{value}"  <- {found["where"]}' in done.stdout
    # the spack method's role ran (in check mode: nothing written)
    assert "TASK [spack : Write the host's spack.yaml]" in done.stdout


def preflight(tmp_path: Path, settings: dict, *extra: str) -> tuple[int, str]:
    path, _ = write_inventory(tmp_path, "all-vars", settings)
    done = run([str(BIN / "ansible-playbook"), "-i", str(path), "playbooks/preflight.yml", "--tags", "settings", *extra])
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_a_misspelled_setting_stops_the_preflight_naming_it_and_where_it_was_set(tmp_path):
    rc, out = preflight(tmp_path, {**SETTINGS, "dlobd_profle": "modern"})
    assert rc != 0
    assert (f"dlobd_profle (set in {tmp_path / 'hosts.yml'} (all: vars:)) is no setting of the playbooks "
            "(did you mean dlobd_profile or dlobd_prefix?)") in out


def test_a_misspelled_setting_given_with_e_is_named_too(tmp_path):
    rc, out = preflight(tmp_path, SETTINGS, "-e", "dlobd_instal_method=tarball")
    assert rc != 0
    assert ("dlobd_instal_method (set in the command line (-e)) is no setting of the playbooks "
            "(did you mean dlobd_install_method") in out


def test_the_plan_refuses_a_misspelled_setting_too(tmp_path):
    path, where = write_inventory(tmp_path, "all-vars", {**SETTINGS, "dlobd_stack_setings": {}})
    with pytest.raises(inventory.InventoryError, match=r"dlobd_stack_setings \(set in .*\(all: vars:\)\) is no "
                                                       r"setting of the playbooks \(did you mean dlobd_stack_settings"):
        inventory.load(path)


@pytest.mark.parametrize("name, value, accepted", [
    ("dlobd_profile", "papers", "modern, paper"),
    ("dlobd_install_method", "conda", "registry, tarball, spack, apptainer"),
    ("dlobd_paper_env", "tfos", "tfos-bigdl, caffeonspark, mmlspark"),
])
def test_a_value_a_setting_does_not_take_is_named_with_the_accepted_ones(tmp_path, name, value, accepted):
    rc, out = preflight(tmp_path, {**SETTINGS, name: value})
    assert rc != 0
    assert (f'{name} is "{value}" (set in {tmp_path / "hosts.yml"} (all: vars:)): it must be one of '
            f"{accepted}") in out


def test_a_profile_its_method_cannot_carry_is_named_with_where_each_was_set(tmp_path):
    rc, out = preflight(tmp_path, {**SETTINGS, "dlobd_install_method": "registry", "dlobd_paper_env": "caffeonspark"})
    assert rc != 0
    assert f"dlobd_profile is paper (set in {tmp_path / 'hosts.yml'} (all: vars:))" in out
    assert (f"dlobd_install_method is registry (set in {tmp_path / 'hosts.yml'} (all: vars:)), which installs "
            "the modern profile's only and the paper sets paper-tfos-bigdl: set dlobd_install_method to "
            "spack or apptainer") in out


def test_the_registry_method_carries_the_tfos_bigdl_set_only_where_glibc_runs_its_jdk_8(tmp_path):
    # this machine is Debian 12 (glibc 2.36): the method is accepted, the host is not, and the
    # message names glibc and the image that has a new enough one
    rc, out = preflight(tmp_path, {**SETTINGS, "dlobd_install_method": "registry", "dlobd_paper_env": "tfos-bigdl"})
    assert rc != 0
    assert "which installs the modern profile's only" not in out
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    assert (f"glibc is {glibc}; the registry method's Java 8 for version set paper-tfos-bigdl (Debian's "
            "openjdk-8, from sid) needs glibc 2.38 or newer. Run the paper profile from its image instead "
            "(make image IMAGE_DEF=containers/paper-tfos-bigdl.def") in out


def test_the_apptainer_method_carries_the_tfos_bigdl_set_without_a_glibc_check(tmp_path):
    rc, out = preflight(tmp_path, {**SETTINGS, "dlobd_install_method": "apptainer", "dlobd_paper_env": "tfos-bigdl"})
    assert rc == 0, out[-2000:]
    assert "needs glibc" not in out


def test_no_whole_scale_need_only_some_points_have():
    # dlobd validate names any; here: the specs the plain IB inventory first hit
    specs = dspec.load_all(ROOT)
    for eid in ("dlobd-fig6c", "dlobd-fig7a", "dlobd-fig7b", "slides-pagerank-32nodes"):
        scale = specs[eid].scale("paper")
        assert "rdma-spark" not in scale["needs"] and "rdma" not in scale["needs"], eid
        assert {"at": {"network": "rdma"}, "needs": ["rdma-spark", "rdma"]} in scale["point_needs"], eid


def test_the_validator_names_a_whole_scale_need_of_some_points(tmp_path):
    (tmp_path / "experiments").mkdir()
    text = (ROOT / "experiments" / "dlobd-fig7a.yaml").read_text()
    text = text.replace("needs: [bigdl, paper-profile, infiniband, hadoop, spark]",
                        "needs: [bigdl, paper-profile, infiniband, hadoop, spark, rdma-spark]", 1)
    (tmp_path / "experiments" / "dlobd-fig7a.yaml").write_text(text)
    errors, _ = validation.validate(tmp_path, files=[tmp_path / "experiments" / "dlobd-fig7a.yaml"])
    assert any("rdma-spark is needed by the whole scale, but only its network=rdma points need it" in e
               for e in errors), errors


def test_ipoib_points_of_bigdl_run_without_rdma_spark(tmp_path):
    path, _ = write_inventory(tmp_path, "all-vars", {**SETTINGS, "dlobd_stack_settings": {}})
    specs = dspec.load_all(ROOT)
    with provenance.inventory_in_use(inventory.load(path)):
        planned = {eid: plan.plan_spec(specs[eid], "paper") for eid in ("dlobd-fig6c", "dlobd-fig7a", "dlobd-fig7b")}
    for eid, planned in planned.items():
        assert planned["reason"] is None, (eid, planned)
        assert set(planned["blocked"]) == {p for p, _ in specs[eid].points("paper") if "network-rdma" in p}, eid
        assert all("needs rdma-spark" in " ".join(r) for r in planned["blocked"].values()), eid
