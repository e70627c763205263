from spack_repo.builtin.packages.py_mpi4py.package import PyMpi4py as BuiltinPyMpi4py

from spack.package import *


class PyMpi4py(BuiltinPyMpi4py):
    """mpi4py with the release the registry method installs (4.1.2), which builtin lacks."""

    version("4.1.2", sha256="56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02")
