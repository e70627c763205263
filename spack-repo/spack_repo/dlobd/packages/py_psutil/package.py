from spack_repo.builtin.packages.py_psutil.package import PyPsutil as BuiltinPyPsutil

from spack.package import *


class PyPsutil(BuiltinPyPsutil):
    """psutil with the release the registry method installs (7.2.2), which builtin lacks."""

    version("7.2.2", sha256="0746f5f8d406af344fd547f1c8daa5f5c33dbc293bb8d6a16d80b4bb88f59372")
