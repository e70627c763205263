"""Per-host resource sampler of a run: `monitor/<host>.csv` (docs/runs-and-results.md).

One sampler runs on every host of a run while the job runs. Once a period (1 s by
default) it appends a row: the time since it started (`time_s`) and the Unix time, the
host's CPU utilisation, the resident memory of the job's processes (`rss_mb`), and the
byte counters of every network interface (`net_<if>_rx_bytes`, `net_<if>_tx_bytes`).

The job's processes are the process trees under `--pid` and every process whose command
line matches `--match` (YARN containers are not children of the launcher: they are found
by their application id). The process table is scanned (for matches and children) only
every few periods,
which keeps the sampler's own CPU cost well under 1 %.

It depends on psutil alone, so the same file runs on every host, from the stacks'
Python environment: `python monitor.py --out monitor/<host>.csv --match application_...`.
Rows are flushed one by one: a sampler killed with the job leaves a readable file.
"""

import argparse
import csv
import os
import re
import signal
import socket
import sys
import time

import psutil

RESCAN_EVERY = 2  # periods between scans of the whole process table


class Sampler:
    def __init__(self, roots: list[int], pattern: str | None):
        self.roots = roots
        self.pattern = re.compile(pattern) if pattern else None
        self.known: dict[int, psutil.Process] = {}
        self.periods = 0
        self.interfaces = sorted(psutil.net_io_counters(pernic=True))
        psutil.cpu_percent(interval=None)  # the first call only sets the reference point

    def header(self) -> list[str]:
        nets = [f"net_{i}_{d}_bytes" for i in self.interfaces for d in ("rx", "tx")]
        return ["time_s", "unix_time", "host", "cpu_util_pct", "rss_mb", "processes", *nets]

    def _job_processes(self) -> dict[int, psutil.Process]:
        # One pass over the process table (parents and command lines) finds the job's trees
        # and the --match processes; done every few periods, the known ones sampled between.
        if self.periods % RESCAN_EVERY:
            return self.known
        children: dict[int, list[psutil.Process]] = {}
        tops = {}
        for proc in psutil.process_iter(["ppid", "cmdline"]):
            children.setdefault(proc.info["ppid"], []).append(proc)
            if proc.pid in self.roots or (
                    self.pattern and proc.pid != os.getpid()
                    and self.pattern.search(" ".join(proc.info["cmdline"] or []))):
                tops[proc.pid] = proc
        # a matched container's children count too (Spark's Python workers, TF tasks)
        found, todo = {}, list(tops.values())
        while todo:
            proc = todo.pop()
            if proc.pid not in found:
                found[proc.pid] = proc
                todo.extend(children.get(proc.pid, []))
        self.known = found
        return found

    def sample(self, started: float, host: str) -> list:
        rss = 0
        processes = self._job_processes()
        for pid, proc in list(processes.items()):
            try:
                rss += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                processes.pop(pid)
        counters = psutil.net_io_counters(pernic=True)
        nets = []
        for name in self.interfaces:
            c = counters.get(name)
            nets += [c.bytes_recv, c.bytes_sent] if c else ["", ""]
        self.periods += 1
        now = time.time()
        return [f"{now - started:.3f}", f"{now:.3f}", host,
                f"{psutil.cpu_percent(interval=None):.1f}", f"{rss / 2**20:.1f}",
                len(processes), *nets]

    def roots_alive(self) -> bool:
        # a job that exited but was not yet reaped by its parent is a zombie: it has ended
        for pid in self.roots:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    return True
            except psutil.NoSuchProcess:
                pass
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True,
                        help="CSV file to write (must not exist), or - for standard output "
                             "(a sampler on another host, its output kept by the caller)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--pid", type=int, action="append", default=[],
                        help="a job process whose tree to follow (repeatable); the sampler "
                             "stops when all of them have exited")
    parser.add_argument("--match", help="regular expression on command lines of job processes")
    parser.add_argument("--host", default=socket.gethostname(), help="host name to record")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop after this long even if the job still runs")
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error(f"--interval must be positive, got {args.interval}")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    try:
        # 'x': never overwrite a raw file of an earlier sampler
        fh = os.fdopen(os.dup(sys.stdout.fileno()), "w", newline="") if args.out == "-" \
            else open(args.out, "x", newline="")
    except FileExistsError:
        parser.error(f"{args.out} exists: raw monitor files are never overwritten")
    sampler = Sampler(args.pid, args.match)
    started = time.time()
    with fh:
        writer = csv.writer(fh)
        writer.writerow(sampler.header())
        while not stop:
            writer.writerow(sampler.sample(started, args.host))
            fh.flush()
            if args.pid and not sampler.roots_alive():
                break
            if args.max_seconds is not None and time.time() - started >= args.max_seconds:
                break
            deadline = started + sampler.periods * args.interval
            while not stop and time.time() < deadline:
                time.sleep(min(0.2, max(0.0, deadline - time.time())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
