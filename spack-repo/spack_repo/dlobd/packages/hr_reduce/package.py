from pathlib import Path

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class HrReduce(CMakePackage, CudaPackage):
    """hr-reduce: the RDMA TensorFlow paper's hierarchical reduce (CC, Bin) against MPI_Reduce,
    built from the DLoBD checkout this repository belongs to (workloads/hr-reduce)."""

    homepage = "https://github.com/dlobd/dlobd"
    # The sources are the checkout's own: nothing to fetch, nothing to checksum.
    has_code = False
    version("checkout")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")
    # +cuda compiles the reduction kernel with nvcc, whose host compiler is the C++ one
    depends_on("cxx", type="build", when="+cuda")

    root_cmakelists_dir = str(Path(__file__).resolve().parents[5] / "workloads" / "hr-reduce")

    def cmake_args(self):
        args = [self.define_from_variant("HR_REDUCE_CUDA", "cuda")]
        if self.spec.satisfies("+cuda"):
            args.append(self.define_cuda_architectures(self))
        return args
