"""Time provisioning and the cluster lifecycle on this machine; print `name: value` lines.

  provision_cold_s    site.yml into a fresh, empty prefix (the registries' local caches, ~/.m2
                      and pip's, are used as they are: say so when quoting the number)
  provision_rerun_s   site.yml again on the same prefix (nothing to change)
  cluster_start_s     cluster-up.yml until every worker's DataNode is live and NodeManager RUNNING
  rss_mib_<daemon>    resident memory of each daemon right after the start
  cluster_stop_s      cluster-down.yml
  prefix_disk_mib     disk used by the prefix

The local inventory's ports must be free (stop your own cluster first). The prefix is removed at
the end unless --keep is given; each playbook's output is kept in --log-dir.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def run(playbook: str, prefix: Path, inventory: str, log_dir: Path) -> float:
    cmd = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", inventory, str(ROOT / "playbooks" / playbook),
           "-e", json.dumps({"dlobd_prefix": str(prefix)})]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.monotonic() - start
    log = log_dir / f"{len(list(log_dir.glob('*.log'))):02d}-{Path(playbook).stem}.log"
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{playbook} failed (exit {done.returncode}); see {log}")
    return elapsed


def daemon_rss_mib(prefix: Path) -> dict[str, float]:
    rss = {}
    for pid_file in sorted((prefix / "var" / "run").glob("*.pid")):
        proc = psutil.Process(int(pid_file.read_text()))
        rss[pid_file.stem] = proc.memory_info().rss / 2**20
    return rss


def disk_mib(path: Path) -> float:
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file()) / 2**20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="playbooks/inventories/local/hosts.yml")
    parser.add_argument("--keep", action="store_true", help="keep the prefix")
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="dlobd-bench-"))
    prefix = work / "stack"
    log_dir = args.log_dir or work / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"# prefix {prefix}, logs {log_dir}", file=sys.stderr)
    results = {}
    try:
        results["provision_cold_s"] = run("site.yml", prefix, args.inventory, log_dir)
        results["provision_rerun_s"] = run("site.yml", prefix, args.inventory, log_dir)
        results["cluster_start_s"] = run("cluster-up.yml", prefix, args.inventory, log_dir)
        for name, mib in daemon_rss_mib(prefix).items():
            results[f"rss_mib_{name}"] = mib
        results["cluster_stop_s"] = run("cluster-down.yml", prefix, args.inventory, log_dir)
        results["prefix_disk_mib"] = disk_mib(prefix)
    finally:
        if (prefix / "sbin" / "dlobd-daemon").exists() and "cluster_stop_s" not in results:
            subprocess.run([str(prefix / "sbin" / "dlobd-daemon"), "stop", "nodemanager", "resourcemanager",
                            "datanode", "namenode"], check=False)
        if not args.keep:
            shutil.rmtree(prefix, ignore_errors=True)
    for name, value in results.items():
        print(f"{name}: {value:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
