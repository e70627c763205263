"""An Ansible inventory as the cluster that `dlobd plan --inventory` and `dlobd dry-run` judge,
without reaching any of its hosts.

Ansible itself reads the inventory: the play of playbooks/inventory-settings.yml, whose one
`debug` task runs on the controller for every host, renders the host's variables with the
inventory's `all: vars:`, group_vars, host_vars and inheritance over the dlobd role's
defaults, the paper stack roles' defaults and any extra vars, in a play's precedence
(`ansible-inventory --list` would leave derived values such as dlobd_python unrendered, and miss
the roles' defaults). The settings lookup of that role says where each setting came from,
names any dlobd_* variable no role reads, and every value the role's settings schema
(files/settings.schema.json) refuses. On the launch host (the first `namenode` host:
experiments run from there, as from a head node) the task also renders the stack_env role's
dlobd-env.sh template, with the settings the caffeonspark, mmlspark, rdma_spark and hibench roles
record where the inventory runs them, so the settings a dry run sees are the ones provisioning writes into that
file. Values only provisioning finds (where Spark was installed, the BigDL jars, the host's
memory) stay references to the variable of dlobd-env.sh that carries them, e.g. `$SPARK_HOME`:
the file on the launch host gives their values.

How an inventory names the settings (docs/new-cluster.md):
- per host: `dlobd_cluster_address` (its IPoIB address), `dlobd_cluster_interface`,
  `dlobd_ethernet_address` (optional: its Ethernet address, which the points of an Ethernet
  network use), `dlobd_hardware` ({hca, ib_rate_gbps, gpus, gpu_model}: what the host has),
  `dlobd_prefix`;
- groups `namenode`, `resourcemanager`, `workers`, `gpu`;
- `dlobd_profile` (paper or modern) and `dlobd_install_method`, as for provisioning;
- `dlobd_stack_settings`: the paths of the software the playbooks do not install, one entry
  per setting the launchers read (STACK_SETTINGS below), e.g.
  `{RDMA_SPARK_HOME: /opt/rdma-spark-0.9.5, DLOBD_TF_RDMA_PYTHON: /opt/tf-verbs/bin/python}`
  (with `registered_stacks` in dlobd_paper_stacks, that role checks each on every host);
- the paper stack roles' own variables (rdma_spark_tarball, hibench_enabled, ...): the settings
  those roles would record are in the rendered dlobd-env.sh.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dlobd import ROOT
from dlobd.cluster import provenance

PLAYBOOKS = ROOT / "playbooks"
SETTINGS_PLAYBOOK = PLAYBOOKS / "inventory-settings.yml"
# What each setting's value may be: the lookup dlobd_settings checks every value against it
SETTINGS_SCHEMA = PLAYBOOKS / "roles" / "dlobd" / "files" / "settings.schema.json"
GROUPS = ("namenode", "resourcemanager", "workers", "gpu")

# The settings of dlobd_stack_settings: name -> what it gives, and where to get it.
STACK_SETTINGS = {
    "CAFFEONSPARK_SPARK_HOME": "a Spark 1.6 distribution (Scala 2.10, the line CaffeOnSpark's paper "
                               "build is compiled for) with bin/spark-submit, on every host: it "
                               "submits CaffeOnSpark's points where the hosts' Spark is another "
                               "(dlobd_paper_env other than caffeonspark)",
    "MMLSPARK_SPARK_HOME": "a Spark 2.2 distribution (MMLSpark 0.10's) with bin/spark-submit, on "
                           "every host: it submits MMLSpark's points where the hosts' Spark is "
                           "another (dlobd_paper_env other than mmlspark)",
    "RDMA_SPARK_HOME": "OSU RDMA-Spark (HiBD; registered download at hibd.cse.ohio-state.edu): "
                       "an unpacked Spark distribution with bin/spark-submit and jars/, which the "
                       "launchers switch to its RDMA transport over the hosts' own Spark settings; "
                       "network=rdma of BigDL and of HiBench's PageRank",
    "RDMA_GRPC_HOME": "OSU RDMA-gRPC (HiDL; registered download at hidl.cse.ohio-state.edu): "
                      "the prefix of its gRPC C++ build (lib/pkgconfig/grpc++.pc); the "
                      "grpc_bench role builds TF-gRPC-Bench against it into "
                      "<prefix>/tf-grpc-bench-rdma, which network=grpc+rdma points run; "
                      "TensorFlow's grpc+rdma points too",
    "DLOBD_TF_RDMA_PYTHON": "the python of a TensorFlow 1.x built from source with the verbs "
                            "and MPI channels (grpc+verbs, grpc+mpi; linked against RDMA-gRPC "
                            "for grpc+rdma); network=verbs, rdma, mpi, grpc+rdma of TensorFlow, "
                            "TensorFlowOnSpark and tf_cnn_benchmarks, and on the paper profile "
                            "native TensorFlow's gRPC points too (its stacks' Python has no TensorFlow)",
    "DLOBD_TF_RDMA_MPI": "the MPI that DLOBD_TF_RDMA_PYTHON's TensorFlow is linked against for its "
                         "MPI channel: openmpi, mpich, mvapich2 (default, the papers' MVAPICH2-2.3b; "
                         "its MVAPICH2_HOME) or mvapich2-gdr; network=mpi (grpc+mpi) of TensorFlow and "
                         "tf_cnn_benchmarks starts every task as a rank of one mpirun of it",
    provenance.TFOS_PYTHON: "the paper profile's Python of TensorFlowOnSpark 1.0.8 (driver and "
                         "executors): a Python 3.5 or 2.7, the newest Spark 2.1.0's PySpark runs on, "
                         "with `pip install tensorflow-gpu==1.4.0` and then `pip install --no-deps "
                         "tensorflowonspark==1.0.8` (its metadata asks for an unpinned tensorflow, which "
                         "would install a newer one over it; on workers without CUDA 8 `pip install "
                         "tensorflow==1.4.0 tensorflowonspark==1.0.8`; e.g. a conda or pyenv Python 3.5, pip "
                         "20.3.4 the last for it); the python_env role checks it on every host; "
                         "without it the spack and registry methods run the Python 2.7 of the paper "
                         "image (python_env_tfos_image: the preflight builds containers/paper-tfos-bigdl.def "
                         "or fetches it, role python_env places it on every host with a wrapper), and the "
                         "apptainer method the Python 2.7 of its own image, the paper image (those of "
                         "network=rdma run DLOBD_TF_RDMA_PYTHON, which then needs "
                         "tensorflowonspark 1.0.8 too, and so do the other points, one TF build on both "
                         "sides of a comparison); the paper profile's PageRank without HiBench "
                         "(workloads/pagerank/spark_pagerank.py) runs its PySpark in it too, and is not "
                         "runnable without it",
    "HIBENCH_HOME": "Intel HiBench built with its Spark PageRank (github.com/Intel-bigdata/HiBench)",
    "MVAPICH2_HOME": "MVAPICH2 (mvapich.cse.ohio-state.edu): mpi_impl=mvapich2 of hr-reduce",
    "MVAPICH2_GDR_HOME": "MVAPICH2-GDR (registered download at mvapich.cse.ohio-state.edu): "
                         "CUDA-aware MPI of hr-reduce and S-Caffe at paper scale",
    "TF_CNN_BENCHMARKS_HOME": "a checkout of github.com/tensorflow/benchmarks (the role "
                              "tf_cnn_benchmarks clones it at the pinned commit): the "
                              "directory holding scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py",
    "SCAFFE_HOME": "OSU-Caffe 0.9, the release of S-Caffe (HiDL; registered download at "
                   "hidl.cse.ohio-state.edu), built against MVAPICH2-GDR: its bin/caffe; S-Caffe's "
                   "training experiments",
    **{f"SCAFFE_HOME_{build}": f"S-Caffe built with the {build.replace('_', '-')} design of its Fig. 13 "
                               "and Table 2: not obtainable, a build of the authors' S-Caffe that was never "
                               "released (not a switch of the release), so its points run nowhere but their "
                               "cluster, whatever path is given"
       for build in ("SC_B", "SC_OB", "CC_8", "CB_4", "CB_8")},
    "CAFFE_HOME": "single-process multi-GPU Caffe (NVIDIA's or BVLC's build): its bin/caffe; "
                  "S-Caffe's comparisons with Caffe",
    "INSPUR_CAFFE_HOME": "Inspur Caffe-MPI (github.com/Caffe-MPI): its bin/caffe; S-Caffe's "
                         "comparison with Inspur-Caffe",
    "SCAFFE_IMAGENET_LMDB": "ILSVRC12 (registered download at image-net.org) as train/ and val/ "
                            "LMDBs: S-Caffe's ImageNet points",
    "SCAFFE_IMAGENET_LIST": "ILSVRC12 as image files with train.txt and val.txt lists, on the "
                            "parallel file system: S-Caffe's points that read images",
    "SCAFFE_IMAGENET_MAP": "ILSVRC12's map files for CNTK's reader: the CNTK points of S-Caffe's "
                           "comparison",
}

# Values only provisioning finds (role facts, the host's own facts), as the references to the
# dlobd-env.sh variables that carry them; single quotes keep them literal when it is sourced.
PROVISIONED = {
    "spark_home": "'$SPARK_HOME'",
    "spark_pythonpath": "",
    "hadoop_classpath": "$DLOBD_HADOOP_CLASSPATH",  # the template quotes it itself
    "dl_libs_bigdl_jar": "'$DLOBD_BIGDL_JAR'",
    "dl_libs_bigdl_core_jar": "'$DLOBD_BIGDL_CORE_JAR'",
    "dlobd_yarn_least_memory_mb": "'$DLOBD_YARN_MEMORY_MB'",
    "dlobd_yarn_least_vcores": "'$DLOBD_YARN_VCORES'",
    "dlobd_deb_arch": "'$(dpkg --print-architecture)'",
    "dlobd_node_name": "'$(uname -n)'",
    "dlobd_cluster_network": "<the network of dlobd_cluster_interface, found at provisioning>",
}
ANSIBLE_TIMEOUT_S = 300

# The dlobd-env.sh settings a role records from its own variables, not from dlobd_stack_settings:
# the plan asks for these role variables (docs/new-cluster.md's table of settings).
ROLE_VARIABLES = {"MMLSPARK_MPI_HOME": "mmlspark_mpi_home", "MMLSPARK_PYTHON": "mmlspark_python",
                  "HIBENCH_HOME": "hibench_enabled"}
# ... and those recorded per device, <PREFIX><DEVICE>: the role variable listing the devices
DEVICE_VARIABLES = {"CNTK_HOME_": "mmlspark_cntk_homes", "CAFFEONSPARK_HOME_": "caffeonspark_builds"}
# The role variables the settings play renders for the plan: those it asks for, what decides
# the CaffeOnSpark builds a host ends up with, and whether (and from which image) the paper
# profile's TensorFlowOnSpark runs in the paper image's Python
ROLE_SETTINGS = (*ROLE_VARIABLES.values(), *DEVICE_VARIABLES.values(), "caffeonspark_install_method",
                 "caffeonspark_host_builds", "python_env_tfos_from_image", "python_env_tfos_image",
                 "dlobd_yarn_memory_fraction", "dlobd_yarn_vcores_per_cpu", "dlobd_yarn_min_allocation_mb",
                 "datasets_names")
# The settings `dlobd plan` shows in effect, with where each was set.
IN_EFFECT = ("dlobd_profile", "dlobd_install_method", "dlobd_paper_env", "dlobd_prefix",
             "dlobd_paper_stacks", "dlobd_stack_settings", "dlobd_cluster_name", "dlobd_assume")


class InventoryError(ValueError):
    """An inventory that cannot describe a cluster to plan for; the message names the problem."""


@dataclass(frozen=True)
class Host:
    name: str
    address: str                 # dlobd_cluster_address: the IPoIB address on an IB cluster
    interface: str | None        # dlobd_cluster_interface
    hardware: dict               # dlobd_hardware, {} when the inventory declares none
    ethernet_address: str | None = None  # dlobd_ethernet_address: Ethernet points run over it


@dataclass(frozen=True)
class Cluster:
    source: Path
    hosts: dict                  # name -> Host, every host of the inventory's groups
    groups: dict                 # group -> tuple of host names
    launch_host: str
    settings: dict               # what dlobd-env.sh exports on the launch host
    paper_stacks: tuple = ()     # the paper profile's stack roles site.yml runs (dlobd_paper_stacks)
    # the launch host's settings in effect: name -> (value, where it was set; None: the default)
    in_effect: dict = field(default_factory=dict)
    role_settings: dict = field(default_factory=dict)  # the launch host's values of ROLE_SETTINGS
    # the settings the paper stacks' roles record in dlobd-env.sh where the inventory runs them
    role_records: tuple = ()
    # the launch host's dlobd_* and role variables the inventory (or -e) sets: name -> where
    origins: dict = field(default_factory=dict)
    # capabilities the plan counts as present while it asks a launcher what else a point needs
    assumed: frozenset = frozenset()

    def members(self, group: str) -> list[Host]:
        return [self.hosts[name] for name in self.groups.get(group, ())]

    @property
    def prefix(self) -> Path:
        return Path(self.settings["DLOBD_PREFIX"])


def ansible_playbook() -> str:
    """The `ansible-playbook` of the tooling venv this package runs in, else the one on PATH."""
    beside = Path(sys.executable).with_name("ansible-playbook")
    found = str(beside) if beside.is_file() else shutil.which("ansible-playbook")
    if not found:
        raise InventoryError("ansible-playbook is not installed (make setup installs ansible-core in .venv)")
    return found


# How Ansible's minimal stdout callback (the ad-hoc default, not deprecated) opens each task
# result: `<host> | SUCCESS => ` (or FAILED!), then the result as JSON
# (ANSIBLE_CALLBACK_RESULT_FORMAT=json), which no longer says whether it failed
RESULT_HEAD = re.compile(r"^(\S+) \| (SUCCESS|CHANGED|FAILED!) => ", re.MULTILINE)


def _results(stdout: str, path: Path) -> dict:
    """host -> (whether its task failed, its result), from the minimal callback's output of the
    settings play. A result is read whole before the next head is looked for, so no text inside
    one is taken for a head."""
    decoder = json.JSONDecoder()
    results, at = {}, 0
    while head := RESULT_HEAD.search(stdout, at):
        try:
            result, at = decoder.raw_decode(stdout, head.end())
        except json.JSONDecodeError as exc:
            raise InventoryError(f"{path}: Ansible's result for host {head[1]} is not JSON: {exc}") from None
        results[head[1]] = (head[2] == "FAILED!", result)
    return results


def _render(path: Path, extra_vars: dict) -> dict:
    """host -> rendered message of the settings play, read from Ansible's output."""
    argv = [ansible_playbook(), "-i", str(path), str(SETTINGS_PLAYBOOK),
            "--tags", "dlobd_settings",
            "-e", json.dumps({**PROVISIONED, "inventory_role_settings": ROLE_SETTINGS, **extra_vars})]
    # only the minimal callback writes to stdout: none a user's environment enables. Ansible's own
    # strategy: the play only renders on the controller, and starting Mitogen's took 1.5 s of 4.
    env = {**{k: v for k, v in os.environ.items() if k != "ANSIBLE_CALLBACKS_ENABLED"},
           "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STRATEGY": "linear",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.minimal", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env,
                              timeout=ANSIBLE_TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise InventoryError(f"{path}: ansible did not read it within {ANSIBLE_TIMEOUT_S} s") from None
    results = _results(proc.stdout, path)
    failed = {host: r.get("msg") for host, (failure, r) in results.items() if failure}
    if failed:
        host, msg = next(iter(failed.items()))
        raise InventoryError(f"{path}: Ansible cannot render the variables of host {host}: {msg}")
    if proc.returncode != 0 or not results:
        detail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise InventoryError(f"{path}: Ansible found no host to read (exit {proc.returncode}): "
                             f"{detail or 'no output'}")
    return {host: r["msg"] for host, (_, r) in results.items()}


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def _host(name: str, values: dict, path: Path, several: bool) -> Host:
    address = values.get("dlobd_cluster_address")
    if not address:
        raise InventoryError(f"{path}: host {name} has no dlobd_cluster_address")
    ethernet = values.get("dlobd_ethernet_address") or None
    for variable, value, what in (("dlobd_cluster_address", address, "the IPoIB address on an InfiniBand cluster"),
                                  ("dlobd_ethernet_address", ethernet, "on its Ethernet interface")):
        if several and value is not None and _is_loopback(str(value)):
            raise InventoryError(f"{path}: host {name}: {variable} {value} is loopback in an inventory "
                                 f"of several hosts: give each host the address its peers reach it at ({what})")
    hardware = values.get("dlobd_hardware") or {}
    return Host(name, str(address), values.get("dlobd_cluster_interface"), dict(hardware),
                None if ethernet is None else str(ethernet))


def _distinct_addresses(hosts: dict, path: Path) -> None:
    """Stop on two hosts with the same cluster (or Ethernet) address: each daemon and task binds its
    host's own, and a command meant for one would reach the other."""
    for variable in ("address", "ethernet_address"):
        seen = {}
        for name, host in hosts.items():
            value = getattr(host, variable)
            if value is not None and value in seen:
                raise InventoryError(f"{path}: hosts {seen[value]} and {name} have the same "
                                     f"dlobd_{'cluster_' if variable == 'address' else ''}{variable} {value}: "
                                     "give each host its own")
            seen.setdefault(value, name)


def _unknown_settings(found: dict, where: str) -> None:
    """Stop on a dlobd_* or role variable no role reads, as the preflight does (lookup
    dlobd_settings)."""
    if found["unknown"]:
        raise InventoryError(where + ": " + "; ".join(
            f"{name} (set in {found['origins'][name]}) is no setting of the playbooks"
            + (f" (did you mean {' or '.join(why['close'])}?)" if why["close"] else "")
            + f"; the accepted names and their defaults: {why['defaults']}"
            for name, why in found["unknown"].items()))


def _invalid_values(rendered: dict, path: Path) -> None:
    """Stop on every value of every host that the settings' schema refuses, all at once, in the
    preflight's words (the settings lookup's `invalid`). A value several hosts share (set for a
    group, or for all) is named once, with its hosts."""
    hosts = {}
    for name in sorted(rendered):
        for line in rendered[name]["dlobd_settings"]["invalid"]:
            hosts.setdefault(line, []).append(name)
    if hosts:
        raise InventoryError(f"{path}: {len(hosts)} value(s) that {SETTINGS_SCHEMA.relative_to(ROOT)} refuses:\n"
                             + "\n".join(f"  host{'s' if len(names) > 1 else ''} {', '.join(names)}: {line}"
                                         for line, names in hosts.items()))


def _stack_settings(values: dict, where: str) -> dict:
    """The launchers' settings the host gives; their shape is the schema's (_invalid_values), the
    names the launchers read are STACK_SETTINGS."""
    given = values.get("dlobd_stack_settings") or {}
    unknown = sorted(set(given) - set(STACK_SETTINGS))
    if unknown:
        raise InventoryError(f"{where}: dlobd_stack_settings names {', '.join(unknown)}, which no "
                             f"launcher reads (known: {', '.join(STACK_SETTINGS)})")
    return given


@functools.lru_cache(maxsize=8)
def load(path, prefix: str | None = None) -> Cluster:
    """The cluster an inventory describes. `prefix` overrides every host's dlobd_prefix, as
    `make provision DLOBD_PREFIX=...` does. Raises InventoryError naming what is wrong."""
    path = Path(path)
    if not path.exists():
        raise InventoryError(f"{path}: no such inventory")
    with tempfile.TemporaryDirectory(prefix="dlobd-inventory-") as tmp:
        rendered = _render(path, {"dlobd_prefix": prefix} if prefix else {})
        _invalid_values(rendered, path)
        groups = next(iter(rendered.values()))["groups"]
        for group in ("namenode", "resourcemanager", "workers"):
            if not groups.get(group):
                raise InventoryError(f"{path}: group {group} has no host (the playbooks need "
                                     "namenode, resourcemanager and workers)")
        members = {name for group in GROUPS for name in groups.get(group, [])}
        hosts = {name: _host(name, rendered[name], path, len(members) > 1) for name in sorted(members)}
        _distinct_addresses(hosts, path)
        launch = groups["namenode"][0]
        values = rendered[launch]
        if values.get("dlobd_prefix") is None:
            raise InventoryError(
                f"{path}: host {launch} has no dlobd_prefix the controller can know (the "
                "playbooks' default is the remote user's home/dlobd-stack): set dlobd_prefix "
                "in the inventory, or pass the prefix (DLOBD_PREFIX=... / --prefix)")
        for name in sorted(members):
            _unknown_settings(rendered[name]["dlobd_settings"], f"{path}: host {name}")
            _stack_settings(rendered[name], f"{path}: host {name}")
        env_file = Path(tmp) / "dlobd-env.sh"
        env_file.write_text(values["env"])
        settings = provenance.source_env(env_file, base={})
    origins = values["dlobd_settings"]["origins"]
    workers = [hosts[name] for name in groups["workers"]]
    return Cluster(source=path, hosts=hosts,
                   groups={g: tuple(groups.get(g, [])) for g in GROUPS},
                   launch_host=launch,
                   settings={**settings, **least_nodemanager(workers, values["role_settings"])},
                   paper_stacks=tuple(values.get("dlobd_paper_stacks") or ()),
                   in_effect={name: (values[name], origins.get(name)) for name in IN_EFFECT},
                   role_settings=values["role_settings"], role_records=tuple(values["role_records"]),
                   origins=dict(origins))


def placeholder(what: str) -> str:
    """The value the plan's summary gives a path only the site knows: a marker to replace."""
    return f"<{what}>"


def addition(cluster: Cluster, variable: str, new):
    """What the plan's summary adds to a mapping or list `variable`: the `new` entries alone where
    the inventory sets it (they are merged into its value), else the role default's entries too (a
    value the inventory sets replaces the default)."""
    if variable in cluster.origins:
        return new
    current = cluster.role_settings.get(variable, cluster.in_effect.get(variable, (None,))[0])
    if isinstance(new, dict):
        return {**(current or {}), **new}
    return list(dict.fromkeys([*(current or []), *new]))


def settings_giving(name: str, cluster: Cluster) -> dict:
    """The inventory settings (variable -> value) that give the dlobd-env.sh setting `name` a
    launcher reads, only what is new to the inventory (addition). Paths only the site knows are
    placeholders. {} for a name no inventory setting gives."""
    role = cluster.role_settings
    if name in ROLE_VARIABLES:
        variable = ROLE_VARIABLES[name]
        return {variable: True if variable == "hibench_enabled" else placeholder(f"{variable}: a path on every host")}
    device_prefix = next((p for p in DEVICE_VARIABLES if name.startswith(p) and len(name) > len(p)), None)
    if device_prefix == "CNTK_HOME_":
        device = name[len(device_prefix):].lower().replace("_", "-")
        return {"mmlspark_cntk_homes": addition(cluster, "mmlspark_cntk_homes", {
            device: placeholder(f"CNTK 2.x {device} build: a path on every host")})}
    if device_prefix == "CAFFEONSPARK_HOME_":
        # the spack method builds one device per host (the head node's here): the git method all listed
        device = name[len(device_prefix):].lower().replace("_", "-")
        spack = role.get("caffeonspark_install_method") == "spack"
        return {**({"caffeonspark_install_method": "git"} if spack else {}),
                "caffeonspark_builds": addition(cluster, "caffeonspark_builds", [device])}
    if name in STACK_SETTINGS:
        return {"dlobd_stack_settings": addition(cluster, "dlobd_stack_settings", {
            name: placeholder(f"{name}: a path on every host")})}
    return {}


# What runs write on each host, under its own folder (dlobd_local_dir), as roles hdfs, yarn and spark
# place it
STATE_DIRS = {"HDFS blocks": "var/hdfs/data", "YARN's local dirs": "var/yarn/local",
              "YARN's container logs": "var/yarn/logs", "Spark's shuffle and spill": "var/spark/local"}


def state_places(cluster: Cluster) -> list[str]:
    """Where HDFS, YARN and Spark keep the runs' state on the hosts (the launch host's
    dlobd_local_dir), with a warning where that is a shared file system: a Lustre mount a host
    declares (dlobd_hardware.lustre), or the prefix, which hosts may share."""
    local = (cluster.settings.get("DLOBD_LOCAL_DIR") or str(cluster.prefix)).replace("$(uname -n)", "<host name>")
    lines = [f"{what}: {local}/{path}" for what, path in STATE_DIRS.items()]
    mounts = sorted({str(h.hardware["lustre"]) for h in cluster.hosts.values() if h.hardware.get("lustre")})
    lustre = next((m for m in mounts if Path(m) == Path(local) or Path(m) in Path(local).parents), None)
    if lustre:
        lines.append(f"warning: {local} is on Lustre ({lustre}, dlobd_hardware.lustre): every host's HDFS blocks, "
                     "shuffle and scratch would go through the shared file system; set dlobd_local_dir to a "
                     "node-local disk (e.g. /tmp/dlobd)")
    elif Path(cluster.prefix) in Path(local).parents:
        lines.append(f"note: under the prefix {cluster.prefix}: where the hosts share it (NFS, Lustre), set "
                     "dlobd_local_dir to a node-local disk (the preflight says whether they share it)")
    return lines


def smallest_nodemanager(workers: list[Host], role_settings: dict) -> dict:
    """The smallest NodeManager's memory_mb and vcores among the workers that declare each (None
    where none does), as derived.yml computes them for yarn-site.xml."""
    managers = [nodemanager(h, role_settings) for h in workers]
    return {key: min((m[key] for m in managers if m[key] is not None), default=None)
            for key in ("memory_mb", "vcores")}


def least_nodemanager(workers: list[Host], role_settings: dict) -> dict:
    """DLOBD_YARN_MEMORY_MB and DLOBD_YARN_VCORES as role stack_env will export them on every
    host, the smallest worker's NodeManager, where every worker declares its size ({} where one
    does not: only provisioning finds it, and the dry run shows the variable)."""
    declared = all(isinstance(h.hardware.get(key), (int, float)) for h in workers for key in ("memory_gb", "cores"))
    if not workers or not declared:
        return {}
    smallest = smallest_nodemanager(workers, role_settings)
    return {"DLOBD_YARN_MEMORY_MB": str(smallest["memory_mb"]), "DLOBD_YARN_VCORES": str(smallest["vcores"])}


def nodemanager(host: Host, role_settings: dict) -> dict:
    """What role yarn gives the host's NodeManager, as derived.yml computes it from the node's
    declared size: {'memory_mb', 'vcores'} (None where the inventory declares no size: the host's
    own, found at provisioning) and 'why', the computation in words."""
    fraction = float(role_settings.get("dlobd_yarn_memory_fraction") or 0)
    per_cpu = int(role_settings.get("dlobd_yarn_vcores_per_cpu") or 0)
    memory_gb, cores = host.hardware.get("memory_gb"), host.hardware.get("cores")
    memory_mb = int(memory_gb * 1024 * fraction) if isinstance(memory_gb, (int, float)) else None
    vcores = cores * per_cpu if isinstance(cores, int) else None
    return {"memory_mb": memory_mb, "vcores": vcores, "why": (
        "memory " + (f"{memory_mb} MB ({memory_gb} GB x dlobd_yarn_memory_fraction {fraction:g})"
                     if memory_mb is not None else f"its own x dlobd_yarn_memory_fraction {fraction:g}, found at "
                                                   "provisioning (no dlobd_hardware.memory_gb)")
        + "; vcores " + (f"{vcores} ({cores} cores x dlobd_yarn_vcores_per_cpu {per_cpu})" if vcores is not None
                         else f"its CPUs x dlobd_yarn_vcores_per_cpu {per_cpu}, found at provisioning "
                              "(no dlobd_hardware.cores)"))}
