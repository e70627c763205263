"""What the figure pool's server process imports before it forks any worker (multiprocessing's
forkserver preload, workflow/rules/common.smk): the figures module, matplotlib with it, and two
ways out. Imported there only, first of its preloads."""

import atexit
import os
import signal

# The server starts as the Snakefile is read, before Snakemake knows whether anything is to be
# drawn, and Snakemake may exit while the server still imports. multiprocessing's server would
# notice only after its imports; till then it and the resource tracker keep Snakemake's stdout and
# stderr open, and whoever reads them through a pipe (`make figures | tee`, a test) waits. So every
# 50 ms it checks that Snakemake is still its parent, and leaves at once if not. (Its workers,
# forked later, inherit no timer.)
_SNAKEMAKE = os.getppid()


def _leave_if_orphaned(signum, frame):
    if os.getppid() != _SNAKEMAKE:
        os._exit(0)


signal.signal(signal.SIGALRM, _leave_if_orphaned)
# the libraries it imports read and write as before: an interrupted system call resumes
signal.siginterrupt(signal.SIGALRM, False)
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)

from dlobd.results import figures  # noqa: E402,F401  (imported for the workers it forks)

# Tearing down matplotlib's and pandas's modules at the exit took 0.13 s, while the server holds
# the same stdout and stderr. It writes nothing and has no file to flush, so it leaves at once
# (its workers leave by os._exit too).
atexit.register(os._exit, 0)
