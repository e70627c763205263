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
