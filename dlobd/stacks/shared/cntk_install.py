"""CNTK's install as the mmlspark role records it, for MMLSpark and S-Caffe's CNTK comparison:
a build per device (mmlspark_cntk_homes, recorded as CNTK_HOME_<DEVICE>) and the OpenMPI 1.10
CNTK's binary release is built against (mmlspark_mpi_home, recorded as MMLSPARK_MPI_HOME);
role_setting reads any setting the role records from a variable of its own. NotRunnable where one
is missing names what the inventory lacks for it."""

from dlobd import NotRunnable
from dlobd.cluster import provenance


def role_setting(name: str, what: str, variable: str, key: str | None = None) -> str:
    """The dlobd-env.sh setting `name` the mmlspark role records from its `variable` (from its
    entry `key`, a mapping's); NotRunnable saying `what` it is and what the inventory lacks for
    it: the variable, or, where the inventory in use gives that, a run of the role."""
    value = provenance.stack_setting(name)
    if value:
        return value
    cluster = provenance.inventory()
    given = cluster.role_settings.get(variable) if cluster is not None else None
    if key is not None:
        given = given.get(key) if isinstance(given, dict) else None
    if given:
        raise NotRunnable(f"{what}: the mmlspark role records it where it runs (dlobd_paper_stacks: "
                          f"[mmlspark]; {name})")
    ask = f"add {key}: <its install> to {variable}" if key is not None else f"set {variable}"
    raise NotRunnable(f"{what}: {ask} (role mmlspark; {name})")


def cntk_home(device: str, what: str) -> str:
    """The CNTK 2.x build of `device` (cpu-mkl, gpu-cudnn, ...)."""
    return role_setting("CNTK_HOME_" + device.upper().replace("-", "_"), what, "mmlspark_cntk_homes", device)


def mpi_home(what: str) -> str:
    return role_setting("MMLSPARK_MPI_HOME", what, "mmlspark_mpi_home")
