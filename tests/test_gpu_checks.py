"""`make test-gpu` (tests/gpu/run.py) where there is no GPU: one line, and a skip that passes."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "gpu" / "run.py"


def test_without_a_gpu_it_says_so_in_one_line_and_passes(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "test-gpu: skipped: no GPU here (nvidia-smi -L: [Errno 2] No such file or directory: 'nvidia-smi')"]


def test_a_failing_nvidia_smi_is_no_gpu(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the "
                   "NVIDIA driver.' >&2\nexit 9\n")
    smi.chmod(0o755)
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("test-gpu: skipped: no GPU here (nvidia-smi -L: NVIDIA-SMI has failed because it "
                           "could not communicate with the NVIDIA driver.)\n")
