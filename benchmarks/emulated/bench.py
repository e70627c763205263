#!/usr/bin/env python3
"""The emulated multi-host cluster, measured: make the hosts, provision them, start HDFS and YARN,
then HDFS write throughput and a Spark job's time on each link tier, for 1, 2 and 3 workers.

For each worker count it makes 1 master + N workers (tests/cluster/emulated.py) into a state dir
and inventory of its own, runs site.yml twice (cold: fresh hosts, a depot already filled; warm:
the rerun, which must change nothing), starts the cluster, and on each tier (links reshaped
with tbf in place: unshaped, eth-10g, eth-1g, all emulated Ethernet) times from the master:

- `hdfs dfs -put` of a file of synthetic bytes (replication: the number of workers, at most 3);
- `spark-submit` of benchmarks/emulated/spark_job.py (one executor per worker, a shuffle over
  every line of that file), checked against the file's line and byte counts.

Then stops the cluster and removes the hosts. Prints `name: value` lines. Needs root and a
machine provisioned once (`make provision`: the Debian packages the hosts use). With
--shared-prefix every host sees one prefix folder (as on NFS or Lustre), which the hosts then
provision one after another.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from cluster import emulated  # noqa: E402  (the harness lives with the tests)

ANSIBLE_PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
SPARK_JOB = Path(__file__).with_name("spark_job.py")
TIERS = ["unshaped", "eth-10g", "eth-1g"]


def log(msg: str) -> None:
    print(f"[bench-emulated] {msg}", file=sys.stderr, flush=True)


def playbook(inventory: Path, name: str, log_dir: Path) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(ROOT / "playbooks" / name)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    seconds = time.monotonic() - start
    out = done.stdout + done.stderr
    (log_dir / f"{len(list(log_dir.iterdir())):02d}-{name.removesuffix('.yml')}.log").write_text(out)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed (exit {done.returncode}); its output is in {log_dir}:\n{out[-3000:]}")
    return seconds, out


def changed_total(out: str) -> int:
    return sum(int(n) for n in re.findall(r"changed=(\d+)", out[out.rindex("PLAY RECAP"):]))


def in_master(state_dir: Path, argv: list[str]) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(emulated.host_command(state_dir, "master", argv), capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(argv)}` on the master failed (exit {done.returncode}): {done.stderr[-3000:]}")
    return seconds, done.stdout


def reshape(plan: emulated.Plan, tier: str) -> None:
    """Every link of the cluster to `tier`, both ends of every veth pair, as `up` shapes them."""
    for host in plan.hosts:
        emulated.set_tier(host.veth, None, tier)
        emulated.set_tier("eth0", host.name, tier)


def synthetic_text(path: Path, mib: int) -> tuple[int, int]:
    """A file of `mib` MiB of synthetic text lines; its (lines, bytes)."""
    line = (b"synthetic dlobd bench-emulated line " * 3)[:99] + b"\n"
    block = line * ((1 << 20) // len(line) + 1)
    lines = 0
    with path.open("wb") as fh:
        while fh.tell() < mib << 20:
            fh.write(block)
            lines += block.count(b"\n")
    return lines, path.stat().st_size


class Results(dict):
    """Printed as `name: value` the moment each is measured, so a stopped run keeps what it had."""

    def __setitem__(self, name, value):
        super().__setitem__(name, value)
        print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}", flush=True)


def one_cluster(workers: int, tiers: list[str], subnet: str, tmp: Path, data: Path, counts: tuple[int, int],
                results: Results, shared_prefix: bool) -> None:
    state_dir, inventory, log_dir = tmp / f"state-{workers}w", tmp / f"hosts-{workers}w.yml", tmp / f"logs-{workers}w"
    log_dir.mkdir()
    plan = emulated.make_plan(workers, subnet, "unshaped", shared_prefix=shared_prefix)
    start = time.monotonic()
    emulated.up(state_dir, plan, inventory, "/usr/sbin/sshd", sshd_timeout=15)
    results[f"emulated_create_hosts_{workers}w_s"] = time.monotonic() - start
    try:
        log(f"{workers} worker(s): provisioning (cold)")
        results[f"emulated_provision_cold_{workers}w_s"], _ = playbook(inventory, "site.yml", log_dir)
        log(f"{workers} worker(s): provisioning (warm)")
        results[f"emulated_provision_warm_{workers}w_s"], out = playbook(inventory, "site.yml", log_dir)
        results[f"emulated_provision_warm_{workers}w_changed"] = changed_total(out)
        results[f"emulated_cluster_start_{workers}w_s"], _ = playbook(inventory, "cluster-up.yml", log_dir)
        bin_dir = state_dir / emulated.STACK_MOUNT / "bin"
        replication = min(workers, 3)
        in_master(state_dir, [str(bin_dir / "hdfs"), "dfs", "-mkdir", "-p", "/bench-emulated"])
        for tier in tiers:
            reshape(plan, tier)
            log(f"{workers} worker(s), {emulated.tier_label(tier)}: HDFS write, Spark job")
            target = f"/bench-emulated/{tier}.txt"
            seconds, _ = in_master(state_dir, [str(bin_dir / "hdfs"), "dfs", "-D", f"dfs.replication={replication}",
                                               "-put", "-f", str(data), target])
            results[f"emulated_hdfs_write_mb_per_s_{tier}_{workers}w"] = counts[1] / (1 << 20) / seconds
            seconds, out = in_master(state_dir, [str(bin_dir / "dlobd-env"), "spark-submit", "--num-executors",
                                                 str(workers), "--executor-cores", "1", str(SPARK_JOB),
                                                 target, str(workers)])
            if f"lines: {counts[0]}" not in out or f"bytes: {counts[1]}" not in out:
                raise SystemExit(f"the Spark job on {tier} with {workers} worker(s) counted wrong: {out[-500:]}")
            results[f"emulated_spark_job_s_{tier}_{workers}w"] = seconds
            in_master(state_dir, [str(bin_dir / "hdfs"), "dfs", "-rm", "-skipTrash", target])
    finally:
        playbook(inventory, "cluster-down.yml", log_dir)
        start = time.monotonic()
        emulated.down(state_dir)
        results[f"emulated_teardown_{workers}w_s"] = time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--tiers", nargs="+", default=TIERS, choices=TIERS)
    parser.add_argument("--file-mib", type=int, default=128, help="size of the file written to HDFS")
    parser.add_argument("--subnet", default="10.79.0.0/24", help="kept apart from the default plan of make emulated-up")
    parser.add_argument("--shared-prefix", action="store_true",
                        help="one prefix folder every host sees (as on NFS or Lustre) instead of one per host")
    args = parser.parse_args()
    print(f"emulated_links: {', '.join(emulated.tier_label(t) for t in args.tiers)}")
    print(f"emulated_prefix: {'one folder shared by every host' if args.shared_prefix else 'one folder per host'}")
    print(f"emulated_hdfs_file_mib: {args.file_mib} (synthetic text)")
    print(f"emulated_depot: {emulated.DEFAULT_DEPOT} (provision_cold = fresh hosts, depot already filled)", flush=True)
    results = Results()
    with tempfile.TemporaryDirectory(prefix="bench-emulated-") as tmp:
        data = Path(tmp) / "synthetic.txt"
        counts = synthetic_text(data, args.file_mib)
        for workers in args.workers:
            one_cluster(workers, args.tiers, args.subnet, Path(tmp), data, counts, results, args.shared_prefix)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except emulated.HarnessError as exc:
        sys.exit(f"emulated cluster: {exc}")
