from spack_repo.builtin.build_systems.maven import MavenPackage

from spack.package import *


class Hibench(MavenPackage):
    """HiBench (Intel): big data benchmark suite; the DLoBD study runs its Spark PageRank."""

    homepage = "https://github.com/Intel-bigdata/HiBench"
    git = "https://github.com/Intel-bigdata/HiBench.git"
    license("Apache-2.0")

    # the commit of tag v7.1.1 (2020-07-16), the last release building for Spark 1.6 to 2.4
    version("7.1.1", commit="b5628352aa06420784931711b9a2279f6b386d45")

    depends_on("java@8", type=("build", "run"))
    depends_on("maven", type="build")
    depends_on("spark", type="run")

    def build_args(self):
        return ["-Psparkbench", "-Dspark=2.1", "-Dscala=2.11", "-DskipTests"]

    def install(self, spec, prefix):
        install_tree(".", prefix)
