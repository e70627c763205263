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
import shutil
import subprocess
from pathlib import Path

from dlobd import provenance


def _have(pattern: str) -> bool:
    return bool(glob.glob(pattern, recursive=True))


def _home(var: str) -> Path | None:
    value = provenance.stack_setting(var)
    return Path(value) if value else None


@functools.lru_cache(maxsize=1)
def capabilities() -> dict[str, tuple[bool, str]]:
    """capability -> (present, how it was found or why not)."""
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
    caps["bigdl"] = (versions["bigdl"] is not None,
                     f"BigDL jar {versions['bigdl']}" if versions["bigdl"]
                     else f"no bigdl-dllib jar under {pre}")
    tfcnn = glob.glob(str(pre / "**" / "tf_cnn_benchmarks.py"), recursive=True)
    caps["tf_cnn_benchmarks"] = (bool(tfcnn), tfcnn[0] if tfcnn else
                                 "tf_cnn_benchmarks is on no registry: cloned on a cluster")
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
                            "CaffeOnSpark is on no registry: built from git on a cluster "
                            "(role caffeonspark; CAFFEONSPARK_HOME_<DEVICE> unset)")
    cntk = [h for d in devices if (h := provenance.stack_setting(f"CNTK_HOME_{d}"))]
    caps["cntk"] = (bool(cntk), f"CNTK builds: {', '.join(cntk)}" if cntk else
                    "CNTK 2.7 wheels exist only for Python <= 3.7: a site's CNTK 2.x build "
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
                       str(hibench) if hibench else "HiBench not provisioned (HIBENCH_HOME unset)")
    caps["lustre"] = (Path("/proc/fs/lustre").is_dir(), "no Lustre client (/proc/fs/lustre)")
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
    return missing(needs)


def launcher_missing(stack_name: str) -> list[str]:
    """Why the project cannot launch this stack yet; empty if its module has a launcher."""
    from dlobd import stacks

    try:
        module = stacks.get(stack_name)
    except (KeyError, ImportError, ValueError) as exc:
        return [f"stack {stack_name!r} is not available: {exc}"]
    return [] if hasattr(module, "launch") else [f"stack {stack_name!r} has no launcher yet"]


def plan_spec(spec, scale_name: str) -> dict:
    """{'runnable': n points, 'blocked': {point_id: reasons}, 'reason': whole-scale reason}."""
    try:
        scale = spec.scale(scale_name)
    except KeyError as exc:
        return {"runnable": 0, "points": 0, "blocked": {}, "reason": str(exc)}
    if not scale.get("runnable", True):
        return {"runnable": 0, "points": 0, "blocked": {},
                "reason": scale.get("reason", "marked not runnable")}
    whole = missing(scale.get("needs"))
    points = spec.points(scale_name)
    axis = spec.data.get("stack_axis")
    blocked = {pid: point_missing(scale, p) + launcher_missing(
                   str(p[axis]) if axis and axis in p else spec.stack(scale_name))
               for pid, p in points}
    blocked = {k: v for k, v in blocked.items() if v}
    if whole:
        return {"runnable": 0, "points": len(points), "blocked": blocked, "reason": "; ".join(whole)}
    return {"runnable": len(points) - len(blocked), "points": len(points), "blocked": blocked,
            "reason": None}


def register(parser) -> None:
    parser.add_argument("--scale", default="local", help="scale to plan (default: local)")
    parser.add_argument("--root", default=str(provenance.PROJECT_ROOT),
                        help="project root holding experiments/")
    parser.add_argument("--quiet", action="store_true", help="only the per-experiment lines")


def run(args) -> int:
    from dlobd import spec as dspec

    specs = dspec.load_all(args.root)
    if not specs:
        print(f"no experiment specs under {args.root}/experiments")
        return 1
    if not args.quiet:
        print(f"capabilities of this cluster (prefix {provenance.prefix()}):")
        for name, (present, why) in capabilities().items():
            print(f"  {'yes' if present else 'no ':3}  {name:18} {why}")
        print()
    n_ok = 0
    lines = []
    for eid, spec in sorted(specs.items()):
        if spec.data.get("data_from"):
            lines.append(f"  {'(same data)':13} {eid}: drawn from the runs of {spec.data['data_from']}")
            continue
        p = plan_spec(spec, args.scale)
        if p["reason"]:
            lines.append(f"  {'not runnable':13} {eid}: {p['reason']}")
        elif p["blocked"]:
            reasons = "; ".join(sorted({r for rs in p["blocked"].values() for r in rs}))
            if p["runnable"] == 0:
                lines.append(f"  {'not runnable':13} {eid}: {reasons}")
                continue
            n_ok += 1
            lines.append(f"  {'partly':13} {eid}: {p['runnable']} of {p['points']} points; "
                         f"the others: {reasons}")
        else:
            n_ok += 1
            lines.append(f"  {'runnable':13} {eid}: {p['points']} point(s)")
    owners = sum(1 for s in specs.values() if not s.data.get("data_from"))
    print(f"scale {args.scale}: {n_ok} of {owners} experiments with runs of their own can run here")
    stated = sum(1 for s in specs.values() if s.paper_values())
    print(f"paper values: {stated} of {len(specs)} specs carry numbers their paper states "
          "(slide charts through the paper figure they repeat)")
    print("\n".join(lines))
    return 0
