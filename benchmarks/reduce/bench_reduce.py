"""`make bench-reduce`: the reduce designs side by side for large buffers, and the cost model.

Runs the hr_reduce benchmark (built against Debian's OpenMPI) with RANKS ranks for 8 to
64 MiB: MPI_Reduce, binomial (Bin), chunked chain (CC), chain-binomial and chain-chain
with chains of RANKS/2, the tuned selection, and the model of eq. (1)-(2). Prints a
table of median latencies, measured against predicted, and the two headline ratios as
`name: value` lines (time ratios: below 1 means ours is faster). Raw logs go to --out.
"""

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

from dlobd.stacks import hr_reduce
from dlobd.stacks.shared import mpi

MiB = 1 << 20


def run(binary, ranks, out_dir, name, args):
    cmd = mpi.mpirun_prefix("openmpi", ranks) + [str(binary), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    (out_dir / f"{name}.log").write_text(proc.stdout)
    (out_dir / f"{name}.err").write_text(proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"bench-reduce: {name} failed (exit {proc.returncode}): {proc.stderr.strip()[-600:]}")
    result = hr_reduce.parse(proc.stdout)
    if result.status != "ok" or not result.finished:
        sys.exit(f"bench-reduce: {name}: output not complete: {result.reason}")
    return {r["message_bytes"]: r["value"] for r in result.rows}, result.meta


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--min-mib", type=int, default=8)
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for the raw logs (default: a new one under the build directory)")
    a = ap.parse_args()
    if a.ranks < 4:
        ap.error("--ranks: the comparison needs at least 4 ranks (two chains of two)")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = a.out or hr_reduce.build_dir("openmpi").parent / "bench-reduce" / stamp
    out_dir.mkdir(parents=True, exist_ok=False)
    binary = hr_reduce.ensure_built("openmpi", out_dir / "build.log")
    k = a.ranks // 2
    common = ["--sizes", f"{a.min_mib * MiB}:{a.max_mib * MiB}", "--iterations", str(a.iterations),
              "--warmup", str(a.warmup)]
    variants = {
        "MPI_Reduce": ["--algorithm", "mpi"],
        "Bin": ["--algorithm", "binomial"],
        "CC": ["--algorithm", "chain"],
        f"CB-{k}": ["--algorithm", "cb", "--chain", str(k)],
        f"CC-{k}": ["--algorithm", "cc", "--chain", str(k)],
        "tuned": ["--algorithm", "tuned"],
        "model Bin": ["--algorithm", "model-bin"],
        "model CC": ["--algorithm", "model-cc"],
    }
    times, meta = {}, {}
    for name, args in variants.items():
        times[name], meta[name] = run(binary, a.ranks, out_dir, name.replace(" ", "-"), args + common)
    cores = os.cpu_count()
    print(f"hr-reduce, {a.ranks} ranks on {cores} cores{' (oversubscribed)' if a.ranks > cores else ''}, "
          f"{meta['MPI_Reduce'].get('mpi_library', '?')[:60]}")
    print(f"median latency in ms over {a.iterations} iterations (slowest rank per iteration); "
          f"every reduce verified; raw logs: {out_dir}")
    sizes = sorted(times["MPI_Reduce"])
    names = list(variants)
    print(f"{'size':>8}" + "".join(f"{n:>12}" for n in names) + f"{'Bin meas/pred':>15}{'CC meas/pred':>14}")
    for s in sizes:
        row = "".join(f"{times[n][s] / 1000:12.2f}" for n in names)
        print(f"{s // MiB:>5}MiB{row}{times['Bin'][s] / times['model Bin'][s]:15.2f}"
              f"{times['CC'][s] / times['model CC'][s]:14.2f}")
    top = max(sizes)
    ours = [n for n in names if n not in ("MPI_Reduce", "model Bin", "model CC")]
    best = min(ours, key=lambda n: times[n][top])
    choices = meta["tuned"].get("choices", {})
    print(f"tuned picked: {', '.join(f'{s // MiB}MiB {choices.get(s)}' for s in sizes)}")
    print(f"model at {top // MiB} MiB: T(Bin) = {meta['model Bin']['model_terms'][top]['factor']:.0f} * "
          f"t(b) = {times['model Bin'][top] / 1000:.2f} ms, T(CC) = "
          f"{meta['model CC']['model_terms'][top]['factor']:.0f} * t(c) = {times['model CC'][top] / 1000:.2f} ms;"
          f" predicted order: {'CC < Bin' if times['model CC'][top] < times['model Bin'][top] else 'Bin <= CC'},"
          f" measured order: {'CC < Bin' if times['CC'][top] < times['Bin'][top] else 'Bin <= CC'}")
    print(f"best of ours at {top // MiB} MiB: {best}")
    print(f"cc_vs_bin_ratio_{top // MiB}MB: {times['CC'][top] / times['Bin'][top]:.3f}")
    print(f"best_vs_mpi_reduce_ratio_{top // MiB}MB: {times[best][top] / times['MPI_Reduce'][top]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
