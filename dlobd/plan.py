"""`dlobd plan`: which experiments this cluster can run at a scale, and why not the others.

The cluster's capabilities are detected, not assumed: InfiniBand from /sys/class/infiniband,
GPUs from /dev/nvidia* and nvidia-smi, the provisioned software from the prefix
($DLOBD_PREFIX, default ~/dlobd-stack), MPI and the C++ gRPC toolchain from PATH and
pkg-config. A spec's scale says what it `needs` (and which points need more); a scale
marked not runnable carries its own reason.
"""

from __future__ import annotations

import functools
import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

from dlobd import fabric, provenance


def _have(pattern: str) -> bool:
    return bool(glob.glob(pattern, recursive=True))


def _home(var: str) -> Path | None:
    value = provenance.stack_setting(var)
    return Path(value) if value else None


def capabilities() -> dict[str, tuple[bool, str]]:
    """capability -> (present, how it was found or why not): of the inventory in use
    (provenance.inventory_in_use), else detected on this machine."""
    cluster = provenance.inventory()
    if cluster is not None:
        return inventory_capabilities(cluster)
    return local_capabilities()


@functools.lru_cache(maxsize=1)
def local_capabilities() -> dict[str, tuple[bool, str]]:
    """capability -> (present, how it was found or why not) on this machine."""
    pre = provenance.prefix()
    env_file = pre / "etc" / "dlobd-env.sh"
    caps: dict[str, tuple[bool, str]] = {"tcp": (True, "every cluster has TCP/IP")}

    ib = sorted(p.name for p in Path("/sys/class/infiniband").glob("*")) \
        if Path("/sys/class/infiniband").is_dir() else []
    caps["infiniband"] = (bool(ib), f"HCAs: {', '.join(ib)}" if ib else
                          "no InfiniBand HCA (/sys/class/infiniband is empty or absent)")
    caps["rdma"] = (bool(ib), caps["infiniband"][1])

    smi = shutil.which("nvidia-smi")
    gpus = glob.glob("/dev/nvidia[0-9]*")
    caps["nvidia-smi"] = (smi is not None, smi or "nvidia-smi not on PATH")
    caps["gpu"] = (bool(gpus) and smi is not None,
                   f"{len(gpus)} GPU device(s)" if gpus else "no GPU (/dev/nvidia* absent)")

    profile = provenance.stack_setting("DLOBD_PROFILE")
    caps["paper-profile"] = (profile == "paper",
                             "the paper software profile is provisioned" if profile == "paper"
                             else f"the provisioned profile is {profile or 'not set'}, not 'paper'"
                             " (the papers' versions need their own cluster install)")

    prov = "provisioned prefix " + (str(pre) if env_file.is_file() else
                                    f"{pre} has no etc/dlobd-env.sh (run `make provision`)")
    hadoop_home = _home("HADOOP_HOME") or pre
    image = provenance.stack_setting("DLOBD_APPTAINER_IMAGE")
    if provenance.stack_setting("DLOBD_INSTALL_METHOD") == "apptainer" and env_file.is_file():
        # the apptainer method's HADOOP_HOME links into the image, where the jars are
        caps["hadoop"] = (hadoop_home.is_symlink() and Path(image or "").is_file(),
                          f"Hadoop {provenance.stack_setting('HADOOP_VERSION')} in the image {image} "
                          f"(HADOOP_HOME {hadoop_home} links into it)")
    else:
        # provisioning writes dlobd-env.sh: jars in a prefix without it are no install to use
        caps["hadoop"] = (env_file.is_file() and _have(str(hadoop_home / "**" / "hadoop-common-[0-9]*.jar")),
                          f"Hadoop jars under {hadoop_home}" if env_file.is_file() else prov)
    spark_home = _home("SPARK_HOME") or pre
    caps["spark"] = (env_file.is_file() and _have(str(spark_home / "**" / "bin" / "spark-submit")),
                     f"spark-submit under {spark_home}" if env_file.is_file() else prov)
    versions = provenance.versions()
    caps["tensorflow"] = (versions["tensorflow"] is not None,
                          f"tensorflow {versions['tensorflow']}" if versions["tensorflow"]
                          else f"no tensorflow in the stacks' venv under {pre}")
    caps["tensorflowonspark"] = (versions["tensorflowonspark"] is not None,
                                 f"tensorflowonspark {versions['tensorflowonspark']}"
                                 if versions["tensorflowonspark"]
                                 else f"no tensorflowonspark under {pre}")
    if profile == "paper":
        # the paper profile's stacks' Python has no TensorFlow: TensorFlowOnSpark runs in the Python
        # the site gives (DLOBD_TFOS_PYTHON; role python_env checks its versions), its RDMA points
        # and native TensorFlow in the site's TF 1.x build (DLOBD_TF_RDMA_PYTHON); the launchers
        # say per point which one it needs
        for name, settings in (("tensorflowonspark", ("DLOBD_TFOS_PYTHON", "DLOBD_TF_RDMA_PYTHON")),
                               ("tensorflow", ("DLOBD_TF_RDMA_PYTHON",))):
            given = [(s, p) for s in settings if (p := _home(s))]
            found = [f"{s} {p}" for s, p in given if p.is_file()]
            caps[name] = ((bool(found), f"{name} in " + ", ".join(found)) if found else
                          (False, f"the paper profile's {name} runs in the Python "
                                  f"{' or '.join(settings)} names (dlobd_stack_settings): "
                                  + ("; ".join(f"{s} {p}: no such file" for s, p in given) or "unset")))
    caps["bigdl"] = (versions["bigdl"] is not None,
                     f"BigDL jar {versions['bigdl']}" if versions["bigdl"]
                     else f"no bigdl-dllib jar under {pre}")
    from dlobd.stacks import tf_cnn_benchmarks

    tfcnn = tf_cnn_benchmarks.script()
    caps["tf_cnn_benchmarks"] = (bool(tfcnn and tfcnn.is_file()), str(tfcnn) if tfcnn else
                                 tf_cnn_benchmarks.WHERE_TO_GET)
    caps["mpi"] = (shutil.which("mpirun") is not None,
                   shutil.which("mpirun") or "mpirun not on PATH")
    grpc_py = provenance.dist_version("grpcio")
    caps["grpc"] = (grpc_py is not None, f"grpcio {grpc_py}" if grpc_py else f"no grpcio under {pre}")
    pkg = subprocess.run(["pkg-config", "--exists", "grpc++"], capture_output=True) \
        if shutil.which("pkg-config") else None
    plugin = shutil.which("grpc_cpp_plugin")
    have_cpp = pkg is not None and pkg.returncode == 0 and plugin is not None
    caps["grpc-cpp"] = (have_cpp, "grpc++ and grpc_cpp_plugin" if have_cpp else
                        "no C++ gRPC toolchain (pkg-config grpc++ / grpc_cpp_plugin)")
    caffe = glob.glob(str(pre / "**" / "site-packages" / "caffe" / "_caffe*.so"), recursive=True)
    caps["caffe"] = (bool(caffe), caffe[0] if caffe else "no pycaffe build under the prefix")
    # the paper profile's builds, one per device (roles caffeonspark, mmlspark)
    devices = ("CPU_OPENBLAS", "CPU_MKL", "GPU", "GPU_CUDNN")
    cos = [h for d in devices if (h := provenance.stack_setting(f"CAFFEONSPARK_HOME_{d}"))]
    caps["caffeonspark"] = (bool(cos), f"CaffeOnSpark builds: {', '.join(cos)}" if cos else
                            "CaffeOnSpark is on no registry: the role caffeonspark builds it (here "
                            "`make provision CAFFEONSPARK=1`, the modern port; on a cluster "
                            "dlobd_paper_stacks); CAFFEONSPARK_HOME_<DEVICE> unset")
    for d in devices:
        home = provenance.stack_setting(f"CAFFEONSPARK_HOME_{d}")
        device = d.lower().replace("_", "-")
        caps[f"caffeonspark-{device}"] = (bool(home), home or f"no CaffeOnSpark build for {device} "
                                          f"(role caffeonspark, caffeonspark_builds: [{device}]; "
                                          f"CAFFEONSPARK_HOME_{d} unset)")
    cntk = [h for d in devices if (h := provenance.stack_setting(f"CNTK_HOME_{d}"))]
    caps["cntk"] = (bool(cntk), f"CNTK builds: {', '.join(cntk)}" if cntk else
                    "CNTK 2.x wheels exist only for Python <= 3.6: a site's CNTK 2.x build "
                    "(CNTK_HOME_<DEVICE>, role mmlspark)")
    rdma_spark = _home("RDMA_SPARK_HOME")
    caps["rdma-spark"] = (bool(rdma_spark and rdma_spark.is_dir()),
                          str(rdma_spark) if rdma_spark else
                          "OSU RDMA-Spark needs a registered download (RDMA_SPARK_HOME unset)")
    tf_rdma = _home("DLOBD_TF_RDMA_PYTHON")
    caps["tf-rdma"] = (bool(tf_rdma and tf_rdma.is_file()),
                       str(tf_rdma) if tf_rdma else
                       "TensorFlow's verbs/MPI channels exist only in source builds of TF 1.x "
                       "(DLOBD_TF_RDMA_PYTHON unset)")
    rdma_grpc = _home("RDMA_GRPC_HOME")
    caps["rdma-grpc"] = (bool(rdma_grpc and rdma_grpc.is_dir()),
                         str(rdma_grpc) if rdma_grpc else
                         "OSU RDMA-gRPC needs a registered download (RDMA_GRPC_HOME unset)")
    hibench = _home("HIBENCH_HOME")
    caps["hibench"] = (bool(hibench and hibench.is_dir()),
                       str(hibench) if hibench else
                       "HiBench not provisioned (HIBENCH_HOME unset: the hibench role sets it where "
                       "an inventory has hibench_enabled: true)")
    lustre = fabric.detect_lustre(Path("/proc/mounts"))
    caps["lustre"] = (bool(lustre["mounts"]), ", ".join(lustre["mounts"]) or lustre["none_because"])
    workers = provenance.workers()
    caps["multi-host"] = (len(workers) > 1, f"workers: {', '.join(workers)}" if len(workers) > 1
                          else "one host (DLOBD_WORKERS names fewer than two workers)")
    # An emulated cluster's hosts are linked by one tier: its own network value, no other.
    from dlobd import networks

    linked = provenance.stack_setting("DLOBD_EMULATED_NETWORK")
    label = provenance.stack_setting("DLOBD_EMULATED_LINK")
    for value in networks.emulated_values():
        caps[value] = (value == linked, f"the hosts are linked by {label}" if label
                       else "no emulated link (hosts of `make emulated-up` with that tier)")
    return caps


# What site.yml installs on every host of an inventory, at either profile.
PROVISIONED = ("hadoop", "spark", "tensorflow", "tensorflowonspark", "bigdl", "mpi", "grpc", "grpc-cpp")
# Software an inventory gives by path: capability -> its dlobd_stack_settings entry.
SOFTWARE_SETTINGS = {"rdma-spark": "RDMA_SPARK_HOME", "rdma-grpc": "RDMA_GRPC_HOME",
                     "tf-rdma": "DLOBD_TF_RDMA_PYTHON", "hibench": "HIBENCH_HOME",
                     "tf_cnn_benchmarks": "TF_CNN_BENCHMARKS_HOME"}
# Where a role installs one of them without a path from the inventory: setting -> how to ask for it.
ROLE_INSTALLS = {"HIBENCH_HOME": "the hibench role installs it where hibench_enabled: true",
                 "TF_CNN_BENCHMARKS_HOME": "the tf_cnn_benchmarks role links it on the spack method "
                                           "where the host's Spack environment has tf-cnn-benchmarks"}
# Software a paper-profile role installs where the inventory lists it in dlobd_paper_stacks:
# capability -> that role.
PAPER_ROLES = {"caffeonspark": "caffeonspark", "cntk": "mmlspark"}
# Software no inventory setting or role declares yet: why the plan cannot count on it.
UNDECLARED = {
    "caffe": "Caffe (pycaffe): no inventory setting or role provides it yet",
}


def _declared(hosts, what: str) -> str:
    return f"{what} on {', '.join(h.name for h in hosts)} (declared in the inventory's dlobd_hardware)"


def inventory_capabilities(cluster) -> dict[str, tuple[bool, str]]:
    """capability -> (present, why) of an inventory's cluster (dlobd.inventory.Cluster): the
    hardware its hosts declare (dlobd_hardware), the software provisioning installs, and the
    paths it gives (dlobd_stack_settings). Nothing on the hosts is checked from here."""
    from dlobd import networks

    workers = cluster.members("workers")
    caps: dict[str, tuple[bool, str]] = {"tcp": (True, "every cluster has TCP/IP")}
    no_hca = [h.name for h in workers if not h.hardware.get("hca")]
    rates = sorted({str(h.hardware.get("ib_rate_gbps", "?")) for h in workers})
    caps["infiniband"] = ((False, f"worker(s) {', '.join(no_hca)} declare no HCA (dlobd_hardware.hca)")
                          if no_hca else
                          (True, _declared(workers, f"HCA {', '.join(sorted({str(h.hardware['hca']) for h in workers}))} "
                                                    f"at {'/'.join(rates)} Gb/s")))
    caps["rdma"] = caps["infiniband"]
    gpu_hosts = [h for h in cluster.members("gpu") if int(h.hardware.get("gpus") or 0) > 0]
    models = sorted({str(h.hardware.get("gpu_model", "?")) for h in gpu_hosts})
    caps["gpu"] = ((True, _declared(gpu_hosts, f"{sum(int(h.hardware['gpus']) for h in gpu_hosts)} "
                                               f"GPU(s) ({', '.join(models)})"))
                   if gpu_hosts else
                   (False, "no host of group gpu declares GPUs (dlobd_hardware.gpus)"))
    no_lustre = [h.name for h in workers if not h.hardware.get("lustre")]
    caps["lustre"] = ((False, f"worker(s) {', '.join(no_lustre)} declare no Lustre folder (dlobd_hardware.lustre)")
                      if no_lustre else
                      (True, _declared(workers, "Lustre at " + ", ".join(sorted({str(h.hardware["lustre"])
                                                                                  for h in workers})))))
    caps["nvidia-smi"] = (caps["gpu"][0], "comes with the NVIDIA driver of the declared GPUs"
                          if gpu_hosts else caps["gpu"][1])
    profile = cluster.settings.get("DLOBD_PROFILE")
    caps["paper-profile"] = (profile == "paper", f"dlobd_profile is {profile}"
                             + ("" if profile == "paper" else ", not paper"))
    for name in PROVISIONED:
        caps[name] = (True, f"installed by site.yml ({cluster.settings.get('DLOBD_INSTALL_METHOD')} "
                            "method); not checked from here")
    if profile == "paper":
        # not in the stacks' Python there: native TensorFlow runs in the site's TF 1.x build (the
        # TensorFlowOnSpark launcher says per point which Python it lacks)
        value = cluster.settings.get("DLOBD_TF_RDMA_PYTHON")
        caps["tensorflow"] = (bool(value), f"the paper profile's tensorflow runs in DLOBD_TF_RDMA_PYTHON={value} "
                                           "(dlobd_stack_settings; not checked from here)" if value else
                              "the paper profile's tensorflow runs in the Python DLOBD_TF_RDMA_PYTHON names, "
                              "which is not in the inventory's dlobd_stack_settings")
    for name, setting in SOFTWARE_SETTINGS.items():
        value = cluster.settings.get(setting)
        caps[name] = (bool(value), f"{setting}={value} (dlobd-env.sh on the launch host, from "
                                   "dlobd_stack_settings or a role; not checked from here)" if value else
                      f"{setting} is not in the inventory's dlobd_stack_settings, nor installed by a role"
                      + (f" ({ROLE_INSTALLS[setting]})" if setting in ROLE_INSTALLS else ""))
    for name, role in PAPER_ROLES.items():
        enabled = caps["paper-profile"][0] and role in cluster.paper_stacks
        caps[name] = (enabled, f"installed by the {role} role (dlobd_paper_stacks); not checked from here"
                      if enabled else f"the inventory does not run the {role} role (dlobd_profile: paper "
                      f"and {role} in dlobd_paper_stacks)")
    for name, why in UNDECLARED.items():
        caps[name] = (False, why)
    caps["multi-host"] = (len(workers) > 1, f"workers: {', '.join(h.name for h in workers)}")
    for value in networks.emulated_values():
        caps[value] = (False, "an inventory's hosts are linked by real networks, not emulated tiers")
    return caps


def missing(needs) -> list[str]:
    """Reasons for every capability in `needs` this cluster lacks."""
    caps = capabilities()
    out = []
    for need in needs or []:
        present, why = caps.get(need, (False, "unknown capability"))
        if not present:
            out.append(f"needs {need}: {why}")
    return out


def point_missing(scale: dict, point: dict) -> list[str]:
    """Missing capabilities of one point: the scale's `needs` and matching `point_needs`."""
    from dlobd.spec import point_id

    needs = list(scale.get("needs") or [])
    for entry in scale.get("point_needs") or []:
        # compare through point ids so 2 and 2.0 (or 'gpu' and gpu) match alike
        if all(point_id({k: point.get(k)}) == point_id({k: v}) for k, v in entry["at"].items()):
            needs.extend(n for n in entry["needs"] if n not in needs)
    cluster = provenance.inventory()
    return missing(needs) + (size_missing(scale, point, cluster) if cluster is not None else [])


def _count(value) -> int | None:
    """A whole number of a point or fixed parameter; None for prose ('not stated')."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number == int(number) and number > 0 else None


def point_size(scale: dict, point: dict) -> dict:
    """What a point asks of a cluster's size: `nodes` (point or fixed `nodes`/`worker_nodes`,
    one worker host each; else, on GPUs, the GPUs and parameter servers `per_node` at a time),
    `per_node` GPUs on each of them (`gpus_per_node`/`devices_per_node`
    on GPU points) and `gpus` in all (`gpus`, or the ranks of `processes` on GPU buffers);
    None where the spec gives none."""
    params = {**(scale.get("fixed") or {}), **point}
    nodes = next((n for n in (_count(params.get(k)) for k in ("nodes", "worker_nodes")) if n), None)
    device = str(params.get("device", params.get("worker_device", "")))
    on_gpu = "gpu" in device or (not device.startswith("cpu") and "gpu" in (scale.get("needs") or []))
    per_node = params.get("gpus_per_node", params.get("devices_per_node"))
    if isinstance(per_node, dict):  # per workload, e.g. {cifar10: 2, mnist: 1}
        per_node = per_node.get(str(params.get("workload")))
    total = _count(params.get("gpus"))
    if total is None and str(params.get("buffers")) == "gpu":
        total = _count(params.get("processes"))  # a CUDA-aware MPI rank per GPU
    if nodes is None and on_gpu and total and _count(per_node):
        # `per_node` GPUs on a node (fewer on one node if the point has fewer), and the parameter
        # servers of a parameter-server mode in the same slots (TFoS: an executor each)
        servers = _count(params.get("parameter_servers")) or (1 if params.get("mode") == "parameter server" else 0)
        nodes = -(-(total + servers) // _count(per_node))
        per_node = min(_count(per_node), total)
    return {"nodes": nodes, "per_node": _count(per_node) if on_gpu and nodes else None, "gpus": total}


def size_missing(scale: dict, point: dict, cluster) -> list[str]:
    """What a point asks of the inventory's size (point_size) that it lacks."""
    size = point_size(scale, point)
    workers = cluster.members("workers")
    gpu_names = set(cluster.groups.get("gpu", ()))
    gpus = {h.name: int(h.hardware.get("gpus") or 0) if h.name in gpu_names else 0 for h in workers}
    out = []
    nodes, per_node, total = size["nodes"], size["per_node"], size["gpus"]
    if nodes and nodes > len(workers):
        out.append(f"needs {nodes} worker nodes: the inventory has {len(workers)} in group workers")
    if per_node:
        fit = [name for name, n in gpus.items() if n >= per_node]
        if len(fit) < nodes:
            out.append(f"needs {nodes} worker nodes with {per_node} GPU(s) each: the inventory "
                       f"declares {len(fit)} ({', '.join(fit) or 'none'})")
    if total and total > sum(gpus.values()):
        out.append(f"needs {total} GPUs: the inventory's workers declare {sum(gpus.values())}")
    return out


def launcher_missing(stack_name: str) -> list[str]:
    """Why the project cannot launch this stack yet; empty if its module has a launcher."""
    from dlobd import stacks

    try:
        module = stacks.get(stack_name)
    except (KeyError, ImportError, ValueError) as exc:
        return [f"stack {stack_name!r} is not available: {exc}"]
    return [] if hasattr(module, "launch") else [f"stack {stack_name!r} has no launcher yet"]


def plan_spec(spec, scale_name: str, runs_dir=None) -> dict:
    """{'runnable': n points, 'blocked': {point_id: reasons}, 'reason': whole-scale reason}.

    With `runs_dir` each point is also dry-run through its launcher (runs.launch, nothing run
    or written), so what the launcher itself lacks, or a parameter it cannot use, blocks it too."""
    try:
        scale = spec.scale(scale_name)
    except KeyError as exc:
        return {"runnable": 0, "points": 0, "blocked": {}, "reason": str(exc)}
    if not scale.get("runnable", True):
        return {"runnable": 0, "points": 0, "blocked": {},
                "reason": scale.get("reason", "marked not runnable")}
    whole = missing(scale.get("needs"))
    points = spec.points(scale_name)
    if runs_dir is not None:
        from dlobd import runs

        results = {pid: runs.launch(spec.data, scale_name, p, runs_dir, dry_run=True) for pid, p in points}
        blocked = {pid: [r.reason] for pid, r in results.items() if r.status != "dry run"}
        return {"runnable": len(points) - len(blocked), "points": len(points), "blocked": blocked,
                "reason": "; ".join(whole) if len(blocked) == len(points) and whole else None}
    axis = spec.data.get("stack_axis")
    blocked = {pid: point_missing(scale, p) + launcher_missing(
                   str(p[axis]) if axis and axis in p else spec.stack(scale_name))
               for pid, p in points}
    blocked = {k: v for k, v in blocked.items() if v}
    if whole:
        return {"runnable": 0, "points": len(points), "blocked": blocked, "reason": "; ".join(whole)}
    return {"runnable": len(points) - len(blocked), "points": len(points), "blocked": blocked,
            "reason": None}


# ---------------------------------------------------------------- node-hour estimates

# Metrics that are a run's whole time, so a number the paper states for them is the time of
# its point.
RUN_TIMES = ("end_to_end_s", "train_time_s", "wall_clock_s")


def _stated_time(spec, scale: dict, point: dict) -> tuple[float | None, str]:
    """(seconds one run of the point takes, where that comes from) or (None, why unknown)."""
    from dlobd.spec import point_id

    def at_point(at: dict) -> bool:
        return all(point_id({k: point[k]}) == point_id({k: v}) for k, v in at.items() if k in point)

    metric = spec.data["metric"]["name"]
    for pv in scale.get("paper_values") or []:
        if pv.get("as") or pv.get("bound") or not at_point(pv["at"]):
            continue
        if "wall_clock_s" in pv["at"] and "wall_clock_s" not in point:
            # a value reached at a stated time (e.g. 70% accuracy at 2,132 s): the run is no shorter
            return float(pv["at"]["wall_clock_s"]), f"stated time to the value ({pv['where']}), a lower bound"
        if pv.get("metric", metric) in RUN_TIMES and not (set(pv["at"]) - set(point)):
            return float(pv["value"]), f"stated ({pv['where']})"
    fixed = scale.get("fixed") or {}
    if _count(fixed.get("duration_s")) and _count(fixed.get("repeats")):
        seconds = (float(fixed.get("warmup_s") or 0) + float(fixed["duration_s"])) * int(fixed["repeats"])
        return seconds, "the benchmark's own (warm-up + duration) x repeats"
    return None, "the paper states no time for this point (only ratios, rates or sizes)"


def _point_nodes(spec, scale: dict, point: dict) -> int | None:
    """The hosts one run of the point occupies, as the spec gives them."""
    params = {**(scale.get("fixed") or {}), **point}
    for key in ("nodes", "worker_nodes"):
        if _count(params.get(key)):
            return _count(params[key])
    if spec.data.get("stack") == "grpcbench":
        return 2  # the benchmark's servers on one host, its workers on another
    if _count(params.get("workers")):
        return _count(params["workers"]) + (_count(params.get("parameter_servers")) or 0)
    return point_size(scale, point)["nodes"]


def node_hours(spec, scale_name: str = "paper") -> dict:
    """An estimate of the node-hours one run of every point of a scale takes: the stated or
    benchmark-given time of each point x the nodes it occupies (epochs are inside the stated
    whole-run times). {'node_hours': sum over the points with both known, 'known': n,
    'points': n, 'unknown': sorted reasons for the others}."""
    try:
        scale = spec.scale(scale_name)
    except KeyError:
        return {"node_hours": 0.0, "known": 0, "points": 0, "unknown": [f"no {scale_name} scale"]}
    if not scale.get("runnable", True):
        return {"node_hours": 0.0, "known": 0, "points": 0,
                "unknown": [scale.get("reason", "marked not runnable")]}
    total, known, unknown = 0.0, 0, set()
    points = spec.points(scale_name)
    for _, point in points:
        seconds, why = _stated_time(spec, scale, point)
        nodes = _point_nodes(spec, scale, point)
        if seconds is None:
            unknown.add(why)
        elif nodes is None:
            unknown.add("the spec gives no node count for the point")
        else:
            total += seconds * nodes / 3600
            known += 1
    return {"node_hours": total, "known": known, "points": len(points), "unknown": sorted(unknown)}


def describe_node_hours(estimate: dict) -> str:
    if not estimate["known"]:
        return "estimate: unknown (" + "; ".join(estimate["unknown"]) + ")"
    text = (f"estimate: {estimate['node_hours']:.2f} node-hours for {estimate['known']} of "
            f"{estimate['points']} points")
    if estimate["unknown"]:
        text += "; the others unknown: " + "; ".join(estimate["unknown"])
    return text


def register(parser) -> None:
    parser.add_argument("--scale", default="local", help="scale to plan (default: local)")
    parser.add_argument("--root", default=str(provenance.PROJECT_ROOT),
                        help="project root holding experiments/")
    parser.add_argument("--quiet", action="store_true", help="only the per-experiment lines")
    parser.add_argument("--inventory", help="judge the cluster of this Ansible inventory (its "
                        "declared hardware and software paths) instead of this machine")
    parser.add_argument("--prefix", help="with --inventory: every host's dlobd_prefix")


def run(args) -> int:
    from dlobd import dryrun, inventory
    from dlobd import spec as dspec

    specs = dspec.load_all(args.root)
    if not specs:
        print(f"no experiment specs under {args.root}/experiments")
        return 1
    try:
        with dryrun.using(args):
            return _report(args, specs)
    except inventory.InventoryError as exc:
        print(f"dlobd plan: {exc}", file=sys.stderr)
        return 2


def _report(args, specs) -> int:
    cluster = provenance.inventory()
    where = (f"inventory {cluster.source}, launch host {cluster.launch_host}, prefix {cluster.prefix}"
             if cluster else f"prefix {provenance.prefix()}")
    if not args.quiet and cluster:
        print(f"settings in effect on {cluster.launch_host}:")
        for name, (value, origin) in cluster.in_effect.items():
            print(f"  {name} = {json.dumps(value)}  <- {origin or 'default (role dlobd)'}")
        print()
    if not args.quiet:
        print(f"capabilities of this cluster ({where}):")
        for name, (present, why) in capabilities().items():
            print(f"  {'yes' if present else 'no ':3}  {name:18} {why}")
        print()
    # with an inventory every point goes through its launcher too (a dry run: nothing is written)
    runs_dir = provenance.PROJECT_ROOT / "data" / "runs" if cluster else None
    n_ok = 0
    lines = []
    for eid, spec in sorted(specs.items()):
        if spec.data.get("data_from"):
            lines.append(f"  {'(same data)':13} {eid}: drawn from the runs of {spec.data['data_from']}")
            continue
        p = plan_spec(spec, args.scale, runs_dir)
        reasons = "; ".join(sorted({r for rs in p["blocked"].values() for r in rs}))
        if p["reason"] or p["runnable"] == 0:
            lines.append(f"  {'not runnable':13} {eid}: {p['reason'] or reasons}")
        elif p["blocked"]:
            n_ok += 1
            lines.append(f"  {'partly':13} {eid}: {p['runnable']} of {p['points']} points; "
                         f"the others: {reasons}")
        else:
            n_ok += 1
            lines.append(f"  {'runnable':13} {eid}: {p['points']} point(s)")
        if spec.runs_from(args.scale):
            lines.append(f"  {'(same runs)':13} {eid}: its points are those of {spec.runs_from(args.scale)}, run once")
        if args.scale == "paper":
            lines.append(f"  {'':13} node-hours {describe_node_hours(node_hours(spec, 'paper'))}")
    owners = sum(1 for s in specs.values() if not s.data.get("data_from"))
    print(f"scale {args.scale}: {n_ok} of {owners} experiments with runs of their own can run here")
    stated = sum(1 for s in specs.values() if s.paper_values())
    print(f"paper values: {stated} of {len(specs)} specs carry numbers their paper states "
          "(slide charts through the paper figure they repeat)")
    print("\n".join(lines))
    return 0
