"""Per-host resource sampler of a run: `monitor/<host>.csv` (docs/runs-and-results.md).

One sampler runs on every host of a run while the job runs. Once a period (1 s by
default) it appends a row: the time since it started (`time_s`) and the Unix time, the
host's CPU utilisation since the sample before (empty in the first sample), the resident memory
of the job's processes (`rss_mb`), their count (`processes`), how many of them had exited by the
sample (`exited`: gone since the last scan of the process table, or zombies, whose memory is
already freed), and the byte counters of every network interface (`net_<if>_rx_bytes`,
`net_<if>_tx_bytes`).

On a host with NVIDIA GPUs it adds, per GPU, its utilisation and the device memory in use
(`gpu<i>_util_pct`, `gpu<i>_mem_mib`), and the device memory held by the job's own processes
(`gpu_job_mem_mib`, from nvidia-smi's per-process report by pid). Each of the two reports is
one `nvidia-smi --query-... -lms <period>` process started once and read as it streams, so a
sample costs no process start. A host without nvidia-smi writes no GPU columns and says so once
on standard error; an nvidia-smi that exits or stops answering mid-run leaves its columns empty
from then on, and the samples taken so far, and the run, stand.

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
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psutil

RESCAN_EVERY = 2  # periods between scans of the whole process table
GPU_FIELDS = "timestamp,index,utilization.gpu,memory.used"
APP_FIELDS = "timestamp,pid,used_gpu_memory"
# a report whose newest line is older than this many periods is stale: nvidia-smi hangs
STALE_PERIODS = 3
START_TIMEOUT_S = 15  # for the one-off `nvidia-smi --query-gpu=index` that lists the GPUs


def query_rows(lines, fields: str) -> list[dict]:
    """Rows of `nvidia-smi --query-*=<fields>` output, by position: field -> value (numbers as
    float with any unit dropped, `[N/A]` and the like as None). Any `--format=csv` takes: with or
    without its header line (skipped), with or without units."""
    names = fields.split(",")
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        if not line.strip() or cells[0].split(" [")[0] == names[0]:
            continue
        row = {}
        for name, cell in zip(names, cells):
            number = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:\s*(?:%|MiB|W|C|MHz))?", cell)
            row[name] = float(number.group(1)) if number else (None if cell.startswith("[") else cell)
        rows.append(row)
    return rows


def job_gpu_memory(apps: list[dict], pids) -> float:
    """MiB of device memory the given processes hold, from --query-compute-apps rows."""
    return sum(r.get("used_gpu_memory") or 0.0 for r in apps if r.get("pid") is not None
               and int(r["pid"]) in pids)


class Report:
    """One `nvidia-smi --query-<kind>=<fields> --format=csv,noheader,nounits -lms <period>`
    process, read by a thread: the rows of its newest complete poll, grouped by their timestamp."""

    def __init__(self, nvidia_smi: str, kind: str, fields: str, period_s: float):
        self.name = kind
        self.fields = fields
        self.period_s = period_s
        self.lock = threading.Lock()
        self.latest: list[dict] = []
        self.pending: list[dict] = []
        self.seen = time.monotonic()
        self.ended: str | None = None
        # a file, not a pipe: an nvidia-smi that complains at every poll must not fill a pipe and stall
        self.errors = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [nvidia_smi, f"--query-{kind}={fields}", "--format=csv,noheader,nounits",
             "-lms", str(max(100, round(period_s * 1000)))],
            stdout=subprocess.PIPE, stderr=self.errors, stdin=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            for row in query_rows([line], self.fields):
                with self.lock:
                    if self.pending and row.get("timestamp") != self.pending[0].get("timestamp"):
                        self.latest, self.pending = self.pending, []  # the poll before is complete
                    self.pending.append(row)
                    self.seen = time.monotonic()
        code = self.proc.wait()
        self.errors.seek(0)
        err = self.errors.read().strip().splitlines()
        with self.lock:
            self.ended = f"exited with code {code}" + (f" ({err[-1]})" if err else "")

    def rows(self, quiet_means_none: bool) -> list[dict] | None:
        """The newest complete poll; None once the process has ended. A report silent for
        STALE_PERIODS has stopped answering (None) or, with `quiet_means_none`, has nothing to
        say: the per-process report prints no line while no process holds a GPU."""
        with self.lock:
            if self.ended:
                return None
            if time.monotonic() - self.seen > STALE_PERIODS * self.period_s + 1:
                self.latest, self.pending = [], []
                return [] if quiet_means_none else None
            return self.latest

    def why_lost(self) -> str:
        return self.ended or f"gave no line for over {STALE_PERIODS} periods"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class GpuSampler:
    """The GPU columns of a host with nvidia-smi: per GPU, its utilisation and memory in use,
    and the device memory of the job's processes."""

    def __init__(self, nvidia_smi: str, gpus: list[int], period_s: float):
        self.gpus = gpus
        self.devices = Report(nvidia_smi, "gpu", GPU_FIELDS, period_s)
        self.apps = Report(nvidia_smi, "compute-apps", APP_FIELDS, period_s)
        self.said: set[str] = set()

    @classmethod
    def start(cls, period_s: float, nvidia_smi: str | None = None) -> "GpuSampler | None":
        """A sampler for this host's GPUs, or None (and why, once on standard error)."""
        nvidia_smi = nvidia_smi or shutil.which("nvidia-smi")
        why = None
        if not nvidia_smi:
            why = "nvidia-smi not found on PATH"
        else:
            try:
                listed = subprocess.run([nvidia_smi, "--query-gpu=index", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=START_TIMEOUT_S)
                gpus = [int(i) for i in listed.stdout.split()] if listed.returncode == 0 else []
                if listed.returncode != 0:
                    why = f"nvidia-smi exited with code {listed.returncode}: {listed.stderr.strip()}"
                elif not gpus:
                    why = "nvidia-smi lists no GPU"
            except subprocess.TimeoutExpired:
                why = f"nvidia-smi did not answer within {START_TIMEOUT_S} s"
            except (OSError, ValueError) as exc:
                why = f"nvidia-smi unusable: {exc}"
        if why:
            print(f"monitor: no GPU columns: {why}", file=sys.stderr, flush=True)
            return None
        return cls(nvidia_smi, gpus, period_s)

    def header(self) -> list[str]:
        return [f"gpu{i}_{m}" for i in self.gpus for m in ("util_pct", "mem_mib")] + ["gpu_job_mem_mib"]

    def _lost(self, report: Report) -> None:
        if report.name not in self.said:
            self.said.add(report.name)
            print(f"monitor: nvidia-smi --query-{report.name} {report.why_lost()}; its columns "
                  "stay empty while it gives none", file=sys.stderr, flush=True)

    def sample(self, pids) -> list:
        devices = self.devices.rows(quiet_means_none=False)
        # no line from the per-process report is news only while the device report answers
        apps = self.apps.rows(quiet_means_none=devices is not None)
        for report, rows in ((self.devices, devices), (self.apps, apps)):
            if rows is None:
                self._lost(report)
        by_index = {int(r["index"]): r for r in devices or [] if r.get("index") is not None}
        values = []
        for i in self.gpus:
            row = by_index.get(i, {})
            values += [_text(row.get("utilization.gpu")), _text(row.get("memory.used"))]
        values.append("" if apps is None else f"{job_gpu_memory(apps, pids):.0f}")
        return values

    def stop(self) -> None:
        self.devices.stop()
        self.apps.stop()


def _running(proc: psutil.Process) -> bool:
    """Whether the process still runs: not gone, not a zombie."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _text(value) -> str:
    return "" if value is None else f"{value:g}"


class Sampler:
    def __init__(self, roots: list[int], pattern: str | None, gpu: GpuSampler | None = None):
        self.roots = roots
        self.gpu = gpu
        self.pattern = re.compile(pattern) if pattern else None
        self.known: dict[int, psutil.Process] = {}
        self.periods = 0
        self.gone = 0
        self.interfaces = sorted(psutil.net_io_counters(pernic=True))
        psutil.cpu_percent(interval=None)  # the first call only sets the reference point

    def header(self) -> list[str]:
        nets = [f"net_{i}_{d}_bytes" for i in self.interfaces for d in ("rx", "tx")]
        gpus = self.gpu.header() if self.gpu else []
        return ["time_s", "unix_time", "host", "cpu_util_pct", "rss_mb", "processes", "exited", *nets, *gpus]

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
        # processes of the job that ended since the last scan, which the new scan no longer finds
        self.gone = sum(1 for pid, proc in self.known.items() if pid not in found and not _running(proc))
        self.known = found
        return found

    def sample(self, started: float, host: str) -> list:
        processes = self._job_processes()
        rss, exited, self.gone = 0, self.gone, 0
        for pid, proc in list(processes.items()):
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    exited += 1
                    continue
                rss += proc.memory_info().rss
            except psutil.NoSuchProcess:
                exited += 1
                processes.pop(pid)
            except psutil.AccessDenied:
                processes.pop(pid)
        counters = psutil.net_io_counters(pernic=True)
        nets = []
        for name in self.interfaces:
            c = counters.get(name)
            nets += [c.bytes_recv, c.bytes_sent] if c else ["", ""]
        gpus = self.gpu.sample(processes) if self.gpu else []
        cpu = psutil.cpu_percent(interval=None)
        # the first sample's value spans the milliseconds since __init__: no reading, left empty
        cpu = f"{cpu:.1f}" if self.periods else ""
        self.periods += 1
        now = time.time()
        return [f"{now - started:.3f}", f"{now:.3f}", host, cpu, f"{rss / 2**20:.1f}",
                len(processes), exited, *nets, *gpus]

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
    gpu = GpuSampler.start(args.interval)
    sampler = Sampler(args.pid, args.match, gpu)
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
    if gpu:
        gpu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
