#!/usr/bin/env python3
"""Time to make and to remove the emulated multi-host cluster (tests/cluster/emulated.py).

Brings up 1 master + N workers (namespaces, veth pairs, bridge, tbf, sshd per host, inventory)
into a temporary state dir and inventory, then tears it down; repeats and prints the medians as
`name: value` lines: `emulated_create_hosts_s` (until every host's sshd answers) and
`emulated_teardown_s`. Needs root. Provisioning, HDFS and Spark numbers over these hosts come
with the provisioning part of issue #7 and are not printed here.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from cluster import emulated  # noqa: E402  (the harness lives with the tests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--tier", default="eth-1g")
    parser.add_argument("--subnet", default="10.79.0.0/24", help="kept apart from the default plan of make emulated-up")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    create, teardown = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            state_dir, inventory = Path(tmp) / f"run{i}", Path(tmp) / f"hosts{i}.yml"
            plan = emulated.make_plan(args.workers, args.subnet, args.tier)
            start = time.monotonic()
            try:
                emulated.up(state_dir, plan, inventory, "/usr/sbin/sshd", sshd_timeout=15)
                create.append(time.monotonic() - start)
            finally:
                start = time.monotonic()
                emulated.down(state_dir)
                teardown.append(time.monotonic() - start)
    print(f"emulated_hosts: {args.workers + 1}")
    print(f"emulated_tier: {plan.tier}")
    print(f"emulated_create_hosts_s: {statistics.median(create):.3f}")
    print(f"emulated_teardown_s: {statistics.median(teardown):.3f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except emulated.HarnessError as exc:
        sys.exit(f"emulated cluster: {exc}")
