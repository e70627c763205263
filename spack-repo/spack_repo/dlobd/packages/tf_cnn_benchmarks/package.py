from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class TfCnnBenchmarks(Package):
    """tf_cnn_benchmarks (tensorflow/benchmarks): the CNN training benchmark the RDMA TensorFlow
    paper ran (ResNet, VGG, Inception with synthetic ImageNet data)."""

    homepage = "https://github.com/tensorflow/benchmarks"
    git = "https://github.com/tensorflow/benchmarks.git"
    license("Apache-2.0")

    # the head of the repository's cnn_tf_v1.15_compatible branch (TF 1.x-era flags), the commit
    # the tf_cnn_benchmarks role clones on the modern profile
    version("aef6daa", commit="aef6daa90a467a1fc7ce8395cd0067e5fda1ecff")
    # the paper profile's (TensorFlow 1.4.0): master of 2017-10-23, the last commit before the
    # script imported tf.contrib.data's interleave_ops, which TensorFlow 1.5 added
    version("d498bb0", commit="d498bb0b97f01310415bd382aaad9a2906f3573e")

    depends_on("python", type="run")
    depends_on("py-tensorflow", type="run")

    def install(self, spec, prefix):
        # the checkout's layout (scripts/tf_cnn_benchmarks/): the prefix is a TF_CNN_BENCHMARKS_HOME
        install_tree("scripts", prefix.scripts)
