from pathlib import Path

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *


class TfGrpcBench(CMakePackage):
    """TF-gRPC-Bench: gRPC micro-benchmarks of TensorFlow's parameter-server traffic, built from
    the DLoBD checkout this repository belongs to (workloads/tf-grpc-bench)."""

    homepage = "https://github.com/dlobd/dlobd"
    # The sources are the checkout's own: nothing to fetch, nothing to checksum.
    has_code = False
    version("checkout")

    depends_on("cxx", type="build")
    depends_on("cmake@3.16:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("grpc")
    depends_on("protobuf")
    depends_on("abseil-cpp")

    # spack-repo/spack_repo/dlobd/packages/tf_grpc_bench/package.py -> the checkout
    root_cmakelists_dir = str(Path(__file__).resolve().parents[5] / "workloads" / "tf-grpc-bench")
