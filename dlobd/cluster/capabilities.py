"""What this cluster can provide: the capabilities a spec's `needs` name, detected, not assumed.

InfiniBand from /sys/class/infiniband, GPUs from /dev/nvidia* and nvidia-smi, the provisioned
software from the prefix ($DLOBD_PREFIX, default ~/dlobd-stack), MPI and the C++ gRPC toolchain
from PATH and pkg-config, a declared cluster's hosts from its inventory; and what a point's
size or network link asks of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dlobd import ROOT, NotRunnable
from dlobd.cluster import fabric, inventory, provenance
from dlobd.spec import networks, point_id

TF_CNN_BENCHMARKS_SCRIPT = Path("scripts") / "tf_cnn_benchmarks" / "tf_cnn_benchmarks.py"
TF_CNN_BENCHMARKS_WHERE = ("tf_cnn_benchmarks is on no registry: set TF_CNN_BENCHMARKS_HOME "
                "(dlobd_stack_settings) to a checkout of github.com/tensorflow/benchmarks; the "
                "role tf_cnn_benchmarks clones it there at the pinned commit")

def tf_cnn_benchmarks_script() -> Path | None:
    """The script of the checkout TF_CNN_BENCHMARKS_HOME names, or None without one."""
    home = provenance.stack_setting("TF_CNN_BENCHMARKS_HOME")
    return Path(home) / TF_CNN_BENCHMARKS_SCRIPT if home else None


def _have(pattern: str) -> bool:
    return bool(glob.glob(pattern, recursive=True))


def _home(var: str) -> Path | None:
    value = provenance.stack_setting(var)
    return Path(value) if value else None


# hr-reduce's GPU build (S-Caffe's reduce on device buffers) and where its compiler is looked for
CUDA_NEEDS = ("the CUDA toolkit (nvcc, the CUDA runtime) and a CUDA-aware MPI: MVAPICH2-GDR "
              "(its CUDA support on at run time) or an Open MPI built with CUDA")
CUDA_HOMES = ("CUDAToolkit_ROOT", "CUDA_HOME", "CUDA_PATH")
NO_NVCC = (f"no nvcc in $CUDACXX, on PATH, or under ${', $'.join(CUDA_HOMES)} or /usr/local/cuda")


def find_nvcc() -> str | None:
    """The CUDA compiler: $CUDACXX, nvcc on PATH, else under $CUDAToolkit_ROOT, $CUDA_HOME,
    $CUDA_PATH or /usr/local/cuda."""
    if os.environ.get("CUDACXX"):
        return shutil.which(os.environ["CUDACXX"])
    homes = [os.environ[v] for v in CUDA_HOMES if os.environ.get(v)] + ["/usr/local/cuda"]
    return shutil.which("nvcc") or next(
        (str(Path(h) / "bin" / "nvcc") for h in homes if os.access(Path(h) / "bin" / "nvcc", os.X_OK)), None)


def capabilities() -> dict[str, tuple[bool, str]]:
    """capability -> (present, how it was found or why not): of the inventory in use
    (provenance.inventory_in_use), else detected on this machine; inside `rehearsing`, with the
    site's stand-ins for what it lacks (standins_in_effect)."""
    cluster = provenance.inventory()
    caps = inventory_capabilities(cluster) if cluster is not None else local_capabilities()
    caps = {**caps, **image_left_out()}
    rehearsal = _rehearsal.get()
    if rehearsal is not None:
        caps = {**caps, **{name: (True, f"{STANDIN_WORDS} {how}")
                           for name, how in standins_in_effect(caps, rehearsal.stack).items()}}
    return caps


# What a rehearsal may count as present where the site declares a stand-in for it
# (dlobd_rehearsal_standins, exported as DLOBD_REHEARSAL_STANDINS): IPoIB's placement, which an
# interface of that name and address gives; a GPU's placement, which a CPU process on a worker of
# group gpu gives, for the stacks whose launchers lay a GPU point out on CPU (STANDIN_STACKS);
# never RDMA, CUDA or software, which nothing stands in for.
STANDINS = ("infiniband", "gpu")
# capability -> the only stacks a rehearsal may count its stand-in for (TensorFlowOnSpark: its TF
# nodes on the gpu group's NodeManagers, `--num-gpus 0`); one not named here, for every stack
STANDIN_STACKS = {"gpu": ("tensorflowonspark",)}
STANDIN_SETTING = "DLOBD_REHEARSAL_STANDINS"
STANDIN_WORDS = "stand-in for a rehearsal (dlobd_rehearsal_standins):"


@dataclasses.dataclass
class _Rehearsal:
    stack: str             # the stack whose point is rehearsed
    used: dict[str, str]   # capability -> what stood in for it, for each stand-in a check counted


_rehearsal: contextvars.ContextVar[_Rehearsal | None] = contextvars.ContextVar("rehearsal", default=None)


@contextlib.contextmanager
def rehearsing(stack: str):
    """Inside the block, capabilities() counts the site's rehearsal stand-ins for `stack` as
    present; yields the stand-ins the block's checks counted (capability -> what stood in),
    filled as they ask."""
    used: dict[str, str] = {}
    token = _rehearsal.set(_Rehearsal(stack, used))
    try:
        yield used
    finally:
        _rehearsal.reset(token)


def declared_standins() -> dict[str, str]:
    """capability -> what stands in for it, as the site declares (DLOBD_REHEARSAL_STANDINS); raises
    NotRunnable naming the setting where it is not a mapping of STANDINS to words."""
    text = provenance.stack_setting(STANDIN_SETTING)
    if not text:
        return {}
    try:
        declared = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotRunnable(f"{STANDIN_SETTING} is not JSON ({exc}): dlobd_rehearsal_standins gives it") from None
    if not isinstance(declared, dict) or not all(isinstance(v, str) and v.strip() for v in declared.values()):
        raise NotRunnable(f"{STANDIN_SETTING}: expected a mapping of capability to words, found {text}")
    unknown = sorted(set(declared) - set(STANDINS))
    if unknown:
        raise NotRunnable(f"{STANDIN_SETTING} names {', '.join(unknown)}: only {', '.join(STANDINS)} may stand in")
    return declared


def standins_in_effect(caps: dict[str, tuple[bool, str]], stack: str) -> dict[str, str]:
    """The declared stand-ins for capabilities that `caps` lacks and `stack` may count
    (STANDIN_STACKS): what a rehearsal of its points counts."""
    return {name: how for name, how in declared_standins().items()
            if not caps.get(name, (False,))[0] and stack in STANDIN_STACKS.get(name, (stack,))}


def standing_in(capability: str) -> str | None:
    """What stands in for `capability` in the rehearsal under way, counted as used (the run's label
    `standin`); None outside a rehearsal, or where the cluster has it or nothing stands in."""
    if _rehearsal.get() is None:
        return None
    return _counted(capability, *capabilities().get(capability, (False, "")))


def _counted(capability: str, present: bool, why: str) -> str | None:
    """What stood in for `capability` where `why` (its capabilities() entry) says a stand-in
    gives it, counted as used by the rehearsal under way; None otherwise."""
    rehearsal = _rehearsal.get()
    if rehearsal is None or not (present and why.startswith(STANDIN_WORDS)):
        return None
    rehearsal.used[capability] = why.removeprefix(STANDIN_WORDS).strip()
    return rehearsal.used[capability]


# where the cpu-mkl build's MKL comes from (role caffeonspark)
MKL_SOURCES = ("; its MKL: Intel's PyPI wheels, which the role installs into the prefix (caffeonspark_mkl_packages), "
               "or a site's MKL (caffeonspark_mkl_root)")


def caffeonspark_setting(kind: str, device: str) -> str:
    """The stack setting the caffeonspark role records per device: CAFFEONSPARK_HOME_<DEVICE>,
    where the build is, or CAFFEONSPARK_LEFT_OUT_<DEVICE>, why the role left it out."""
    return f"CAFFEONSPARK_{kind}_" + device.upper().replace("-", "_")


def caffeonspark_left_out(device: str) -> str | None:
    """Why the caffeonspark role left the device's build out (cpu-mkl without its MKL), as the
    reason its points are not runnable; None where it did not."""
    why = provenance.stack_setting(caffeonspark_setting("LEFT_OUT", device))
    return f"no CaffeOnSpark build for {device}: the caffeonspark role left it out: {why}" if why else None


# Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) takes a CPU newer than it knows for a Prescott and runs
# its SSE3 kernels there, slower than its AVX2 ones (docs/caffeonspark-port.md). The papers'
# Broadwell Xeons ran OpenBLAS's Haswell (AVX2) kernels: those stand in where the CPU has AVX2
# and FMA. A site's own OPENBLAS_CORETYPE is kept as it is.
OPENBLAS_FALLBACK_CORE = "Prescott"
OPENBLAS_PAPER_CORE = "Haswell"
_OPENBLAS_REPORT = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
                    "l.openblas_get_config.restype = l.openblas_get_corename.restype = ctypes.c_char_p; "
                    "print(l.openblas_get_config().decode()); print(l.openblas_get_corename().decode())")


@functools.lru_cache(maxsize=1)
def openblas_kernels() -> dict:
    """This host's OpenBLAS (libopenblas.so.0), for the CaffeOnSpark cpu-openblas executors it
    runs: {'version', 'core': the kernels it picks by itself, 'coretype': the OPENBLAS_CORETYPE
    they get (None: none), 'why'}; {} where no libopenblas.so.0 loads."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    proc = subprocess.run([sys.executable, "-c", _OPENBLAS_REPORT], capture_output=True, text=True, env=env)
    lines = proc.stdout.split()
    if proc.returncode != 0 or len(lines) < 2:
        return {}
    version, core = " ".join(lines[:2]), lines[-1]
    if os.environ.get("OPENBLAS_CORETYPE"):
        return {"version": version, "core": core, "coretype": os.environ["OPENBLAS_CORETYPE"],
                "why": "OPENBLAS_CORETYPE of the environment"}
    if core == OPENBLAS_FALLBACK_CORE and {"avx2", "fma"} <= set(provenance.cpu_isa() or ()):
        return {"version": version, "core": core, "coretype": OPENBLAS_PAPER_CORE,
                "why": f"it takes this AVX2 CPU for a {core}: the papers' Broadwell Xeons ran its "
                       f"{OPENBLAS_PAPER_CORE} kernels"}
    return {"version": version, "core": core, "coretype": None, "why": "the kernels it picks"}


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
    nvcc = find_nvcc()
    caps["cuda"] = (nvcc is not None, f"nvcc: {nvcc}; the MPI's CUDA-awareness is asked at run time"
                    if nvcc else f"needs {CUDA_NEEDS}: {NO_NVCC}")

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
        # in the site's TF 1.x build (DLOBD_TF_RDMA_PYTHON); native TensorFlow in that build, else
        # in TensorFlowOnSpark's Python (gRPC only); the launchers say per point which one it needs
        for name, settings in (("tensorflowonspark", (provenance.TFOS_PYTHON, "DLOBD_TF_RDMA_PYTHON")),
                               ("tensorflow", ("DLOBD_TF_RDMA_PYTHON", provenance.TFOS_PYTHON))):
            given = [(s, p) for s in settings if (p := _home(s))]
            found = [f"{s} {p}" for s, p in given if p.is_file()]
            caps[name] = ((bool(found), f"{name} in " + ", ".join(found)) if found else
                          (False, f"the paper profile's {name} runs in the Python "
                                  f"{' or '.join(settings)} names (dlobd_stack_settings): "
                                  + ("; ".join(f"{s} {p}: no such file" for s, p in given) or "unset")))
    caps["bigdl"] = (versions["bigdl"] is not None,
                     f"BigDL jar {versions['bigdl']}" if versions["bigdl"]
                     else f"no bigdl-dllib jar under {pre}")
    tfcnn = tf_cnn_benchmarks_script()
    caps["tf_cnn_benchmarks"] = (bool(tfcnn and tfcnn.is_file()), str(tfcnn) if tfcnn else
                                 TF_CNN_BENCHMARKS_WHERE)
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
        device = d.lower().replace("_", "-")
        home = provenance.stack_setting(caffeonspark_setting("HOME", device))
        caps[f"caffeonspark-{device}"] = (bool(home), home or caffeonspark_left_out(device) or (
            f"no CaffeOnSpark build for {device} (role caffeonspark, caffeonspark_builds: [{device}]; "
            f"{caffeonspark_setting('HOME', device)} unset)" + (MKL_SOURCES if device == "cpu-mkl" else "")))
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
    linked = provenance.stack_setting("DLOBD_EMULATED_NETWORK")
    label = provenance.stack_setting("DLOBD_EMULATED_LINK")
    for value in networks.emulated_values():
        caps[value] = (value == linked, f"the hosts are linked by {label}" if label
                       else "no emulated link (hosts of `make emulated-up` with that tier)")
    return caps


# What site.yml installs on every host of an inventory, at either profile.
PROVISIONED = ("hadoop", "spark", "tensorflow", "tensorflowonspark", "bigdl", "mpi", "grpc", "grpc-cpp")
# What an image leaves out where its build skips a role's tag (install.yml --skip-tags in its
# definition), which the apptainer method's hosts then lack: tag -> {capability: the software}.
CONTAINERS = ROOT / "containers"
LEFT_OUT_BY_TAG = {"mpi": {"mpi": "MPI (and hr_reduce)"},
                   "grpc_bench": {"grpc-cpp": "TF-gRPC-Bench"}}


def image_left_out() -> dict[str, tuple[bool, str]]:
    """capability -> (False, why) for what the paper profile's image leaves out where the
    apptainer method runs it (its definition's skipped tags, LEFT_OUT_BY_TAG); {} otherwise."""
    if (provenance.stack_setting("DLOBD_PROFILE"), provenance.stack_setting("DLOBD_INSTALL_METHOD")) != (
            "paper", "apptainer"):
        return {}
    definition = CONTAINERS / f"paper-{provenance.stack_setting('DLOBD_PAPER_ENV')}.def"
    return {name: (False, f"the image of {definition.relative_to(ROOT)} leaves {what} out (its build skips the "
                          f"role's tag {tag}): its points run on the modern profile, or on the paper profile's "
                          "registry or spack method")
            for tag in image_skipped_tags(definition) for name, what in LEFT_OUT_BY_TAG.get(tag, {}).items()}


def image_skipped_tags(definition: Path) -> tuple[str, ...]:
    """The role tags an image definition's build skips (its install.yml --skip-tags); () for a
    definition that skips none or is absent."""
    text = definition.read_text() if definition.is_file() else ""
    found = re.search(r"--skip-tags[ =]([\w,]+)", text)
    return tuple(found[1].split(",")) if found else ()


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
    """capability -> (present, why) of an inventory's cluster (dlobd.cluster.inventory.Cluster): the
    hardware its hosts declare (dlobd_hardware), the software provisioning installs, and the
    paths it gives (dlobd_stack_settings). Nothing on the hosts is checked from here."""
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
    caps["cuda"] = (caps["gpu"][0], f"{CUDA_NEEDS}, on the hosts of group gpu: the hr_reduce role builds "
                                    "with hr_reduce_nvcc (default /usr/local/cuda/bin/nvcc); not checked "
                                    "from here" if gpu_hosts else caps["gpu"][1])
    profile = cluster.settings.get("DLOBD_PROFILE")
    caps["paper-profile"] = (profile == "paper", f"dlobd_profile is {profile}"
                             + ("" if profile == "paper" else ", not paper"))
    for name in PROVISIONED:
        caps[name] = (True, f"installed by site.yml ({cluster.settings.get('DLOBD_INSTALL_METHOD')} "
                            "method); not checked from here")
    if profile == "paper":
        # not in the stacks' Python there: TensorFlowOnSpark's points other than RDMA run in the
        # Python DLOBD_TFOS_PYTHON names (where the inventory names none on the spack or registry
        # method, role python_env exports the wrapper of the paper image's Python in its place),
        # its RDMA points in the site's TF 1.x build; native TensorFlow runs in that build where it
        # is given, else in TensorFlowOnSpark's Python (gRPC only)
        tfos, rdma = cluster.settings.get(provenance.TFOS_PYTHON), cluster.settings.get("DLOBD_TF_RDMA_PYTHON")
        if tfos and cluster.role_settings.get("python_env_tfos_from_image") is True:
            image = cluster.role_settings["python_env_tfos_image"] or (
                f"\"\": the controller's build of containers/paper-{cluster.in_effect['dlobd_paper_env'][0]}.def")
            tfos_where = (f"the paper image's Python ({provenance.TFOS_PYTHON}={tfos}; python_env_tfos_image "
                          f"{image}, built or fetched by the preflight)")
        elif tfos:
            tfos_where = f"{provenance.TFOS_PYTHON}={tfos} (dlobd_stack_settings)"
        else:
            tfos_where = None
        rdma_where = f"DLOBD_TF_RDMA_PYTHON={rdma} (dlobd_stack_settings)" if rdma else None
        unset = "not in the inventory's dlobd_stack_settings"
        # one capability, yes or no together: each launcher names the Python a point lacks
        caps["tensorflowonspark"] = (bool(tfos or rdma), "the paper profile's TensorFlowOnSpark runs its points in "
                                     + (tfos_where or f"the Python {provenance.TFOS_PYTHON} names ({unset})")
                                     + (f", those of network rdma in {rdma_where}" if rdma else "")
                                     + "; not checked from here")
        caps["tensorflow"] = (bool(tfos or rdma), "the paper profile's native TensorFlow 1.x runs in "
                              + (f"{rdma_where}, every point" if rdma else f"{tfos_where}, gRPC only" if tfos
                                 else f"the Python DLOBD_TF_RDMA_PYTHON or {provenance.TFOS_PYTHON} names (both {unset})")
                              + "; not checked from here")
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
    for name in cluster.assumed:
        caps[name] = (True, "assumed present, to find what else a point needs")
    return caps


# The data sets role datasets can install (its tasks/<name>.yml): a point on one of them needs it
# among the cluster's datasets_names. Others are made by the workloads themselves (synthetic
# ImageNet-shaped images, payloads) or named in prose.
ROLE_DATASETS = ("mnist", "fashion-mnist", "cifar10-synthetic", "cifar10")


def dataset_missing(name) -> str | None:
    """Why the data set `name` is not on this cluster: one of ROLE_DATASETS that its datasets role
    did not install (datasets_names, which dlobd-env.sh exports as DLOBD_DATASETS); None where it
    is, where the role does not install it, and where the prefix does not say (provisioned before
    it did: the launcher then looks)."""
    installed = provenance.stack_setting("DLOBD_DATASETS")
    if name not in ROLE_DATASETS or installed is None or name in installed.split():
        return None
    return (f"needs data set {name}: the datasets role installed {', '.join(installed.split()) or 'none'} "
            f"(datasets_names; role datasets says where each comes from)")


# Data sets no package registry carries: the datasets role downloads them (datasets_source: download).
DOWNLOADED_DATASETS = ("cifar10",)


def dataset_settings(name: str, cluster) -> dict:
    """The inventory settings that give an inventory's cluster the data set `name`."""
    return {"datasets_names": inventory.addition(cluster, "datasets_names", [name]),
            **({"datasets_source": "download"} if name in DOWNLOADED_DATASETS else {})}


def missing(needs) -> list[str]:
    """Reasons for every capability in `needs` this cluster lacks."""
    return [why for _, why in lacking(needs)]


def lacking(needs) -> list[tuple[str, str]]:
    """(capability, reason) for every capability in `needs` this cluster lacks."""
    caps = capabilities()
    out = []
    for need in needs or []:
        present, why = caps.get(need, (False, "unknown capability"))
        if not present:
            out.append((need, f"needs {need}: {why}"))
        _counted(need, present, why)
    return out


def unmet(scale: dict, point: dict) -> list[tuple[str | None, str]]:
    """(capability, reason) for what one point lacks: the capabilities of the scale's `needs` and
    matching `point_needs`, then (capability None) the sizes the inventory in use lacks."""
    needs = list(scale.get("needs") or [])
    for entry in scale.get("point_needs") or []:
        # compare through point ids so 2 and 2.0 (or 'gpu' and gpu) match alike
        if all(point_id({k: point.get(k)}) == point_id({k: v}) for k, v in entry["at"].items()):
            needs.extend(n for n in entry["needs"] if n not in needs)
    cluster = provenance.inventory()
    return lacking(needs) + [(None, why) for why in (size_missing(scale, point, cluster) if cluster else [])]


def point_missing(scale: dict, point: dict) -> list[str]:
    """Missing capabilities of one point: the scale's `needs` and matching `point_needs`."""
    return [why for _, why in unmet(scale, point)]


def settings_for(capability: str, cluster) -> dict:
    """The inventory settings (variable -> whole value) that give an inventory's cluster the
    `capability`; {} for hardware, and for software no setting gives."""
    if capability in PAPER_ROLES:
        return {"dlobd_paper_stacks": inventory.addition(cluster, "dlobd_paper_stacks", [PAPER_ROLES[capability]]),
                **({} if cluster.settings.get("DLOBD_PROFILE") == "paper" else {"dlobd_profile": "paper"})}
    if capability == "paper-profile":
        return {"dlobd_profile": "paper"}
    setting = {**SOFTWARE_SETTINGS, "tensorflow": provenance.TFOS_PYTHON,
               "tensorflowonspark": provenance.TFOS_PYTHON}.get(capability)
    return inventory.settings_giving(setting, cluster) if setting else {}


def whole_count(value) -> int | None:
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
    nodes = next((n for n in (whole_count(params.get(k)) for k in ("nodes", "worker_nodes")) if n), None)
    device = str(params.get("device", params.get("worker_device", "")))
    on_gpu = "gpu" in device or (not device.startswith("cpu") and "gpu" in (scale.get("needs") or []))
    per_node = params.get("gpus_per_node", params.get("devices_per_node"))
    if isinstance(per_node, dict):  # per workload, e.g. {cifar10: 2, mnist: 1}
        per_node = per_node.get(str(params.get("workload")))
    total = whole_count(params.get("gpus"))
    if total is None and str(params.get("buffers")) == "gpu":
        total = whole_count(params.get("processes"))  # a CUDA-aware MPI rank per GPU
    if nodes is None and on_gpu and total and whole_count(per_node):
        # `per_node` GPUs on a node (fewer on one node if the point has fewer), and the parameter
        # servers of a parameter-server mode in the same slots (TFoS: an executor each)
        servers = whole_count(params.get("parameter_servers")) or (1 if params.get("mode") == "parameter server" else 0)
        nodes = -(-(total + servers) // whole_count(per_node))
        per_node = min(whole_count(per_node), total)
    return {"nodes": nodes, "per_node": whole_count(per_node) if on_gpu and nodes else None, "gpus": total}


def size_missing(scale: dict, point: dict, cluster) -> list[str]:
    """What a point asks of the inventory's size (point_size) that it lacks. In a rehearsal whose
    CPU processes stand in for GPUs (standing_in), each worker of group gpu holds as many as the
    point puts on a node."""
    size = point_size(scale, point)
    nodes, per_node, total = size["nodes"], size["per_node"], size["gpus"]
    workers = cluster.members("workers")
    gpu_names = set(cluster.groups.get("gpu", ()))
    standin = (per_node or total) if (per_node or total) and standing_in("gpu") else 0
    gpus = {h.name: (int(h.hardware.get("gpus") or 0) or standin) if h.name in gpu_names else 0 for h in workers}
    out = []
    if nodes and nodes > len(workers):
        out.append(f"needs {nodes} worker nodes: the inventory has {len(workers)} in group workers")
    if per_node:
        fit = [name for name, n in gpus.items() if n >= per_node]
        if len(fit) < nodes:
            out.append(f"needs {nodes} worker nodes with {per_node} GPU(s) each: the inventory "
                       f"{'has' if standin else 'declares'} {len(fit)} ({', '.join(fit) or 'none'})"
                       + (" in group gpu, where CPU processes stand in" if standin else ""))
    if total and total > sum(gpus.values()):
        out.append(f"needs {total} GPUs: the inventory's workers "
                   + (f"have {sum(gpus.values())} in group gpu, where CPU processes stand in" if standin
                      else f"declare {sum(gpus.values())}"))
    return out


# ---------------------------------------------------------------- network links


def network_missing(stack: str, network: str) -> list[str]:
    """Why this cluster cannot give `stack` the `network` path; empty if it can."""
    try:
        return missing(networks.resolve(stack, network).needs)
    except networks.UnknownNetwork as exc:
        return [str(exc)]


def require_network(stack: str, network: str) -> networks.Transport:
    """The stack's path for `network`; NotRunnable naming what this cluster lacks for it."""
    lacking = network_missing(stack, network)
    if lacking:
        raise NotRunnable(f"network {network}: " + "; ".join(lacking))
    return networks.resolve(stack, network)


def worker_addresses(link: networks.Transport, workers: list[str]) -> list[str]:
    """Where `link` reaches `workers` (their cluster addresses, as provenance.workers() lists
    them): an Ethernet link at each one's Ethernet address (dlobd_ethernet_address), any other
    link at the cluster address (IPoIB on an InfiniBand cluster). NotRunnable naming the
    workers without an Ethernet address (on an InfiniBand cluster the cluster address would
    carry an Ethernet point over IPoIB), or without a link of the tier's rate (a 1 Gb/s point
    on 10 Gb/s links would carry the tier's name and measure another link)."""
    if link.address != "ethernet":
        return list(workers)
    cluster = provenance.inventory()
    names = {h.address: h.name for h in cluster.hosts.values()} if cluster else {}
    ethernet = provenance.ethernet_addresses()
    lacking = [w for w in workers if not ethernet.get(w)]
    if lacking:
        raise NotRunnable(
            f"network {link.network}: worker(s) "
            + ", ".join(f"{names[w]} ({w})" if w in names else w for w in lacking)
            + " have no Ethernet address: set dlobd_ethernet_address for them in the inventory "
              "(their cluster address carries the IPoIB and RDMA points)")
    rates = provenance.ethernet_gbps()
    other = [w for w in workers if link.gbps and rates.get(w) != float(link.gbps)]
    if other:
        raise NotRunnable(
            f"network {link.network}: its points need a {link.gbps:g} Gb/s Ethernet link on every worker; "
            + ", ".join(f"{names.get(w, w)} " + (f"declares {rates[w]:g} Gb/s" if w in rates else "declares none")
                        for w in other)
            + " (dlobd_hardware.ethernet_gbps in the inventory: the rate of the link at dlobd_ethernet_address)")
    return [ethernet[w] for w in workers]
