"""MPI jobs of the stacks that start ranks themselves (the hierarchical-reduce benchmark,
S-Caffe, TensorFlow's MPI channel): which MPI (Debian's OpenMPI and MPICH, or a site's MVAPICH2), ranks spread over the
hosts, the host file in each MPI's format and the `mpirun` that reads it.
"""

import os
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import provenance

# Debian's MPIs by their alternatives' names; MVAPICH2 and MVAPICH2-GDR come from the installs
# the inventory names (dlobd_stack_settings), with where each is had (the paper compared them
# with OpenMPI).
MPIS = {
    "openmpi": {"mpicc": "mpicc.openmpi", "mpirun": "mpirun.openmpi"},
    "mpich": {"mpicc": "mpicc.mpich", "mpirun": "mpirun.mpich"},
    "mvapich2": {"home": "MVAPICH2_HOME",
                 "get": "MVAPICH2 is a free download (mvapich.cse.ohio-state.edu), or Spack's mvapich2 package, "
                        "which the paper-tfos-bigdl Spack environment installs"},
    "mvapich2-gdr": {"home": "MVAPICH2_GDR_HOME",
                     "get": "MVAPICH2-GDR is a registered download (mvapich.cse.ohio-state.edu)"},
}


def mpi_tool(mpi: str, tool: str, check: bool = True) -> str:
    """The path of `tool` (mpicc or mpirun) of one MPI; NotRunnable says why it is absent.
    With check False (a dry run) a user-given install's path is not looked at."""
    if mpi not in MPIS:
        raise ValueError(f"hr_reduce: unknown MPI {mpi!r}; known: {', '.join(MPIS)}")
    spec = MPIS[mpi]
    if "home" in spec:
        home = provenance.stack_setting(spec["home"])
        if not home:
            raise NotRunnable(f"{mpi}: set {spec['home']} in dlobd_stack_settings to its install directory: "
                              f"{spec['get']}")
        path = Path(home) / "bin" / tool
        if check and not provenance.present(path):
            raise NotRunnable(f"{mpi}: no {path} ({spec['home']}={home})")
        return str(path)
    found = provenance.which(spec[tool])
    if not found:
        raise NotRunnable(f"{spec[tool]} not found: install Debian's "
                               f"{'libopenmpi-dev' if mpi == 'openmpi' else 'libmpich-dev'}")
    return found


def rank_placement(hosts: list[str], processes: int) -> list[tuple[str, int]]:
    """(host, ranks) spreading `processes` ranks evenly over the hosts; a host that gets no
    rank is left out."""
    per_host, extra = divmod(processes, len(hosts))
    placement = [(h, per_host + (i < extra)) for i, h in enumerate(hosts)]
    return [(h, n) for h, n in placement if n]


def mpirun_prefix(mpi: str, processes: int | None, hostfile: Path | None = None, check: bool = True) -> list[str]:
    """mpirun for `processes` ranks (None: the application contexts that follow say): on the
    hosts of `hostfile`, else on this host allowing more ranks than cores."""
    cmd = [mpi_tool(mpi, "mpirun", check), *(["-np", str(processes)] if processes else [])]
    if mpi == "openmpi":
        cmd[1:1] = ["--hostfile", str(hostfile)] if hostfile else ["--oversubscribe"]
        cmd[1:1] = ["--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
    elif hostfile:  # MPICH and MVAPICH2 use Hydra; without a host file it places every rank here
        cmd[1:1] = ["-f", str(hostfile)]
    return cmd


def hostfile_text(mpi: str, placement: list[tuple[str, int]]) -> str:
    line = "{} slots={}\n" if mpi == "openmpi" else "{}:{}\n"  # OpenMPI's format, else Hydra's
    return "".join(line.format(h, n) for h, n in placement)


def write_hostfile(path: Path, mpi: str, placement: list[tuple[str, int]]) -> Path:
    path.write_text(hostfile_text(mpi, placement))
    return path


# ------------------------------------------------------------------ launcher
