from spack_repo.builtin.build_systems.generic import Package

from spack.package import *

BINARY_DROP = "https://cntk.ai/BinaryDrop"


class Cntk(Package):
    """Microsoft CNTK from its binary release (the BinaryDrop tarballs), as MMLSpark 0.10's
    CNTKLearner runs it: `mpirun ... <prefix>/cntk/bin/cntk configFile=...`.

    This recipe takes the place of builtin's cntk, which builds 2.0 from source and conflicts
    with gcc >= 5. The release's layout is kept under <prefix>/cntk (bin, lib, dependencies/lib),
    the layout the mmlspark role and CNTK's own install script expect. The Python wheels inside
    the release (CPython 2.7, 3.5 and 3.6 only) are not installed: MMLSpark runs the executable.
    """

    homepage = "https://github.com/microsoft/CNTK"
    license("MIT")

    # 2.2 is the release MMLSpark 0.10 pins (its tools/config.sh). Both checksums were not
    # computed here (cntk.ai is unreachable from the machine that wrote this recipe): they are the
    # ones public CNTK 2.2 Dockerfiles check the same two files against with `sha256sum --strict`.
    version(
        "2.2",
        sha256="98236d98259d881d489a13ecf2d6bc5d45df773feddc2db1f302614b6cb02d64",
        url=f"{BINARY_DROP}/CNTK-2-2-Linux-64bit-CPU-Only.tar.gz",
    )

    variant("cuda", default=False, description="the release's GPU build in place of the CPU-only one")

    # Spack fetches one archive per version: the GPU build comes as a resource beside it.
    resource(
        name="cntk-gpu",
        url=f"{BINARY_DROP}/CNTK-2-2-Linux-64bit-GPU.tar.gz",
        sha256="81d2409c1b72e835f941de302d8ce0f21c59c637cf7ff23814ff97a1700e8ddb",
        destination="gpu",
        when="@2.2+cuda",
    )

    # Microsoft's binaries are built for x86_64 Linux against OpenMPI 1.10 (its install script
    # refuses another MPI).
    requires("platform=linux", msg="CNTK's binary release is for Linux only")
    requires("target=x86_64:", msg="CNTK's binary release is for x86_64 only")
    depends_on("openmpi@1.10", type="run")

    def install(self, spec, prefix):
        # the stage's source is the release's top folder `cntk`; the GPU resource has its own
        source = self.stage.source_path
        if spec.satisfies("+cuda"):
            source = join_path(source, "gpu", "cntk")
        install_tree(source, prefix.cntk, ignore=lambda relative: relative == "gpu")
        set_executable(join_path(prefix.cntk, "bin", "cntk"))

    def setup_run_environment(self, env):
        env.prepend_path("PATH", self.prefix.cntk.bin)
        env.prepend_path("LD_LIBRARY_PATH", self.prefix.cntk.lib)
        env.prepend_path("LD_LIBRARY_PATH", join_path(self.prefix.cntk, "dependencies", "lib"))
