#!/usr/bin/env python3
"""Every check that needs a GPU (`make test-gpu`), as one script for a bare GPU machine.

It needs Python 3 with psutil, nvcc, CMake and an MPI, and nothing else of the project's
tooling. On a host without a GPU it prints one line and exits 0. Otherwise it runs:

1. the fabric fingerprint (dlobd/cluster/fabric.py detect): at least one GPU, its topology as
   plain text;
2. the resource monitor (dlobd/cluster/monitor.py) following a GPU job it builds with nvcc
   (tests/gpu/gpu_load.cu): the job's pid must show GPU memory, a GPU must show work;
3. hr-reduce's GPU build (benchmarks/gpu/hr_reduce_gpu.sh): every algorithm verified at
   8-64 MB with device buffers where the MPI is CUDA-aware.

It prints `name: value` lines, keeps what it wrote under $OUT (or a temporary folder), and
exits 1 naming each check that failed.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD_MIB, LOAD_S = 2048, 12


def nvcc() -> str | None:
    return shutil.which("nvcc") or next((str(p) for p in sorted(Path("/usr/local").glob("cuda*/bin/nvcc"))), None)


def fingerprint(out: Path, failed: list) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "dlobd/cluster/fabric.py"), "detect"],
                          capture_output=True, text=True, timeout=120)
    (out / "fingerprint.json").write_text(done.stdout)
    if done.returncode != 0:
        failed.append(f"fingerprint: fabric.py detect exited {done.returncode}: {done.stderr.strip()}")
        return
    gpus = json.loads(done.stdout)["gpus"]
    print(f"fingerprint_gpus: {gpus['count']}")
    print(f"fingerprint_model: {gpus['devices'][0]['model'] if gpus['devices'] else None}")
    print(f"fingerprint_cuda: {gpus['cuda_version']}")
    if gpus["count"] < 1:
        failed.append(f"fingerprint: no GPU found ({gpus.get('none_because')})")
    if "\x1b" in (gpus["topology"] or ""):
        failed.append("fingerprint: the topology keeps terminal escape codes")


def monitor_of_a_gpu_job(out: Path, failed: list) -> None:
    compiler = nvcc()
    if not compiler:
        failed.append("monitor: no nvcc on PATH or under /usr/local/cuda*/bin to build the GPU job")
        return
    load = out / "gpu_load"
    built = subprocess.run([compiler, "-O2", "-o", str(load), str(ROOT / "tests/gpu/gpu_load.cu")],
                           capture_output=True, text=True)
    if built.returncode != 0:
        failed.append(f"monitor: nvcc could not build gpu_load: {built.stderr.strip()}")
        return
    job = subprocess.Popen([str(load), str(LOAD_MIB), str(LOAD_S)])
    samples = out / "monitor.csv"
    start = time.monotonic()
    sampler = subprocess.Popen([sys.executable, str(ROOT / "dlobd/cluster/monitor.py"), "--out", str(samples),
                                "--pid", str(job.pid), "--interval", "1"],
                               stderr=open(out / "monitor.err", "w"))
    # its rusage counts the nvidia-smi processes it started and reaped
    _, status, usage = os.wait4(sampler.pid, 0)
    wall = time.monotonic() - start
    job.wait()
    if job.returncode != 0:
        failed.append(f"monitor: the GPU job exited {job.returncode}")
    if os.waitstatus_to_exitcode(status) != 0:
        failed.append(f"monitor: the sampler exited {os.waitstatus_to_exitcode(status)}")
        return
    rows = list(csv.DictReader(open(samples)))
    gpu_columns = [c for c in (rows[0] if rows else {}) if c.startswith("gpu")]
    job_mib = max((float(r["gpu_job_mem_mib"]) for r in rows if r.get("gpu_job_mem_mib")), default=0.0)
    busy = max((float(r[c]) for r in rows for c in gpu_columns if c.endswith("_util_pct") and r[c]), default=0.0)
    print(f"monitor_gpu_columns: {' '.join(gpu_columns)}")
    print(f"monitor_samples: {len(rows)}")
    print(f"monitor_gpu_job_mem_mib_max: {job_mib:.0f}")
    print(f"monitor_gpu_util_pct_max: {busy:.0f}")
    print(f"monitor_cpu_pct: {100 * (usage.ru_utime + usage.ru_stime) / wall:.2f}")
    if job_mib < LOAD_MIB:
        failed.append(f"monitor: the job's pid shows {job_mib:.0f} MiB of GPU memory, it holds {LOAD_MIB}")
    if busy <= 0:
        failed.append("monitor: no sample shows a busy GPU")


def hr_reduce_gpu(failed: list) -> None:
    done = subprocess.run(["bash", str(ROOT / "benchmarks/gpu/hr_reduce_gpu.sh")])
    if done.returncode != 0:
        failed.append(f"hr-reduce: benchmarks/gpu/hr_reduce_gpu.sh exited {done.returncode}")


def main() -> int:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
        why = None if listed.returncode == 0 and listed.stdout.strip() else (
            listed.stderr.strip() or listed.stdout.strip() or f"exit {listed.returncode}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    if why:
        print(f"test-gpu: skipped: no GPU here (nvidia-smi -L: {why})")
        return 0
    out = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="dlobd-test-gpu-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"test-gpu: {listed.stdout.strip().splitlines()[0]}; files in {out}", flush=True)
    failed: list[str] = []
    fingerprint(out, failed)
    monitor_of_a_gpu_job(out, failed)
    sys.stdout.flush()
    hr_reduce_gpu(failed)
    for reason in failed:
        print(f"FAILED {reason}")
    print(f"test-gpu: {'failed' if failed else 'passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
