from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class TfCnnBenchmarks(Package):
    """tf_cnn_benchmarks (tensorflow/benchmarks): the CNN training benchmark the RDMA TensorFlow
    paper ran (ResNet, VGG, Inception with synthetic ImageNet data)."""

    homepage = "https://github.com/tensorflow/benchmarks"
    git = "https://github.com/tensorflow/benchmarks.git"
    license("Apache-2.0")

    # NO COMMIT FOUND FROM HERE: GitHub cannot be reached from the machine that wrote this
    # recipe; the branch for TF 1.x-era releases is named (a branch is not a checksum): replace
    # it with a commit before relying on it.
    version("cnn_tf_v1.15_compatible", branch="cnn_tf_v1.15_compatible")

    depends_on("python", type="run")
    depends_on("py-tensorflow", type="run")

    def install(self, spec, prefix):
        install_tree("scripts/tf_cnn_benchmarks", prefix.tf_cnn_benchmarks)
