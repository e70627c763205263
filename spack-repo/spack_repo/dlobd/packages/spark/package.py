from spack_repo.builtin.packages.spark.package import Spark as BuiltinSpark

import os

from spack.package import *


class Spark(BuiltinSpark):
    """Apache Spark, with the versions the papers and the registry method use that builtin lacks.

    3.5.9 comes from PyPI's pyspark sdist, which carries Spark's jars (as the registry method
    takes it). 2.2.0 (MMLSpark 0.10): Apache publishes only .sha512/.md5 files beside it, which
    cannot be reached from the machine that wrote this recipe, so that version carries NO checksum
    (never an invented one): install it with `spack install --no-checksum` after checking it.
    """

    version(
        "3.5.9",
        sha256="ea27adc39ddac9413b8951e45aa748cbed6c785971b81386efc41938f6243d93",
        url="https://files.pythonhosted.org/packages/source/p/pyspark/pyspark-3.5.9.tar.gz",
    )
    # NO CHECKSUM FOUND FROM HERE (see the class comment)
    version("2.2.0")

    @when("@3.5.9")
    def install(self, spec, prefix):
        # pyspark's layout: jars/, bin/, sbin/ and the Python package under pyspark/
        install_tree("deps/jars" if os.path.isdir("deps/jars") else "pyspark/jars", prefix.jars)
        install_tree("deps/bin" if os.path.isdir("deps/bin") else "pyspark/bin", prefix.bin)
        install_tree("deps/sbin" if os.path.isdir("deps/sbin") else "pyspark/sbin", prefix.sbin)
        install_tree("pyspark", join_path(prefix.python, "pyspark"))
        with open(join_path(prefix, "RELEASE"), "w") as release:
            release.write(f"Spark {spec.version} (from PyPI's pyspark)\n")
