"""The per-run sampler (dlobd/cluster/monitor.py), run for real on this machine's processes."""

import csv
import io
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dlobd.cluster import monitor

SCRIPT = Path(monitor.__file__)
BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass\n"


def sampler(*args, **kwargs):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60, **kwargs)


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_follows_a_job_tree_until_it_ends(tmp_path):
    job = subprocess.Popen([sys.executable, "-c", BUSY.format(s=2.5)])
    out = tmp_path / "vm.csv"
    start = time.monotonic()
    done = sampler("--out", str(out), "--pid", str(job.pid), "--interval", "0.5", "--host", "vm")
    job.wait()
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 10  # it stopped with the job
    got = rows(out.read_text())
    assert len(got) >= 3
    assert {r["host"] for r in got} == {"vm"}
    assert all(float(r["rss_mb"]) > 1 and int(r["processes"]) >= 1 for r in got[:-1])
    times = [float(r["time_s"]) for r in got]
    assert times == sorted(times)
    assert any(k.startswith("net_lo_") for k in got[0])


def test_match_finds_processes_that_are_not_children_and_their_children(tmp_path):
    marker = f"dlobd-monitor-test-{time.time_ns()}"
    # a parent whose command line matches, and a child whose does not
    job = subprocess.Popen([sys.executable, "-c",
                            "import subprocess, sys\n"
                            f"subprocess.run([sys.executable, '-c', {BUSY.format(s=3)!r}])\n",
                            marker])
    try:
        deadline = time.monotonic() + 10
        while not psutil.Process(job.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)  # the tree is complete before the sampler's first scan
        done = sampler("--out", "-", "--match", marker, "--interval", "0.5", "--max-seconds", "2")
    finally:
        job.wait()
    assert done.returncode == 0, done.stderr
    got = rows(done.stdout)
    assert len(got) >= 3
    assert max(int(r["processes"]) for r in got) == 2


def test_never_overwrites_a_raw_file(tmp_path):
    out = tmp_path / "vm.csv"
    out.write_text("earlier samples\n")
    done = sampler("--out", str(out), "--max-seconds", "0")
    assert done.returncode != 0 and "never overwritten" in done.stderr
    assert out.read_text() == "earlier samples\n"


@pytest.mark.parametrize("interval", ["0", "-1"])
def test_rejects_a_bad_interval(tmp_path, interval):
    done = sampler("--out", str(tmp_path / "x.csv"), "--interval", interval)
    assert done.returncode == 2 and "--interval must be positive" in done.stderr
    assert not (tmp_path / "x.csv").exists()


# ------------------------------------------------------------------ GPU columns
# Real nvidia-smi output of an NVIDIA H200 under a PyTorch load (tests/data/gpu-h200/README.md).
H200 = Path(__file__).parent / "data" / "gpu-h200"


def test_reads_the_device_report_of_a_gpu_under_load():
    got = monitor.query_rows((H200 / "nvsmi.csv").read_text().splitlines(),
                             "timestamp,utilization.gpu,memory.used")
    assert len(got) > 20
    busy = [r for r in got if r["utilization.gpu"] > 0]
    assert {(r["utilization.gpu"], r["memory.used"]) for r in busy} == {(100.0, 6863.0)}
    assert got[0] == {"timestamp": "2026/11/28 14:38:10.995", "utilization.gpu": 0.0, "memory.used": 0.0}


def test_reads_a_sample_without_header_or_units():
    fields = ("index,uuid,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,"
              "temperature.gpu,clocks.sm")
    (got,) = monitor.query_rows((H200 / "query-gpu.csv").read_text().splitlines(), fields)
    assert (got["index"], got["utilization.gpu"], got["memory.used"], got["memory.total"]) == (0, 100, 4001, 143771)
    assert got["uuid"] == "GPU-d3e4db5e-f346-f8f9-e7e3-acae1203370f"


def test_the_jobs_gpu_memory_is_its_own_processes():
    text = (H200 / "compute-apps.csv").read_text().splitlines()
    with_header = monitor.query_rows(text[:2], "pid,process_name,used_gpu_memory")
    assert with_header == [{"pid": 857.0, "process_name": "python3", "used_gpu_memory": 3992.0}]
    # the monitor's own format: noheader, nounits
    apps = monitor.query_rows(text[2:], "pid,used_gpu_memory")
    assert apps == [{"pid": 857.0, "used_gpu_memory": 3992.0}]
    assert monitor.job_gpu_memory(apps, {857, 12}) == 3992
    assert monitor.job_gpu_memory(apps, {858}) == 0


# A stand-in for nvidia-smi on this GPU-less machine: it streams the H200's recorded samples as
# `--query-... --format=csv,noheader,nounits -lms` does (one poll per period), the per-process
# report naming the test's job; MODE=hang stops answering after three polls, MODE=exit exits 1
# after three.
STAND_IN = """#!{python}
import os, sys, time
data, pid, mode = {data!r}, os.environ["SMI_JOB_PID"], os.environ.get("SMI_MODE", "loop")
args = " ".join(sys.argv[1:])
if args.startswith("--query-gpu=index"):
    print("0"); sys.exit(0)
period = int(sys.argv[sys.argv.index("-lms") + 1]) / 1000
if "--format=csv,noheader,nounits" not in args:
    sys.exit("the stand-in streams --format=csv,noheader,nounits only")
if "--query-gpu=" in args:
    lines = open(data + "/nvsmi.csv").read().splitlines()[1:]
    polls = [[l.split(", ")[0] + ", 0, " + ", ".join(v.split()[0] for v in l.split(", ")[1:])] for l in lines]
else:
    memory = open(data + "/compute-apps.csv").read().splitlines()[-1].split(", ")[1]
    polls = [["2026/11/28 14:38:%02d.000, %s, %s" % (i, p, memory), "2026/11/28 14:38:%02d.000, 1, 5" % i]
             for i, p in enumerate([pid] * 40)]
for n, poll in enumerate(polls):
    if mode != "loop" and n == 3:
        if mode == "exit":
            print("Unable to determine the device handle for GPU0: Unknown Error", file=sys.stderr)
            sys.exit(1)
        time.sleep(60)
    print("\\n".join(poll), flush=True)
    time.sleep(period)
"""


def stand_in_nvidia_smi(folder: Path) -> dict:
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(STAND_IN.format(python=sys.executable, data=str(H200.parent / "gpu-h200")))
    script.chmod(0o755)
    return {"PATH": f"{folder}:/usr/bin:/bin"}


def busy_gpu_samples(tmp_path, mode: str, seconds: float):
    job = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    env = {**stand_in_nvidia_smi(tmp_path / "bin"), "SMI_JOB_PID": str(job.pid), "SMI_MODE": mode}
    done = sampler("--out", "-", "--pid", str(job.pid), "--interval", "0.3", env=env)
    job.wait()
    assert done.returncode == 0, done.stderr
    return rows(done.stdout), done.stderr


def test_samples_each_gpu_and_the_jobs_gpu_memory(tmp_path):
    got, err = busy_gpu_samples(tmp_path, "loop", 5)
    assert list(got[0])[-3:] == ["gpu0_util_pct", "gpu0_mem_mib", "gpu_job_mem_mib"]
    # from the first complete poll on (the stand-in's start may take a few samples), the
    # recorded values only
    sampled = [r for r in got if r["gpu0_mem_mib"]]
    seen = {(r["gpu0_util_pct"], r["gpu0_mem_mib"]) for r in sampled}
    assert ("100", "6863") in seen and seen <= {("0", "0"), ("0", "22"), ("100", "6863")}
    # the job's pid holds 3,992 MiB; pid 1's 5 MiB are not the job's
    job = [r["gpu_job_mem_mib"] for r in got]
    first = job.index("3992")
    assert set(job[first:]) == {"3992"} and first < len(job) - 5
    assert err == ""


@pytest.mark.parametrize("mode, why", [("exit", "exited with code 1 (Unable to determine the device handle"),
                                       ("hang", "gave no line for over 3 periods")])
def test_an_nvidia_smi_that_fails_mid_run_keeps_the_samples_and_the_run(tmp_path, mode, why):
    got, err = busy_gpu_samples(tmp_path, mode, 5)
    assert any(r["gpu0_mem_mib"] for r in got[:-3])  # the samples taken before it failed stand
    assert all(r["gpu0_mem_mib"] == "" for r in got[-3:])
    assert all(float(r["rss_mb"]) > 0 for r in got[-3:-1])  # the rest of the row goes on
    assert err.count(f"monitor: nvidia-smi --query-gpu {why}") == 1


def test_a_host_without_nvidia_smi_writes_no_gpu_column_and_says_so_once(tmp_path):
    done = sampler("--out", "-", "--interval", "0.2", "--max-seconds", "0.6",
                   env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert not [c for c in rows(done.stdout)[0] if c.startswith("gpu")]
    assert done.stderr == "monitor: no GPU columns: nvidia-smi not found on PATH\n"


def test_the_first_sample_has_no_cpu_reading(tmp_path):
    # psutil's first cpu_percent spans the milliseconds since the sampler started (100 % in 95 of
    # the 103 monitor files of the make reproduce of 2026-11-26): the first row leaves the cell
    # empty, the next ones measure
    job = subprocess.Popen([sys.executable, "-c", BUSY.format(s=1.5)])
    done = sampler("--out", "-", "--pid", str(job.pid), "--interval", "0.5")
    job.wait()
    assert done.returncode == 0, done.stderr
    got = rows(done.stdout)
    assert len(got) >= 3 and got[0]["cpu_util_pct"] == ""
    assert all(0 <= float(r["cpu_util_pct"]) <= 100 for r in got[1:])



@pytest.mark.parametrize("parent", [
    # the child stays unreaped for a while: a zombie, whose memory is already freed
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1)'])\ntime.sleep(2.5)\n",
    # the child is reaped at once: the next scan of the process table no longer finds it
    "subprocess.run([sys.executable, '-c', 'import time; time.sleep(1)'])\ntime.sleep(2)\n",
], ids=["zombie", "reaped"])
def test_a_job_process_that_has_exited_is_counted_as_exited(parent):
    job = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n" + parent])
    done = sampler("--out", "-", "--pid", str(job.pid), "--interval", "0.3")
    job.wait()
    assert done.returncode == 0, done.stderr
    exited = [int(r["exited"]) for r in rows(done.stdout)]
    assert exited[0] == 0 and 1 in exited[1:]   # the child while it ran, then once it had exited
