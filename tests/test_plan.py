"""`dlobd plan` (dlobd/plan.py): what it says of an install on this machine."""

import subprocess
import sys


def test_jars_in_a_prefix_that_was_never_fully_provisioned_are_no_install(tmp_path):
    # a provisioning cut short leaves Hadoop's jars but no etc/dlobd-env.sh (written last)
    (tmp_path / "hadoop-3.4.1" / "lib").mkdir(parents=True)
    (tmp_path / "hadoop-3.4.1" / "lib" / "hadoop-common-3.4.1.jar").write_bytes(b"")
    out = subprocess.run([sys.executable, "-m", "dlobd.cli", "plan"], capture_output=True, text=True,
                         env={"DLOBD_PREFIX": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True).stdout
    hadoop = next(line for line in out.splitlines() if line.split()[1:2] == ["hadoop"])
    assert hadoop.split()[0] == "no" and "no etc/dlobd-env.sh" in hadoop
