"""`make bench-grpc`: TF-gRPC-Bench against its gRPC build's floor and raw TCP on one loopback.

Runs, interleaved (the order rotates each repeat) and repeated, since the machine is shared:
  tcp-pingpong   raw TCP round trips of one Small (10 B) message
  grpc-floor     the smallest unary echo of the same gRPC build (grpc_floor), 10 B
  p2p-latency    gRPC round trips of a payload of one Small (10 B) buffer
  tcp-stream     a raw TCP stream of 10 MiB writes
  p2p-bandwidth  gRPC calls carrying ten Large (1 MiB) buffers, acknowledged by the PS
  p2p-latency-<scheme>  the points of tfgrpc-fig8/9 on loopback: ten buffers of the
                 uniform, random and skew payload schemes
The gRPC benchmarks run as unary RPCs (`rpc: unary`, one call per payload, as TensorFlow's
RecvTensor) and as messages of one open stream (`rpc: streaming`). No process is pinned.
Prints `name: value` lines: the median over the repeats of each measurement with its
`<name>_min_max` and `<name>_spread_pct` (max - min over the median: how far two runs of
the same point apart in time can differ on this machine), the ratios of medians (each with the min-max of the per-repeat ratios)
and their goals: p2p-latency within 1.15x the floor, streaming within 2x the TCP round
trip, Large-payload bandwidth at least 0.70 of the TCP stream; unary against TCP is reported
(it is the gRPC build's cost, README "The floor"). Also the gRPC version both programs ran
with and the load average before and after (the machine is shared).
Every raw output is kept under --out (default data/state/bench-grpc/<UTC time>/).
"""

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
from pathlib import Path

from dlobd.stacks import grpcbench

SMALL = ["--scheme", "custom", "--sizes", "10"]
LARGE = ["--scheme", "uniform", "--categories", "large", "--buffers", "10"]
STREAMING = ["--rpc", "streaming"]
SUITE = ["--port", "0"]
CASES = [  # name, program (suite or floor), its command and options
    ("tcp_pingpong_small", "suite", ["tcp-pingpong", *SUITE, *SMALL]),
    ("grpc_floor_small", "floor", ["run"]),  # its message is 10 B, as SMALL
    ("p2p_latency_small", "suite", ["run", *SUITE, "--benchmark", "p2p-latency", *SMALL]),
    ("p2p_latency_small_streaming", "suite",
     ["run", *SUITE, "--benchmark", "p2p-latency", *SMALL, *STREAMING]),
    ("tcp_stream_large", "suite", ["tcp-stream", *SUITE, *LARGE]),
    ("p2p_bandwidth_large", "suite", ["run", *SUITE, "--benchmark", "p2p-bandwidth", *LARGE]),
    ("p2p_bandwidth_large_streaming", "suite",
     ["run", *SUITE, "--benchmark", "p2p-bandwidth", *LARGE, *STREAMING]),
    *((f"p2p_latency_{scheme}", "suite",
       ["run", *SUITE, "--benchmark", "p2p-latency", "--scheme", scheme, "--buffers", "10"])
      for scheme in ("uniform", "random", "skew")),
]
SUFFIXES = {"latency_p50_us": "p50_us", "latency_us": "mean_us", "bandwidth_mb_per_s": "mb_per_s"}
# ratio name -> (numerator, denominator, metric, goal text, goal met)
RATIOS = {
    "p2p_latency_small_vs_grpc_floor_ratio": ("p2p_latency_small", "grpc_floor_small",
                                              "latency_p50_us", "<= 1.15", lambda r: r <= 1.15),
    "p2p_latency_small_vs_tcp_ratio": ("p2p_latency_small", "tcp_pingpong_small",
                                       "latency_p50_us", None, None),
    "p2p_latency_small_streaming_vs_tcp_ratio": ("p2p_latency_small_streaming",
                                                 "tcp_pingpong_small", "latency_p50_us",
                                                 "<= 2.0", lambda r: r <= 2.0),
    "p2p_bandwidth_large_vs_tcp_ratio": ("p2p_bandwidth_large", "tcp_stream_large",
                                         "bandwidth_mb_per_s", ">= 0.70", lambda r: r >= 0.70),
    "p2p_bandwidth_large_streaming_vs_tcp_ratio": ("p2p_bandwidth_large_streaming",
                                                   "tcp_stream_large", "bandwidth_mb_per_s",
                                                   None, None),
}


def measure(argv, args, out: Path):
    argv = [*argv, "--warmup", str(args.warmup), "--duration", str(args.duration)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    out.write_text(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"bench-grpc: {' '.join(argv)} failed: {proc.stderr.strip()}")
    result = grpcbench.parse(proc.stdout)
    if result.status != "ok" or not result.finished:
        sys.exit(f"bench-grpc: {out}: {result.reason}")
    return {r["metric"]: r["value"] for r in result.rows}, result.meta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or Path("data/state/bench-grpc") / stamp
    try:
        suite = grpcbench.build()
    except RuntimeError as e:
        sys.exit(f"bench-grpc: {e}")
    out.mkdir(parents=True, exist_ok=False)
    programs = {"suite": suite, "floor": suite.parent / grpcbench.FLOOR}
    load_start = os.getloadavg()
    got = {name: [] for name, _, _ in CASES}
    grpc_versions = set()
    for rep in range(args.repeats):
        for name, program, options in CASES[rep % len(CASES):] + CASES[:rep % len(CASES)]:
            values, meta = measure([str(programs[program]), *options], args,
                                   out / f"{name}-{rep + 1}.txt")
            got[name].append(values)
            if meta.get("grpc_version", "-") != "-":
                grpc_versions.add(meta["grpc_version"])
    if len(grpc_versions) != 1:  # the floor and the suite must be the same gRPC build
        sys.exit(f"bench-grpc: the programs ran with gRPC {sorted(grpc_versions)}, not one version")

    lines = {
        "grpc_version": grpc_versions.pop(),
        "grpc_root": grpcbench.grpc_root() or "system (pkg-config grpc++)",
        "repeats": args.repeats,
        "duration_s": args.duration,
        "cpu_pinning": "none (gRPC and TCP alike)",
        "loadavg_1_5_15_start": " ".join(f"{v:.2f}" for v in load_start),
    }
    for name, _, _ in CASES:
        for metric, suffix in SUFFIXES.items():
            if metric in got[name][0]:
                values = [v[metric] for v in got[name]]
                key = f"{name}_{suffix}"
                lines[key] = statistics.median(values)
                lines[f"{key}_min_max"] = f"{min(values):.3f} {max(values):.3f}"
                lines[f"{key}_spread_pct"] = 100 * (max(values) - min(values)) / lines[key]
    for ratio, (num, den, metric, goal, met) in RATIOS.items():
        lines[ratio] = (statistics.median(v[metric] for v in got[num])
                        / statistics.median(v[metric] for v in got[den]))
        paired = [a[metric] / b[metric] for a, b in zip(got[num], got[den])]  # same repeat
        lines[f"{ratio}_min_max"] = f"{min(paired):.3f} {max(paired):.3f}"
        if goal:
            lines[f"{ratio}_goal"] = f"{'met' if met(lines[ratio]) else 'missed'} ({goal})"
    lines["loadavg_1_5_15_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    lines["raw_outputs"] = out
    for name, value in lines.items():
        print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
