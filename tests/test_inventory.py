"""Plans and dry runs for the cluster of an Ansible inventory (dlobd.cluster.inventory): the example IB
inventory, and another shaped like it but laid out differently (other host names, interfaces,
group sizes and GPU hosts; its settings in group_vars and host_vars files). Ansible itself reads
both; nothing is sent to their addresses."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, NotRunnable
from dlobd.cluster import hadoop, inventory, provenance
from dlobd.execution import dryrun, plan
from dlobd.spec import networks
from dlobd import spec as dspec
from dlobd.stacks import scaffe
from inventories import EXAMPLE, write_other, write_plain
from dlobd.cluster import capabilities

LOOPBACK = re.compile(r"\b127\.\d+\.\d+\.\d+\b|\blocalhost\b")
SPECS = dspec.load_all(ROOT)


@pytest.fixture(scope="module")
def example():
    return inventory.load(EXAMPLE)


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    return inventory.load(write_other(tmp_path_factory.mktemp("other")))


@pytest.fixture(params=["example", "other"])
def cluster(request):
    return request.getfixturevalue(request.param)


def test_the_example_reads_as_ansible_resolves_it(example):
    assert example.launch_host == "node01"
    assert example.prefix == Path("/scratch/dlobd/dlobd-stack")  # all: vars: of its hosts.yml
    s = example.settings
    assert s["DLOBD_WORKERS"] == "192.168.100.2 192.168.100.3 192.168.100.4"
    assert s["DLOBD_CLUSTER_ADDRESS"] == s["TFOS_SERVER_HOST"] == "192.168.100.1"
    assert s["DLOBD_HDFS_URI"] == "hdfs://192.168.100.1:19820"
    assert s["DLOBD_PROFILE"] == "paper" and s["DLOBD_PYTHON"] == "/scratch/dlobd/dlobd-stack/python/bin/python"
    assert s["RDMA_SPARK_HOME"] == "/opt/osu/rdma-spark-0.9.5-bin"
    # what only provisioning finds stays a reference to dlobd-env.sh's variable
    assert s["SPARK_HOME"] == "$SPARK_HOME" and s["DLOBD_BIGDL_JAR"] == "$DLOBD_BIGDL_JAR"
    assert example.hosts["node03"].hardware == {"hca": "mlx5", "ib_rate_gbps": 100, "ethernet_gbps": 40,
                                                "link_layer": "InfiniBand",
                                                "gpus": 2, "gpu_model": "K80", "cores": 56, "memory_gb": 128}
    # two of its three workers have GPUs: theirs NodeManagers carry YARN's node label, exclusive on Hadoop 2.7
    assert (s["DLOBD_GPU_NODE_LABEL"], s["DLOBD_GPU_NODE_LABEL_EXCLUSIVE"]) == ("gpu", "true")


def test_another_layout_reads_alike(other):
    assert other.launch_host == "ibm-a1" and other.prefix == Path("/lustre/dlobd/stack")
    s = other.settings
    assert s["DLOBD_WORKERS"] == " ".join(f"172.31.7.{10 + i}" for i in range(3, 8))
    assert s["DLOBD_RESOURCEMANAGER_ADDRESS"] == "172.31.7.12"
    assert s["RDMA_GRPC_HOME"] == "/sw/rdma-grpc" and "RDMA_SPARK_HOME" not in s
    assert {h.interface for h in other.hosts.values()} == {"hsn0"}
    assert [h.hardware["gpus"] for h in other.members("gpu")] == [8, 8, 8]


def test_provenance_answers_for_the_inventory_in_use(example, monkeypatch):
    monkeypatch.setenv("RDMA_GRPC_HOME", "/this/machine/only")
    with provenance.inventory_in_use(example):
        assert provenance.workers() == ["192.168.100.2", "192.168.100.3", "192.168.100.4"]
        assert provenance.prefix() == Path("/scratch/dlobd/dlobd-stack")
        assert provenance.stack_setting("RDMA_GRPC_HOME") == "/opt/osu/rdma-grpc"
        assert provenance.stack_setting("DLOBD_EMULATED_LINK") is None
    assert provenance.stack_setting("RDMA_GRPC_HOME") == "/this/machine/only"


def test_a_prefix_given_for_the_run_overrides_the_inventory(tmp_path):
    cluster = inventory.load(write_other(tmp_path), prefix="/elsewhere")
    assert cluster.prefix == Path("/elsewhere") and cluster.settings["DLOBD_DATA_DIR"] == "/elsewhere/data"


@pytest.mark.parametrize("changes, message", [
    ({"dlobd_stack_settings": {"RDMA_SPARK_HOM": "/x"}}, "dlobd_stack_settings names RDMA_SPARK_HOM, which no launcher reads"),
    ({"dlobd_stack_settings": {"HIBENCH_HOME": ""}},
     'dlobd_stack_settings.HIBENCH_HOME is "" (set in {root}/group_vars/everyone.yml): it must be a non-empty text'),
    ({"dlobd_prefix": "{{ ansible_facts['user_dir'] }}/dlobd-stack"}, "host ibm-a1 has no dlobd_prefix the controller can know"),
])
def test_bad_settings_are_named(tmp_path, changes, message):
    with pytest.raises(inventory.InventoryError, match=re.escape(message.format(root=tmp_path))):
        inventory.load(write_other(tmp_path, **changes))


def test_a_misspelt_role_variable_is_named_with_where_it_was_set_and_the_known_name(tmp_path):
    with pytest.raises(inventory.InventoryError) as raised:
        inventory.load(write_plain(tmp_path, hibench_enable=True, mmlspark_pyhton="/opt/python-3.6/bin/python"))
    text = str(raised.value)
    assert (f"hibench_enable (set in {tmp_path}/hosts.yml (all: vars:)) is no setting of the playbooks "
            "(did you mean hibench_enabled") in text
    assert "(did you mean mmlspark_python" in text
    assert "the accepted names and their defaults: playbooks/roles/mmlspark/defaults/main.yml" in text


@pytest.mark.parametrize("given, present", [
    ({"dlobd_stack_settings": {provenance.TFOS_PYTHON: "/opt/py35-tf1/bin/python"}}, True),
    ({}, True),  # the spack method without it: the paper image's Python
    ({"dlobd_install_method": "apptainer"}, True),  # the apptainer method's paper image's Python
], ids=["site Python", "spack, none given", "apptainer, none given"])
def test_tensorflow_and_tensorflowonspark_of_the_paper_profile_are_one_capability(tmp_path, given, present):
    """Both run in the TF 1.x Python of the paper profile: yes or no together, each reason saying
    which Python its points run in."""
    caps = capabilities.inventory_capabilities(inventory.load(write_plain(tmp_path, **given)))
    assert caps["tensorflow"][0] is caps["tensorflowonspark"][0] is present
    assert all(provenance.TFOS_PYTHON in caps[name][1] for name in ("tensorflow", "tensorflowonspark"))
    assert caps["tensorflowonspark"][1].startswith("the paper profile's TensorFlowOnSpark runs its points in ")
    assert caps["tensorflow"][1].startswith("the paper profile's native TensorFlow 1.x runs in ")


def test_the_apptainer_method_plans(tmp_path):
    cluster = inventory.load(write_plain(tmp_path, dlobd_install_method="apptainer",
                                         apptainer_image="/images/paper-tfos-bigdl.sif"))
    assert cluster.settings["DLOBD_INSTALL_METHOD"] == "apptainer"
    assert cluster.settings["DLOBD_APPTAINER_IMAGE"] == "/scratch/dlobd/images/paper-tfos-bigdl.sif"


@pytest.mark.parametrize("host_vars, message", [
    ({"dlobd_cluster_address": "127.0.0.1"}, "host ibm-a4: dlobd_cluster_address 127.0.0.1 is loopback"),
    ({"dlobd_ethernet_address": "127.0.1.1"}, "host ibm-a4: dlobd_ethernet_address 127.0.1.1 is loopback"),
    ({"dlobd_hardware": {"hca": "mlx5", "gpu": 4}},
     "host ibm-a4: dlobd_hardware.gpu is 4 (set in {root}/host_vars/ibm-a4.yml): not a field of dlobd_hardware "
     "(fields: hca, ib_rate_gbps, ethernet_gbps, link_layer, gpus, gpu_model, lustre, cores, memory_gb)"),
])
def test_bad_hosts_are_named(tmp_path, host_vars, message):
    path = write_other(tmp_path)
    (tmp_path / "host_vars" / "ibm-a4.yml").write_text(yaml.safe_dump(host_vars))
    with pytest.raises(inventory.InventoryError, match=re.escape(message.format(root=tmp_path))):
        inventory.load(path)


def test_an_inventory_without_workers_is_named(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"n1": {"dlobd_cluster_address": "10.1.1.1"}},
                                            "children": {"namenode": {"hosts": {"n1": None}},
                                                         "resourcemanager": {"hosts": {"n1": None}}}}}))
    with pytest.raises(inventory.InventoryError, match="group workers has no host"):
        inventory.load(path)


def test_a_host_whose_variables_do_not_render_is_named(tmp_path):
    path = write_other(tmp_path)
    (tmp_path / "host_vars" / "ibm-a5.yml").write_text(yaml.safe_dump({"dlobd_prefix": "{{ 1 // 0 }}"}))
    with pytest.raises(inventory.InventoryError, match="cannot render the variables of host ibm-a5: .*division"):
        inventory.load(path)


def test_reading_an_inventory_uses_no_deprecated_ansible_feature(tmp_path, monkeypatch):
    """ansible-core 2.19 deprecates the tree and oneline callbacks (gone in 2.23): reading an
    inventory must not lean on either, so Ansible prints no deprecation warning."""
    finished = []
    run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **kw: finished.append(run(*a, **kw)) or finished[-1])
    # a callback a user's environment enables is not loaded either
    monkeypatch.setenv("ANSIBLE_CALLBACKS_ENABLED", "ansible.builtin.tree")
    inventory.load(write_other(tmp_path))
    assert finished and finished[-1].returncode == 0
    assert "DEPRECATION" not in finished[-1].stderr + finished[-1].stdout


def paper_stack_settings(cluster) -> dict:
    """What the paper stacks' roles record (not the Sparks a site gives them, <STACK>_SPARK_HOME)."""
    return {k: v for k, v in cluster.settings.items()
            if k.startswith(("CAFFEONSPARK_", "CNTK_", "MMLSPARK_")) and not k.endswith("_SPARK_HOME")}


def test_the_paper_stack_roles_settings_are_what_provisioning_records(example, other):
    """The caffeonspark and mmlspark roles' settings as dlobd-env.sh gets them: from the roles'
    defaults and the inventory's group_vars (example: a CPU and a CUDA build, CNTK and OpenMPI
    at the site's paths); none where the inventory does not run the roles."""
    home = "/scratch/dlobd/dlobd-stack"
    assert paper_stack_settings(example) == {
        "CAFFEONSPARK_HOME_CPU_OPENBLAS": f"{home}/caffeonspark/cpu-openblas",
        "CAFFEONSPARK_HOME_GPU_CUDNN": f"{home}/caffeonspark/gpu-cudnn",
        "CAFFEONSPARK_LIBRARY_PATH": "/usr/local/cuda/lib64", "CAFFEONSPARK_PROFILE": "paper",
        "CAFFEONSPARK_LMDB_DIR": f"{home}/data/lmdb",
        "CNTK_HOME_GPU_CUDNN": "/opt/cntk-2.2-gpu", "MMLSPARK_MPI_HOME": "/opt/openmpi-1.10.3",
        "MMLSPARK_JARS_DIR": f"{home}/jars/mmlspark", "MMLSPARK_SSH_KEY": f"{home}/etc/mmlspark/identity",
        "MMLSPARK_WRAPPERS": f"{home}/libexec/mmlspark", "MMLSPARK_WORKDIR_ROOT": "/tmp/dlobd-mmlspark",
        "MMLSPARK_TCP_IF_INCLUDE": "192.168.100.0/24",
        "MMLSPARK_PYTHON": "/opt/python-3.6/bin/python",
        # the role finds the version when provisioning: unknown from here
        "MMLSPARK_PYTHON_VERSION": ""}
    assert paper_stack_settings(other) == {}


@pytest.mark.parametrize("changes, expected", [
    # the spack method installs one build, of the launch host's device (ibm-a1 has no GPU), and
    # Spack's CNTK and OpenMPI, whose paths only provisioning finds
    ({"dlobd_paper_stacks": ["caffeonspark", "mmlspark"]},
     {"CAFFEONSPARK_HOME_CPU_OPENBLAS": "/lustre/dlobd/stack/caffeonspark/cpu-openblas",
      "CAFFEONSPARK_LIBRARY_PATH": "", "CAFFEONSPARK_PROFILE": "paper", "MMLSPARK_MPI_HOME": "",
      "CAFFEONSPARK_LMDB_DIR": "/lustre/dlobd/stack/data/lmdb"}),
    # a source build of each listed device, with the libraries CUDA and MKL builds need
    ({"dlobd_paper_stacks": ["caffeonspark"], "caffeonspark_install_method": "mirror",
      "caffeonspark_builds": ["cpu-mkl", "gpu"], "caffeonspark_mkl_root": "/sw/mkl"},
     {"CAFFEONSPARK_HOME_CPU_MKL": "/lustre/dlobd/stack/caffeonspark/cpu-mkl",
      "CAFFEONSPARK_HOME_GPU": "/lustre/dlobd/stack/caffeonspark/gpu",
      "CAFFEONSPARK_LIBRARY_PATH": "/usr/local/cuda/lib64:/sw/mkl/lib/intel64", "CAFFEONSPARK_PROFILE": "paper",
      "CAFFEONSPARK_LMDB_DIR": "/lustre/dlobd/stack/data/lmdb"}),
    ({"dlobd_paper_stacks": ["mmlspark"], "mmlspark_mpi_home": "/sw/openmpi-1.10",
      "mmlspark_cntk_homes": {"cpu-mkl": "/sw/cntk-2.2-cpu", "gpu-cudnn": "/sw/cntk-2.2-gpu"}},
     {"CNTK_HOME_CPU_MKL": "/sw/cntk-2.2-cpu", "CNTK_HOME_GPU_CUDNN": "/sw/cntk-2.2-gpu",
      "MMLSPARK_MPI_HOME": "/sw/openmpi-1.10"}),
    # install.yml runs the paper stacks' roles for the paper profile only
    ({"dlobd_paper_stacks": ["caffeonspark", "mmlspark"], "dlobd_profile": "modern"}, {}),
])
def test_the_paper_stack_roles_settings_follow_the_inventory(tmp_path, changes, expected):
    settings = paper_stack_settings(inventory.load(write_other(tmp_path, **changes)))
    # every CaffeOnSpark and CNTK setting; of MMLSpark's the ones the case is about
    assert {k: v for k, v in settings.items() if k in expected or not k.startswith("MMLSPARK_")} == expected
    if "mmlspark" in changes["dlobd_paper_stacks"] and expected:
        # the network of the cluster interface, which only provisioning finds
        assert settings["MMLSPARK_TCP_IF_INCLUDE"] == "<the network of dlobd_cluster_interface, found at provisioning>"


@pytest.mark.parametrize("changes, expected", [
    ({"dlobd_paper_stacks": ["rdma_spark"], "rdma_spark_tarball": "/sw/rdma-spark-0.9.5-bin.tar.gz"},
     {"RDMA_SPARK_HOME": "/lustre/dlobd/stack/rdma-spark",
      "RDMA_SPARK_NATIVE_DIR": "/lustre/dlobd/stack/rdma-spark/lib/native/Linux-amd64-64",
      "RDMA_SPARK_TRANSPORT": "ib", "RDMA_SPARK_DEVICE_NUM": "1"}),
    # HiBench built on the hosts from its pinned commit, or Spack's, whose prefix only provisioning finds
    ({"hibench_enabled": True, "dlobd_hibench_install_method": "source"},
     {"HIBENCH_HOME": "/lustre/dlobd/stack/hibench-7.1.1"}),
    ({"hibench_enabled": True}, {"HIBENCH_HOME": "$HIBENCH_HOME"}),
    # install.yml runs rdma_spark for the paper profile only
    ({"dlobd_paper_stacks": ["rdma_spark"], "dlobd_profile": "modern"}, {}),
])
def test_the_rdma_spark_and_hibench_roles_settings_reach_the_plan(tmp_path, changes, expected):
    cluster = inventory.load(write_other(tmp_path, **changes))
    assert {k: v for k, v in cluster.settings.items() if k.startswith(("RDMA_SPARK_", "HIBENCH_HOME"))} == expected
    with provenance.inventory_in_use(cluster):
        caps = capabilities.capabilities()
    for setting, capability in (("RDMA_SPARK_HOME", "rdma-spark"), ("HIBENCH_HOME", "hibench")):
        assert caps[capability][0] == (setting in expected), caps[capability]


def test_rdma_spark_s_transport_is_the_workers_link_layer_not_the_launch_host_s(tmp_path):
    """A head node on InfiniBand and workers whose HCA ports are RoCE (link layer Ethernet):
    RDMA-Spark's executors get RoCE; workers that differ are refused, each named."""
    path = write_plain(tmp_path / "roce", dlobd_paper_stacks=["rdma_spark"],
                       rdma_spark_tarball="/sw/rdma-spark-0.9.5-bin.tar.gz")
    data = yaml.safe_load(path.read_text())
    for name, host in data["all"]["hosts"].items():
        if name != "ib-head":
            host["dlobd_hardware"]["link_layer"] = "Ethernet"
    path.write_text(yaml.safe_dump(data))
    cluster = inventory.load(path)
    assert cluster.settings["RDMA_SPARK_TRANSPORT"] == "ib"     # the head node's own port
    with provenance.inventory_in_use(cluster):
        assert hadoop.transport_conf("rdma-spark")["spark.roce.enabled"] == "true"
    data["all"]["hosts"]["ib-g2"]["dlobd_hardware"]["link_layer"] = "InfiniBand"
    mixed = tmp_path / "mixed" / "hosts.yml"
    mixed.parent.mkdir()
    mixed.write_text(yaml.safe_dump(data))
    with provenance.inventory_in_use(inventory.load(mixed)):
        with pytest.raises(NotRunnable, match=r"the workers' HCA ports differ: ib-c1 Ethernet, .*ib-g2 InfiniBand$"):
            hadoop.rdma_transport()


# what a cluster of 5 workers with 24 GPUs lacks for S-Caffe's larger points
SIZE_ONLY = re.compile(r"needs \d+ GPUs: the inventory's workers declare 24|"
                       r"needs \d+ worker nodes: the inventory has 5 in group workers|"
                       r"needs \d+ worker nodes with \d+ GPU\(s\) each: the inventory declares \d \(.*\)|"
                       r"single-process Caffe drives the GPUs of one node: \d+ GPUs > 8 per node|"
                       # the launcher's own count, beside the plan's: the plan lists every unmet need
                       r"\d+ GPUs at \d+ per node need \d+ GPU workers|"
                       r"the cluster has 3 GPU worker\(s\) \(group gpu: ibm-a5, ibm-a6, ibm-a7\)")
SCAFFE_SETTINGS = {"SCAFFE_HOME": "/sw/osu-caffe", "MVAPICH2_GDR_HOME": "/sw/mvapich2-gdr", "CAFFE_HOME": "/sw/caffe",
                   "INSPUR_CAFFE_HOME": "/sw/caffe-mpi", "SCAFFE_IMAGENET_LMDB": "/data/ilsvrc12-lmdb",
                   "SCAFFE_IMAGENET_LIST": "/lustre/ilsvrc12", "SCAFFE_IMAGENET_MAP": "/data/ilsvrc12-map",
                   **{f"SCAFFE_HOME_{d.replace('-', '_')}": f"/sw/s-caffe-{d.lower()}"
                      for d in set(scaffe.DESIGNS.values())}}


def test_every_setting_the_scaffe_launcher_reads_is_one_an_inventory_may_give():
    # the per-design builds are named after the launcher's table, which the settings list by hand
    assert set(SCAFFE_SETTINGS) <= set(inventory.STACK_SETTINGS)


def test_scaffe_points_run_where_the_inventory_gives_their_installs_and_lustre(tmp_path):
    """Without the settings S-Caffe's points name each one they lack; with them (and a Lustre
    folder declared on every worker) what still blocks them is the cluster's size alone, but for
    the points of the paper's designs (Fig. 13, Table 2), builds of the authors' S-Caffe that
    were never released: a path given for one does not make it obtainable."""
    scaffe = [e for e in SPECS if e.startswith("scaffe-") and not SPECS[e].data.get("data_from")]
    bare = planned(inventory.load(write_other(tmp_path / "bare")), tmp_path)
    assert "set SCAFFE_IMAGENET_LMDB" in " ".join(r for v in bare["scaffe-fig10"]["blocked"].values() for r in v)
    assert "lustre" in bare["scaffe-fig8"]["reason"]
    given = write_other(tmp_path / "given", dlobd_paper_stacks=["mmlspark"], mmlspark_cntk_homes={"gpu-cudnn": "/sw/cntk-2.2"},
                        mmlspark_mpi_home="/sw/openmpi-1.10",
                        dlobd_stack_settings={**SCAFFE_SETTINGS, "MVAPICH2_HOME": "/sw/mvapich2"})
    for i in range(3, 8):
        host_vars = given.parent / "host_vars" / f"ibm-a{i}.yml"
        values = yaml.safe_load(host_vars.read_text())
        values["dlobd_hardware"]["lustre"] = "/lustre/dlobd"
        host_vars.write_text(yaml.safe_dump(values))
    found = planned(inventory.load(given), tmp_path)
    assert all(found[e]["runnable"] for e in ("scaffe-fig9", "scaffe-fig10")), {e: found[e]["blocked"] for e in scaffe}
    designs = ("scaffe-fig13", "scaffe-table2")
    for eid in designs:
        reasons = [r for v in found[eid]["blocked"].values() for r in v]
        assert not found[eid]["runnable"] and reasons and all(r.startswith("not obtainable: ") for r in reasons), \
            (eid, reasons)
    for eid in set(scaffe) - set(designs):
        reasons = [found[eid].get("reason") or ""] + [r for v in found[eid]["blocked"].values() for r in v]
        assert all(not r or SIZE_ONLY.fullmatch(part) for r in reasons for part in r.split("; ")), (eid, reasons)


def test_capabilities_are_the_declared_ones(example, other):
    with provenance.inventory_in_use(example):
        caps = capabilities.capabilities()
    assert caps["infiniband"][0] and caps["gpu"][0] and caps["paper-profile"][0]
    assert "4 GPU(s) (K80) on node03, node04" in caps["gpu"][1]
    assert not caps["eth-10g-emulated"][0]
    # the example runs the caffeonspark and mmlspark roles (dlobd_paper_stacks), the other none
    assert caps["caffeonspark"] == (True, "installed by the caffeonspark role (dlobd_paper_stacks); not checked from here")
    assert caps["cntk"][0]
    with provenance.inventory_in_use(other):
        caps = capabilities.capabilities()
    assert not caps["rdma-spark"][0] and "RDMA_SPARK_HOME is not in" in caps["rdma-spark"][1]
    assert not caps["caffeonspark"][0] and "dlobd_paper_stacks" in caps["caffeonspark"][1]
    assert "24 GPU(s) (V100)" in caps["gpu"][1]


def test_a_host_without_hca_makes_rdma_missing(tmp_path):
    path = write_other(tmp_path)
    (tmp_path / "host_vars" / "ibm-a4.yml").write_text(yaml.safe_dump({"dlobd_hardware": {"gpus": 0}}))
    with provenance.inventory_in_use(inventory.load(path)):
        caps = capabilities.capabilities()
    assert caps["rdma"] == (False, "worker(s) ibm-a4 declare no HCA (dlobd_hardware.hca)")


def planned(cluster, tmp_path):
    with provenance.inventory_in_use(cluster):
        return {eid: plan.plan_spec(s, "paper", tmp_path / "runs") for eid, s in SPECS.items()
                if not s.data.get("data_from")}


def test_size_is_judged_against_the_inventory(example, other, tmp_path):
    ex, ot = planned(example, tmp_path), planned(other, tmp_path)
    assert ex["tfgrpc-fig8"]["runnable"] == 9 and not ex["tfgrpc-fig8"]["blocked"]
    assert ex["rdmatf-fig6"]["blocked"]["network-rdma_nodes-4"] == [
        "needs 4 worker nodes: the inventory has 3 in group workers"]
    assert "network-rdma_nodes-4" not in ot["rdmatf-fig6"]["blocked"]
    assert "needs 8 worker nodes: the inventory has 5" in ot["rdmatf-fig6"]["blocked"]["network-rdma_nodes-8"][0]
    # the other inventory gives no RDMA-Spark: BigDL's rdma points say so
    assert any("rdma-spark" in r for r in ot["dlobd-fig7a"]["blocked"]["network-rdma"])
    assert not (tmp_path / "runs").exists()


def test_every_experiment_is_runnable_or_names_what_it_lacks(cluster, tmp_path):
    for eid, p in planned(cluster, tmp_path).items():
        assert p["runnable"] or p["reason"] or (p["blocked"] and all(p["blocked"].values())), eid


def _stack_of(spec, point):
    axis = spec.data.get("stack_axis")
    return str(point[axis]) if axis and axis in point else spec.stack("paper")


def test_stacks_with_a_launcher_are_planned_right(cluster, tmp_path):
    """Points of stacks that have a launcher never read 'no launcher' and never end in a
    launcher's own error; the stacks still without one are listed (the lead's merge adds them)."""
    plans = planned(cluster, tmp_path)
    lacking = set()
    for eid, p in plans.items():
        points = dict(SPECS[eid].points("paper")) if SPECS[eid].scale("paper").get("runnable") else {}
        for pid, reasons in p["blocked"].items():
            stack = _stack_of(SPECS[eid], points[pid])
            has_launcher = not plan.launcher_missing(stack)
            text = "; ".join(reasons)
            assert "launcher error" not in text, (eid, pid, text)
            if has_launcher:
                assert "no launcher" not in text and "is not available" not in text, (eid, pid, text)
            else:
                lacking.add(stack)
    print("stacks without a launcher on this branch:", ", ".join(sorted(lacking)) or "none")


def test_no_experiment_lacks_a_launcher():
    without = sorted({(eid, _stack_of(s, point)) for eid, s in SPECS.items()
                      if not s.data.get("data_from") and s.scale("paper").get("runnable")
                      for _, point in s.points("paper") if plan.launcher_missing(_stack_of(s, point))})
    assert not without, f"no launcher: {without}"


def over_ethernet(eid: str, pid: str) -> bool:
    """Whether the point's network is an Ethernet one (config/networks.yaml: address ethernet)."""
    spec = SPECS[eid]
    point = dict(spec.points("paper"))[pid]
    network = point.get("network", spec.scale("paper").get("fixed", {}).get("network"))
    return network is not None and networks.resolve(_stack_of(spec, point), str(network)).address == "ethernet"


def test_dry_run_names_the_inventory_hosts_never_loopback(cluster, tmp_path):
    with provenance.inventory_in_use(cluster):
        done = dryrun.dry_runs(SPECS, "paper", tmp_path / "runs")
    workers = {h.address for h in cluster.members("workers")}
    # both inventories give every host an Ethernet address beside its IPoIB one
    ethernet = {h.ethernet_address for h in cluster.members("workers")}
    assert len(ethernet) == len(workers) and not ethernet & workers
    commands = [(eid, pid, r) for eid, pid, r in done if r.status == "dry run"]
    multi = ethernet_points = 0
    for eid, pid, r in commands:
        text = " ".join(r.command) + " ".join(" ".join(p["command"]) + str(p.get("env"))
                                              for p in r.extra.get("processes", []))
        assert not LOOPBACK.search(text), (eid, pid, LOOPBACK.search(text)[0])
        hosts = {p["host"] for p in r.extra.get("processes", [])}
        if hosts:
            multi += 1
            if over_ethernet(eid, pid):
                ethernet_points += 1
                assert hosts <= ethernet, (eid, pid, hosts)
            else:
                assert hosts <= workers, (eid, pid, hosts)
    assert multi >= 20  # TF across nodes, TF-gRPC-Bench's servers: the test is not vacuous
    # TF-gRPC-Bench's Ethernet points of the tier the hosts' links have (40 Gb/s in example-ib,
    # 10 in the other); those of another tier name the rate they need
    assert ethernet_points >= 9
    [rate] = {h.hardware["ethernet_gbps"] for h in cluster.members("workers")}
    refused = [r.reason for *_, r in done if r.status == "not runnable" and "Gb/s Ethernet link" in r.reason]
    assert refused and all(f"declares {rate:g} Gb/s" in reason for reason in refused)
    assert not (tmp_path / "runs").exists()


def test_ethernet_addresses_reach_the_launchers(example, other, tmp_path):
    """dlobd_ethernet_address goes through the launch host's dlobd-env.sh to the launchers: an
    Ethernet point's TF cluster is on the Ethernet addresses, never the IPoIB ones."""
    assert example.hosts["node03"].ethernet_address == "10.20.0.3"
    assert example.settings["DLOBD_WORKERS_ETHERNET"] == \
        "192.168.100.2=10.20.0.2 192.168.100.3=10.20.0.3 192.168.100.4=10.20.0.4"
    with provenance.inventory_in_use(other):
        assert provenance.ethernet_addresses() == {f"172.31.7.{10 + i}": f"10.40.7.{10 + i}" for i in range(3, 8)}
        # no facts without contacting the hosts: the default routes are known once provisioned
        assert other.settings["DLOBD_WORKERS_DEFAULT_ROUTE"] == "" and provenance.default_route_addresses() == {}
    # rdmatf-fig1's 1 Gb/s Ethernet on a cluster whose Ethernet links are of that rate
    with provenance.inventory_in_use(inventory.load(write_other(tmp_path / "one-gb", ethernet_gbps=1))):
        done = {pid: r for _, pid, r in dryrun.dry_runs(SPECS, "paper", tmp_path / "runs",
                                                        experiments=["rdmatf-fig1"])}
    tasks = " ".join(" ".join(p["command"]) for p in done["network-eth-1g_workers-2"].extra["processes"])
    assert re.search(r'"worker":\["10\.40\.7\.13:<port[^"]*>","10\.40\.7\.14:<port[^"]*>"\]', tasks), tasks
    assert "172.31.7.13:" not in tasks and "172.31.7.14:" not in tasks


def test_ethernet_points_need_every_workers_ethernet_address(tmp_path):
    """Workers without dlobd_ethernet_address: the Ethernet points that would use them are not
    runnable, naming the variable and the hosts; the IPoIB and RDMA points run as before."""
    cluster = inventory.load(write_other(tmp_path, ethernet_hosts=(1, 2, 3, 4, 5)))
    assert cluster.hosts["ibm-a6"].ethernet_address is None
    with provenance.inventory_in_use(cluster):
        done = {(eid, pid): r for eid, pid, r in dryrun.dry_runs(SPECS, "paper", tmp_path / "runs",
                                                                 experiments=["tfgrpc-fig14", "rdmatf-fig1"])}
    for (eid, pid), r in done.items():
        if over_ethernet(eid, pid):
            assert r.status == "not runnable", (eid, pid)
            assert re.match(r"network eth-1?0?g: worker\(s\) ", r.reason), r.reason
            assert "ibm-a6 (172.31.7.16), ibm-a7 (172.31.7.17) have no Ethernet address: set " \
                   "dlobd_ethernet_address" in r.reason, r.reason
        else:
            assert r.status == "dry run", (eid, pid, r.reason)
    assert sum(over_ethernet(*key) for key in done) == 6


def test_make_experiments_dry_run_prints_commands_and_writes_nothing(tmp_path):
    data = ROOT / "data"
    before = sorted(str(p) for p in data.rglob("*"))
    done = subprocess.run(["make", "-s", "-o", "setup", "experiments", "SCALE=paper", "DRY_RUN=1",
                           f"INVENTORY={write_other(tmp_path)}", "ID=rdmatf-fig6 tfgrpc-fig14",
                           f"BIN={Path(sys.executable).parent}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "nothing is run or written" in out
    assert "rdmatf-fig6 network-rdma_nodes-4:\n  $ " in out
    assert re.search(r"worker:3 on 172\.31\.7\.16 \(port [^)]*, chosen on 172\.31\.7\.16\): ssh", out)
    assert "rdmatf-fig6 network-rdma_nodes-8:\n  not runnable: needs 8 worker nodes: the inventory has 5" in out
    assert re.search(r"ps:0 on 172\.31\.7\.13 \(port [^)]*\): ssh", out) and not LOOPBACK.search(out)
    # an Ethernet point's servers on the workers' Ethernet addresses
    assert re.search(r"tfgrpc-fig14 network-eth-10g_[^:]*:\n  \$ .*\n    ps:0 on 10\.40\.7\.13 \(port [^)]*\): ssh ", out)
    assert out.rstrip().endswith("13 points: 12 with a command, 1 not runnable, 0 launcher errors")
    assert sorted(str(p) for p in data.rglob("*")) == before


def test_plan_prints_node_hour_estimates(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan", "--scale", "paper", "--quiet",
                          "--inventory", str(write_other(tmp_path))],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=True).stdout
    # TF-gRPC-Bench: (2 s warm-up + 10 s) x 5 repeats on 2 nodes, 9 points
    assert "tfgrpc-fig8" in out and "estimate: 0.30 node-hours for 9 of 9 points" in out
    # rdmatf-fig1: 224 s stated for its one-worker point, on 2 nodes with its assumed parameter server
    assert "estimate: 0.12 node-hours for 1 of 3 points" in out
    assert "estimate: unknown (the paper states no time for this point" in out



def test_two_hosts_with_the_same_cluster_address_are_refused(tmp_path):
    path = write_plain(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["all"]["hosts"]["ib-c2"]["dlobd_cluster_address"] = data["all"]["hosts"]["ib-c1"]["dlobd_cluster_address"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(inventory.InventoryError, match=r"hosts ib-c1 and ib-c2 have the same dlobd_cluster_address "
                                                       r"192\.168\.0\.2: give each host its own"):
        inventory.load(path)


def test_where_the_runs_state_lives_is_said_and_lustre_warned_of(tmp_path):
    """The plan and the dry run name where HDFS, YARN and Spark keep the runs' state: under a
    Lustre mount a host declares that is a warning naming dlobd_local_dir; under the prefix, a
    note; on a node-local folder, neither."""
    path = write_other(tmp_path / "lustre")
    for host_vars in (tmp_path / "lustre" / "host_vars").iterdir():
        values = yaml.safe_load(host_vars.read_text())
        values["dlobd_hardware"]["lustre"] = "/lustre"
        host_vars.write_text(yaml.safe_dump(values))
    lines = inventory.state_places(inventory.load(path))
    assert lines[0] == "HDFS blocks: /lustre/dlobd/stack/hosts/<host name>/var/hdfs/data"
    assert lines[-1].startswith("warning: /lustre/dlobd/stack/hosts/<host name> is on Lustre (/lustre, "
                                "dlobd_hardware.lustre): ") and "set dlobd_local_dir to a node-local disk" in lines[-1]
    assert inventory.state_places(inventory.load(EXAMPLE))[-1].startswith("note: under the prefix /scratch/dlobd/dlobd-stack")
    local = inventory.state_places(inventory.load(write_other(tmp_path / "local", dlobd_local_dir="/tmp/dlobd")))
    assert local == [f"{what}: /tmp/dlobd/{path}" for what, path in inventory.STATE_DIRS.items()]
