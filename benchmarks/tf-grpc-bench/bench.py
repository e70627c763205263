"""`make bench-grpc`: TF-gRPC-Bench against the physical limit of the same loopback path.

Runs, interleaved and repeated (the machine is shared, so single runs are noisy):
  tcp-pingpong   raw TCP round trips of one Small (10 B) message
  p2p-latency    gRPC round trips of a payload of one Small (10 B) buffer
  tcp-stream     a raw TCP stream of 10 MiB writes
  p2p-bandwidth  gRPC calls carrying ten Large (1 MiB) buffers, acknowledged by the PS
The gRPC benchmarks run twice: as unary RPCs (`rpc: unary`, one call per payload, as
TensorFlow's RecvTensor; the goals are judged on these) and as messages of one open stream
(`rpc: streaming`, reported beside them). No process is pinned to a core, gRPC's or TCP's.
Prints `name: value` lines: the medians over the repeats, the ratios
(p2p_latency_small_vs_tcp_ratio on the median round trips, p2p_bandwidth_large_vs_tcp_ratio,
and the same for streaming) with the goals (latency within 2x the TCP round trip, bandwidth
at least 70% of TCP), and the load average before and after (the machine is shared).
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
CASES = [  # name, tf_grpc_bench command, its options
    ("tcp_pingpong_small", "tcp-pingpong", SMALL),
    ("p2p_latency_small", "run", ["--benchmark", "p2p-latency", *SMALL]),
    ("p2p_latency_small_streaming", "run", ["--benchmark", "p2p-latency", *SMALL, *STREAMING]),
    ("tcp_stream_large", "tcp-stream", LARGE),
    ("p2p_bandwidth_large", "run", ["--benchmark", "p2p-bandwidth", *LARGE]),
    ("p2p_bandwidth_large_streaming", "run",
     ["--benchmark", "p2p-bandwidth", *LARGE, *STREAMING]),
]


def measure(binary, command, options, args, out: Path) -> dict:
    argv = [str(binary), command, "--port", "0", "--warmup", str(args.warmup),
            "--duration", str(args.duration), *options]
    proc = subprocess.run(argv, capture_output=True, text=True)
    out.write_text(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"bench-grpc: {' '.join(argv)} failed: {proc.stderr.strip()}")
    result = grpcbench.parse(proc.stdout)
    if result.status != "ok" or not result.finished:
        sys.exit(f"bench-grpc: {out}: {result.reason}")
    return {r["metric"]: r["value"] for r in result.rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or Path("data/state/bench-grpc") / stamp
    out.mkdir(parents=True, exist_ok=False)
    binary = grpcbench.build()
    load_start = os.getloadavg()
    got = {name: [] for name, _, _ in CASES}
    for rep in range(1, args.repeats + 1):
        for name, command, options in CASES:
            got[name].append(measure(binary, command, options, args, out / f"{name}-{rep}.txt"))

    def median(name, metric):
        return statistics.median(v[metric] for v in got[name])

    lines = {
        "repeats": args.repeats,
        "duration_s": args.duration,
        "cpu_pinning": "none (gRPC and TCP alike)",
        "loadavg_1_5_15_start": " ".join(f"{v:.2f}" for v in load_start),
        "loadavg_1_5_15_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "tcp_pingpong_small_p50_us": median("tcp_pingpong_small", "latency_p50_us"),
        "tcp_pingpong_small_mean_us": median("tcp_pingpong_small", "latency_us"),
    }
    for rpc in ("", "_streaming"):
        name = f"p2p_latency_small{rpc}"
        lines[f"{name}_p50_us"] = median(name, "latency_p50_us")
        lines[f"{name}_mean_us"] = median(name, "latency_us")
    lines["tcp_stream_large_mb_per_s"] = median("tcp_stream_large", "bandwidth_mb_per_s")
    for rpc in ("", "_streaming"):
        lines[f"p2p_bandwidth_large{rpc}_mb_per_s"] = median(f"p2p_bandwidth_large{rpc}",
                                                             "bandwidth_mb_per_s")
    for rpc in ("", "_streaming"):  # unary first: the mode the goals are judged on
        lat = lines[f"p2p_latency_small{rpc}_p50_us"] / lines["tcp_pingpong_small_p50_us"]
        bw = lines[f"p2p_bandwidth_large{rpc}_mb_per_s"] / lines["tcp_stream_large_mb_per_s"]
        lines.update({
            f"p2p_latency_small{rpc}_vs_tcp_ratio": lat,
            f"p2p_bandwidth_large{rpc}_vs_tcp_ratio": bw,
        })
        if not rpc:
            lines.update({
                "p2p_latency_goal": "met (<= 2)" if lat <= 2 else "missed (> 2)",
                "p2p_bandwidth_goal": "met (>= 0.70)" if bw >= 0.70 else "missed (< 0.70)",
                "goals_judged_on": "rpc unary (TensorFlow's RecvTensor is a unary RPC)",
            })
    lines["raw_outputs"] = out
    for name, value in lines.items():
        print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
