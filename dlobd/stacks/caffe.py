"""Caffe: BVLC Caffe 1.0 (and its descendants S-Caffe, CaffeOnSpark), trained through its
solver, here via pycaffe (`caffe.SGDSolver(...).solve()`; PyPI brocolli-caffe builds it).

Parser: reads the glog output of the solver (stderr), lines such as

  I20261121 22:18:06.996481 14571 solver.cpp:231] Iteration 0, loss = 2.35957
  I1121 21:40:01.123456 12345 solver.cpp:218] Iteration 100 (1.23 iter/s, 81.3s/100 iters), loss = 0.43
  I1121 21:40:05.000000 12345 solver.cpp:330] Iteration 500, Testing net (#0)
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #0: accuracy = 0.9185
  I1121 21:40:06.000000 12345 solver.cpp:397]     Test net output #1: loss = 0.27 (* 1 = 0.27 loss)
  I1121 21:40:09.000000 12345 solver.cpp:...] Optimization Done.

The releases' wordings it reads (tests/data/logs/real/caffe/ holds their real output):
- BVLC Caffe up to 1.0-rc3 (2016): `Iteration N, loss = x`, no rate;
- BVLC Caffe 1.0-rc4 on (2017): `Iteration N (r iter/s, ts/k iters), loss = x`;
- NVIDIA Caffe 0.15: the same with `s/k iter)`; 0.16 and 0.17: `Iteration N (t s), loss = x`
  for the first iterations (a time, not a rate), then `(r iter/s, ts/k iter), [e/Eep, ]loss = x`,
  0.17 with the net's device (`[0.1]` training, `(0)` testing) before the message;
- Intel Caffe over MLSL under Intel MPI's `mpirun -l`: every line prefixed `[<rank>] `, the
  ranks' solvers interleaved (each rank's rows carry task `rank:<r>`, each its own clock);
- glog before 0.6 stamps month-day (I1121), from 0.6 on year-month-day (I20261121).

Rows: per displayed iteration loss (the solver's smoothed loss), steps_per_s when the
line carries `iter/s`, wall_clock_s (glog time since the solver's first `Iteration` line,
which may be the test pass at iteration 0); per test pass top1_accuracy (output named
`accuracy`), top5_accuracy (`accuracy_top5`, `top5`), test_loss (`loss`). A rate not above
zero is left out: it rates no iteration (BVLC 1.0 prints `0 iter/s` at iteration 0, where no
iteration ran since the solver's timer started). Finished when `Optimization Done.` is present
(under MPI, on any rank). Times are differences within the log; older glog stamps carry no year,
and a change of day is followed. Two logs mixed are unparseable: iterations out of order, one
solver's training lines from two glog thread ids (two processes), or rank-prefixed lines among
unprefixed ones.
"""

import re

from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser
from dlobd.stacks.shared.caffe_solver import GLOG, THREAD, GlogClock, SolverLines

LOG_FILES = ("stderr.log", "stdout.log")

# Intel MPI's `mpirun -l` (Intel Caffe over MLSL): the rank before every line
RANK_PREFIX = re.compile(r"^\[(\d+)\] (.*)$")


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    solvers = {}  # MPI rank (None: a log without rank prefixes) -> (its clock, its solver)
    for no, line in lines:
        rank = None
        if p := RANK_PREFIX.match(line):
            rank, line = int(p[1]), p[2]
        if not (g := GLOG.match(line)):
            continue
        if solvers and (None in solvers) != (rank is None):
            raise LogError(f"line {no}: a glog line {'without' if rank is None else 'with'} an MPI rank "
                           f"prefix among lines {'with' if rank is None else 'without'} one (two logs "
                           "interleaved?)")
        if rank not in solvers:
            solvers[rank] = GlogClock(), SolverLines(result, None if rank is None else f"rank:{rank}")
        clock, solver = solvers[rank]
        solver.read(no, clock.stamp(no, g), g[7], THREAD.match(line)[1])
    for _, solver in solvers.values():
        solver.close()
    if not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} Caffe's format: no glog 'Iteration N, loss = x' or 'Test net output' line")
    if None not in solvers:
        result.meta["mpi_ranks"] = len(solvers)
    # under MPI one rank's 'Optimization Done.' ends the run
    last = max(solver.last_iter for _, solver in solvers.values())
    done = any(solver.done for _, solver in solvers.values())
    return result.close(None if done else f"no 'Optimization Done.' line (last iteration {last})", cut=cut)


parse = line_parser(_parse)
