from spack_repo.builtin.build_systems.cuda import CudaPackage
from spack_repo.builtin.build_systems.makefile import MakefilePackage

from spack.package import *


class Caffeonspark(MakefilePackage, CudaPackage):
    """CaffeOnSpark (Yahoo): Caffe training on Spark executors, with its caffe-public submodule
    (yahoo/caffe). Needs Java 7/8 (javah) and Spark 1.6/2.0."""

    homepage = "https://github.com/yahoo/CaffeOnSpark"
    git = "https://github.com/yahoo/CaffeOnSpark.git"
    license("Apache-2.0")

    # the last code commit, the one the DLoBD paper's era ran; caffe-public is yahoo/caffe@fc0a02e
    version("19df500", commit="19df500abe3f0d09511b6434a0ea0bb52a6e8124", submodules=True)

    variant("cudnn", default=False, description="cuDNN kernels (GPU hosts)", when="+cuda")
    # Caffe's image layers need OpenCV 2/3, which Spack refuses with gcc 12 (the locks' compiler):
    # add +opencv on a cluster whose compiler is older.
    variant("opencv", default=False, description="OpenCV 3 image layers")
    variant(
        "infiniband",
        default=False,
        description="the RDMA model synchronizer (-connection infiniband); without it only "
        "-connection ethernet works",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("java@8", type=("build", "run"))
    depends_on("maven", type="build")
    depends_on("spark@1.6:2.0", type="run")
    depends_on("scala@2.10:2.11", type="build")
    depends_on("protobuf@:3.5")
    depends_on("boost+filesystem+system+thread")
    depends_on("glog")
    depends_on("gflags")
    depends_on("hdf5+cxx~mpi")
    depends_on("leveldb")
    depends_on("lmdb")
    depends_on("snappy")
    depends_on("openblas")
    depends_on("opencv@:3+imgcodecs+imgproc", when="+opencv")
    depends_on("cudnn", when="+cudnn")
    depends_on("rdma-core", when="+infiniband")

    def edit(self, spec, prefix):
        config = "caffe-public/Makefile.config"
        copy("caffe-public/Makefile.config.example", config)
        lines = ["BLAS := open", f"JAVA_HOME := {spec['java'].home}"]
        if spec.satisfies("~opencv"):
            lines.append("USE_OPENCV := 0")
        if spec.satisfies("+cuda"):
            lines.append(f"CUDA_DIR := {spec['cuda'].prefix}")
        else:
            lines.append("CPU_ONLY := 1")
        if spec.satisfies("+cudnn"):
            lines.append("USE_CUDNN := 1")
        # caffe-distri compiles its RDMA synchronizer only with INFINIBAND := 1
        lines.append(f"INFINIBAND := {1 if spec.satisfies('+infiniband') else 0}")
        with open(config, "a") as f:
            f.write("\n".join(lines) + "\n")

    def build(self, spec, prefix):
        make("build")

    def install(self, spec, prefix):
        install_tree("caffe-grid/target", prefix.lib)
        install_tree("caffe-public/distribute", prefix)
        # the JNI libraries the executors load: libcaffedistri.so and liblmdbjni.so
        install_tree("caffe-distri/distribute/lib", prefix.lib)
