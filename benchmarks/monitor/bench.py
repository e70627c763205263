#!/usr/bin/env python3
"""The per-run sampler's own CPU cost (`make bench-monitor`).

Runs dlobd/cluster/monitor.py as a launcher does, at its default period, following a job process and
matching command lines (which makes it scan the whole process table every few periods),
for a given time; prints `name: value` lines: its CPU time over wall time, in percent of one
core (`monitor_cpu_pct`; the goal is under 1) and the samples it wrote.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MONITOR = Path(__file__).resolve().parents[2] / "dlobd" / "cluster" / "monitor.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "host.csv"
        job = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({args.seconds})"])
        start = time.monotonic()
        sampler = subprocess.Popen([sys.executable, str(MONITOR), "--out", str(out), "--pid", str(job.pid),
                                    "--match", r"/var/yarn/.*/application_\d+_\d+/container_"])
        _, status, usage = os.wait4(sampler.pid, 0)
        wall = time.monotonic() - start
        job.wait()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"the sampler failed (exit {os.waitstatus_to_exitcode(status)})")
        samples = sum(1 for _ in csv.reader(open(out))) - 1
    cpu = usage.ru_utime + usage.ru_stime
    print(f"monitor_wall_s: {wall:.1f}")
    print(f"monitor_cpu_s: {cpu:.2f}")
    print(f"monitor_samples: {samples}")
    print(f"monitor_cpu_pct: {100 * cpu / wall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
