from spack_repo.builtin.build_systems.generic import Package

from spack.package import *


class Mmlspark(Package):
    """MMLSpark 0.10 (Microsoft): the CNTKLearner on Spark 2.2 (Scala 2.11). Installs its jar
    into <prefix>/lib; CNTK is the cntk package."""

    homepage = "https://github.com/Azure/mmlspark"
    # The mmlspark Maven repository (not Maven Central)
    url = "https://mmlspark.azureedge.net/maven/com/microsoft/ml/spark/mmlspark_2.11/0.10/mmlspark_2.11-0.10.jar"
    license("MIT")

    # NO CHECKSUM FOUND FROM HERE: the mmlspark Maven repository cannot be reached from the
    # machine that wrote this recipe. Install with `spack install --no-checksum` after checking
    # the jar against the .sha1 published beside it, or add its sha256 here.
    version("0.10", expand=False)

    depends_on("java@8", type="run")
    depends_on("spark@2.2", type="run")
    # MMLSpark's CNTKLearner runs `mpirun ... cntk`: CNTK 2.2 (the release MMLSpark 0.10 pins,
    # Microsoft's binary build, this repository's cntk) under OpenMPI 1.10 (1.10.3 in the DLoBD
    # paper)
    depends_on("cntk@2.2", type="run")
    depends_on("mpi", type="run")

    def install(self, spec, prefix):
        mkdirp(prefix.lib)
        install(self.stage.archive_file, prefix.lib)
