"""Time the build of CaffeOnSpark's modern port (playbooks/caffeonspark.yml, role caffeonspark);
print `name: value` lines.

  build_cold_s     the role into a fresh, empty prefix: the MKL wheels' install, then for each CPU
                   device (cpu-openblas, cpu-mkl) unpack, patch, caffe-public's distribute, Maven's
                   package of caffe-distri (JNI) and caffe-grid (Debian's packages already
                   installed, Maven's ~/.m2 and pip's cache used as they are: say so when quoting
                   the number)
  build_cached_s   the same again: the builds named by the hash of their sources and patches (and
                   MKL) exist, nothing is rebuilt
  build_key        that hash, of cpu-openblas; build_key_cpu_mkl, of cpu-mkl
  load_avg_1m      the machine's load at the end of the cold build (the number is noisy on a
                   shared machine)

--mirror names the folder holding the two source tarballs (the role's mirror method). The
prefix is removed at the end unless --keep is given; each playbook's output is kept in --log-dir.
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(prefix: Path, mirror: str, inventory: str, log: Path) -> float:
    # (a fresh prefix has no stack Python: the MKL wheels install with the tooling's pip)
    extra = {"dlobd_prefix": str(prefix), "dlobd_profile": "modern", "caffeonspark_source_mirror": mirror,
             "caffeonspark_lmdb_datasets": [], "dlobd_python_home": str(ROOT / ".venv")}
    cmd = ["nice", "-n", "10", str(ROOT / ".venv/bin/ansible-playbook"), "-i", inventory,
           str(ROOT / "playbooks" / "caffeonspark.yml"), "-e", json.dumps(extra)]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.monotonic() - start
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"playbooks/caffeonspark.yml failed (exit {done.returncode}); see {log}")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default=os.environ.get("DLOBD_SOURCE_MIRROR", ""),
                        help="folder holding the source tarballs (default: $DLOBD_SOURCE_MIRROR; empty: git)")
    parser.add_argument("--inventory", default="playbooks/inventories/local/hosts.yml")
    parser.add_argument("--keep", action="store_true", help="keep the prefix")
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    prefix = Path(tempfile.mkdtemp(prefix="dlobd-bench-caffeonspark-"))
    log_dir = args.log_dir or prefix.with_name(prefix.name + "-logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        cold = run(prefix, args.mirror, args.inventory, log_dir / "cold.log")
        load = os.getloadavg()[0]
        cached = run(prefix, args.mirror, args.inventory, log_dir / "cached.log")
        keys = {device: next((prefix / "caffeonspark").glob(f"{device}-*")).name.removeprefix(f"{device}-")
                for device in ("cpu-openblas", "cpu-mkl")}
    finally:
        if not args.keep:
            shutil.rmtree(prefix, ignore_errors=True)
    print(f"build_cold_s: {cold:.1f}")
    print(f"build_cached_s: {cached:.1f}")
    print(f"build_key: {keys['cpu-openblas']}")
    print(f"build_key_cpu_mkl: {keys['cpu-mkl']}")
    print(f"load_avg_1m: {load:.1f}")
    print(f"# logs: {log_dir}" + (f"; prefix kept: {prefix}" if args.keep else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
