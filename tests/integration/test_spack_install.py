"""A real `spack install` with the pinned Spack, of what the package registries can feed here
(TensorFlowOnSpark's PyPI wheel, BigDL's jars from their PyPI wheels, mpi4py built from its PyPI
sdist against the MPI, tf-grpc-bench and hr-reduce from the checkout), with Debian's compilers,
MPI, gRPC, CMake, Python and Java as externals; then
site.yml with dlobd_install_method=spack for those components on the local inventory into a
prefix of its own, the smoke tests passing, and a rerun changing nothing.

Left to the registry method in this test: Hadoop (Apache's tarballs are not reachable here; Maven
Central has only its jars) and TensorFlow (Spack builds it from source with Bazel). Spark comes
into the Spack install only as BigDL's run dependency (3.5.9 from pyspark's 300 MB sdist on
PyPI); the cluster runs the registry method's Spark.

`make test-spack` runs it (several minutes: one concretization, the installs, two provisionings).
SPACK_BUILD: the harness's build folder (its caches and repo indexes are reused); installs go into
a temporary Spack install tree.
"""

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import Provisioned, free_ports

from dlobd.execution import spack as harness

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(os.environ.get("DLOBD_TEST_CLUSTER")),
                                 reason="DLOBD_TEST_CLUSTER reuses a running cluster: nothing provisioned here")]

SPECS = ["py-tensorflowonspark@2.2.5", "bigdl@2.4.0", "openmpi@4.1.4", "py-mpi4py@4.1.2", "tf-grpc-bench@checkout",
         "hr-reduce@checkout~cuda"]
FIND_EXTERNALS = ["cmake", "gmake", "pkgconf", "python", "openjdk"]
# Debian 12's gRPC C++, protobuf and Abseil: Spack cannot detect these, so they are declared as a
# site declares its software (dlobd_spack_externals). So is its OpenMPI: the pinned openmpi
# recipe's detection fails on Spack 1.1 ("'Spec' object has no attribute 'cc'", a warning, and no
# external), which would make Spack build OpenMPI from source.
DEBIAN_EXTERNALS = {
    "openmpi": {"buildable": False, "externals": [{"spec": "openmpi@4.1.4", "prefix": "/usr"}]},
    "grpc": {"buildable": False, "externals": [{"spec": "grpc@1.51.1", "prefix": "/usr"}]},
    "protobuf": {"buildable": False, "externals": [{"spec": "protobuf@3.21.12", "prefix": "/usr"}]},
    "abseil-cpp": {"buildable": False, "externals": [{"spec": "abseil-cpp@20220623.1", "prefix": "/usr"}]},
}
# What Spack fetches from PyPI for these roots, with the sha256 its recipes pin: pyspark's sdist
# (Spark 3.5.9's jars, BigDL's run dependency), mpi4py's sdist and the Cython it builds with, and
# the pip, wheel and setuptools that pip-built packages use.
PYPI_SOURCES = [
    ("pyspark==3.5.9", "pyspark-3.5.9.tar.gz", "tar.gz",
     "ea27adc39ddac9413b8951e45aa748cbed6c785971b81386efc41938f6243d93"),
    ("pip==25.1.1", "pip-25.1.1-py3-none-any.whl", "whl",
     "2913a38a2abf4ea6b64ab507bd9e967f3b53dc1ede74b01b0931e1ce548751af"),
    ("wheel==0.45.1", "wheel-0.45.1-py3-none-any.whl", "whl",
     "708e7481cc80179af0e556bbf0cc00b8444c7321e2700b8d8580231d13017248"),
    ("setuptools==80.9.0", "setuptools-80.9.0-py3-none-any.whl", "whl",
     "062d34222ad13e0cc312a4c02d73f059e86a4acbfbdea8f8f76b28c99f306922"),
    ("mpi4py==4.1.2", "mpi4py-4.1.2.tar.gz", "tar.gz",
     "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"),
    ("cython==3.1.3", "cython-3.1.3.tar.gz", "tar.gz",
     "10ee785e42328924b78f75a74f66a813cb956b4a9bc91c44816d089d5934c089"),
]


def source_mirror(base: Path) -> Path:
    """A Spack source mirror holding those files, fetched with pip. The recipes' addresses
    (PyPI's /packages/source/ and /packages/py3/ redirects) are not served on this machine, which
    reaches PyPI only through its index: here as at a site without internet, sources come from a
    mirror."""
    download = base / "pip-download"
    mirror = base / "spack-mirror"
    for requirement, name, extension, sha256 in PYPI_SOURCES:
        # the recipes pin sdists or wheels, whichever pip would prefer
        kind = "--only-binary=:all:" if extension == "whl" else "--no-binary=:all:"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", kind, "-d", str(download),
                        requirement], check=True)
        got = hashlib.sha256((download / name).read_bytes()).hexdigest()
        assert got == sha256, f"{name} from PyPI has sha256 {got}, the recipe pins {sha256}"
        # Spack's content-addressed layout: _source-cache/archive/<2 hex>/<sha256>.<extension>
        archive = mirror / "_source-cache" / "archive" / sha256[:2] / f"{sha256}.{extension}"
        archive.parent.mkdir(parents=True, exist_ok=True)
        (download / name).rename(archive)
    return mirror


@pytest.fixture(scope="module")
def spack_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("dlobd-spack")
    prefix = os.environ.get("DLOBD_PREFIX", str(Path.home() / "dlobd-stack"))
    build = Path(os.environ.get("SPACK_BUILD", f"{prefix}/build/spack"))
    site = Provisioned(prefix=base / "stack", log_dir=base / "logs", ports=free_ports(), extra_vars={
        "dlobd_install_method": "spack",
        "dlobd_hadoop_install_method": "registry",
        "dlobd_spark_install_method": "registry",
        "dlobd_spack_tarballs": os.environ.get(harness.TARBALLS_VAR, ""),
        "dlobd_spack_externals": DEBIAN_EXTERNALS,
        "dlobd_spack_mirror": f"file://{source_mirror(base)}",
        "spack_build": str(build),
        "spack_env_dir": str(base / "spack-env"),
        "spack_install_root": str(base / "spack-opt"),
        "spack_specs": SPECS,
        "spack_find_externals": FIND_EXTERNALS,
    })
    site.log_dir.mkdir()
    try:
        start = time.monotonic()
        site.runs["spack"] = site.playbook("site.yml", args=("--tags", "spack"))
        site.runs["spack_install_s"] = time.monotonic() - start
        assert site.runs["spack"].rc == 0, site.runs["spack"].out[-6000:]
        site.runs["first"] = site.playbook("site.yml")
        assert site.runs["first"].rc == 0, site.runs["first"].out[-6000:]
        site.runs["rerun"] = site.playbook("site.yml")
        yield site
    finally:
        site.playbook("cluster-down.yml")
        for proc in site.daemons().values():
            proc.kill()


def test_spack_installs_what_the_registries_feed(spack_site):
    root = spack_site.extra_vars["spack_install_root"]
    lock = yaml.safe_load((Path(spack_site.extra_vars["spack_env_dir"]) / "spack.lock").read_text())
    names = {s["name"]: s for s in lock["concrete_specs"].values()}
    # the externals are Debian's, the four roots Spack's own builds in the temporary tree
    for name in ("openmpi", "grpc", "cmake", "python"):
        assert names[name].get("external"), name
    for name in ("py-tensorflowonspark", "bigdl", "py-mpi4py", "tf-grpc-bench", "hr-reduce"):
        assert not names[name].get("external"), name
    grpc_bin = (spack_site.prefix / "tf-grpc-bench" / "bin").resolve()
    assert str(grpc_bin).startswith(root) and (grpc_bin / "tf_grpc_bench").is_file()
    hr = (spack_site.prefix / "hr-reduce" / "openmpi").resolve()
    assert str(hr).startswith(root) and (hr / "bin" / "hr_reduce").is_file()
    print(f"\nspack_install_s: {spack_site.runs['spack_install_s']:.1f}")


def test_site_yml_with_spack_passes_the_smoke_tests(spack_site):
    run = spack_site.runs["first"]
    assert run.recap()["failed"] == 0
    assert "HDFS: 4 MiB round trip byte-identical" in run.out
    assert "tensorflowonspark 2.2.5" in run.out
    # BigDL's classes load from the jar Spack installed
    assert f"from file:{spack_site.extra_vars['spack_install_root']}" in run.out
    # mpi4py from Spack's build, linked against the MPI the environment names (Debian's OpenMPI)
    assert "mpi Open MPI v4.1.4" in run.out
    assert f"mpi4py from {spack_site.extra_vars['spack_install_root']}/" in run.out
    mpirun = spack_site.prefix / "bin" / "mpirun"
    assert mpirun.is_symlink() and mpirun.resolve() == Path("/usr/bin/mpirun").resolve()


def test_a_second_run_changes_nothing(spack_site):
    run = spack_site.runs["rerun"]
    assert run.rc == 0, run.out[-5000:]
    assert run.recap()["changed"] == 0, run.changed_tasks()
