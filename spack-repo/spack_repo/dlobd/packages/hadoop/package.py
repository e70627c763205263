from spack_repo.builtin.packages.hadoop.package import Hadoop as BuiltinHadoop

from spack.package import *


class Hadoop(BuiltinHadoop):
    """Apache Hadoop, with the versions the papers and the registry method use that builtin
    lacks.

    Checksums: Apache publishes only .sha512/.mds files beside these releases, which cannot be
    reached from the machine that wrote this recipe. The versions below therefore carry NO
    checksum (never an invented one): install them with `spack install --no-checksum` after
    checking the tarball against the .sha512 on archive.apache.org, or add the sha512 here.
    """

    # NO CHECKSUM FOUND FROM HERE (see the class comment)
    version("3.4.1")  # the registry method's Hadoop (modern profile)
    version("2.7.3")  # TensorFlowOnSpark 1.0, MMLSpark 0.10 and BigDL in the DLoBD paper
    version("2.6.5")  # CaffeOnSpark in the DLoBD paper
