from spack_repo.builtin.build_systems.maven import MavenPackage

from spack.package import *


class Hibench(MavenPackage):
    """HiBench (Intel): big data benchmark suite; the DLoBD study runs its Spark PageRank."""

    homepage = "https://github.com/Intel-bigdata/HiBench"
    git = "https://github.com/Intel-bigdata/HiBench.git"
    license("Apache-2.0")

    # NO COMMIT FOUND FROM HERE: GitHub cannot be reached from the machine that wrote this
    # recipe, so the release is named by its tag only (a tag is not a checksum): replace it with
    # the tag's commit before relying on it.
    version("7.1.1", tag="HiBench-7.1.1")

    depends_on("java@8", type=("build", "run"))
    depends_on("maven", type="build")
    depends_on("spark", type="run")

    def build_args(self):
        return ["-Psparkbench", "-Dspark=2.1", "-Dscala=2.11", "-DskipTests"]

    def install(self, spec, prefix):
        install_tree(".", prefix)
