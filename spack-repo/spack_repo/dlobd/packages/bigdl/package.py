import os
import zipfile

from spack_repo.builtin.build_systems.generic import Package
from spack_repo.builtin.build_systems.maven import MavenPackage

from spack.package import *


class Bigdl(MavenPackage, Package):
    """BigDL: distributed deep learning on Apache Spark (Intel). Installs the Scala jars into
    <prefix>/lib."""

    homepage = "https://github.com/intel/BigDL"
    git = "https://github.com/intel-analytics/BigDL.git"
    license("Apache-2.0")

    build_system(conditional("generic", when="@2.4.0"), conditional("maven", when="@a1f3a88"), default="generic")

    # Maven Central has no BigDL 2.x jar: the jar comes out of the PyPI wheel, as the registry
    # method takes it.
    version(
        "2.4.0",
        sha256="ecaf501707b0546bccfb6066570396630ec6b9698ad2d385a48a47354a5ceea6",
        url="https://files.pythonhosted.org/packages/d0/a5/55d1212130614cc00a424ccdf656ead03a424bf78d6ebb4b68c54d1c0854/bigdl_dllib_spark3-2.4.0-py3-none-manylinux1_x86_64.whl",
        expand=False,
    )
    # The commit the DLoBD paper ran (Spark 2.1, Scala 2.11, Java 8), built from git.
    version("a1f3a88", commit="a1f3a88517b1b41a9d3554b8715987c66edccfb7")

    resource(
        name="bigdl-core",
        url="https://files.pythonhosted.org/packages/f7/cb/321f875a2a42b847355a7be80c9978e6983a86bf737bf4f553bc31d7119c/bigdl_core-2.4.0.dev0-py3-none-manylinux2010_x86_64.whl",
        sha256="d7ad922d9b99c6625507029769acdb00e633553a952429425d0d6cc490ec9684",
        expand=False,
        when="@2.4.0",
    )

    depends_on("java@8", type=("build", "run"), when="@a1f3a88")
    depends_on("java@11:", type="run", when="@2.4.0")
    depends_on("spark@2.1", type="run", when="@a1f3a88")
    depends_on("spark@3", type="run", when="@2.4.0")
    depends_on("maven", type="build", when="@a1f3a88")

    # The wheels' members that are the Scala jars
    wheel_jars = (
        "bigdl/share/dllib/lib/bigdl-dllib-spark_3.1.3-2.4.0-jar-with-dependencies.jar",
        "bigdl/share/core/lib/all-2.4.0-20230420.050641-1.jar",
    )

    def build_args(self):
        # the paper's build: Spark 2.1 profile, Scala 2.11
        return ["-P", "spark_2.x", "-DskipTests"]

    @when("@2.4.0")
    def install(self, spec, prefix):
        mkdirp(prefix.lib)
        # an unexpanded resource stays in a stage of its own: look in every stage, not the root's
        for wheel in (w for stage in self.stage for w in find(stage.source_path, "*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                for member in self.wheel_jars:
                    if member in archive.namelist():
                        with open(join_path(prefix.lib, os.path.basename(member)), "wb") as out:
                            out.write(archive.read(member))
        for member in self.wheel_jars:
            if not os.path.exists(join_path(prefix.lib, os.path.basename(member))):
                raise InstallError(f"bigdl: {member} is in none of the wheels")

    @when("@a1f3a88")
    def install(self, spec, prefix):
        mkdirp(prefix.lib)
        for jar in find("spark/dl/target", "*-jar-with-dependencies.jar"):
            install(jar, prefix.lib)
