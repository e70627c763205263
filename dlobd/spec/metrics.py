"""The metric vocabulary: every metric name a parser, result, figure or claim may use.

docs/metrics.md documents the same table for readers; a test keeps the two equal.
Parsers build their rows with `row()`, which refuses names and dimensions that are not
here, so a typo cannot become a new metric.
"""

from dataclasses import dataclass

# "none" for counts that describe a workload rather than rate it.
BETTER = ("lower", "higher", "none")
# How a series of one run's values becomes one number when a figure or claim needs one.
REDUCERS = ("last", "max", "min", "mean", "median", "sum")

# Columns every row may carry besides dimensions (docs/runs-and-results.md).
ROW_FIELDS = ("metric", "value", "unit", "step", "epoch")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str
    reducer: str
    meaning: str
    dims: tuple[str, ...] = ()

    def __post_init__(self):
        if self.better not in BETTER:
            raise ValueError(f"metric {self.name}: better must be one of {BETTER}, not {self.better!r}")
        if self.reducer not in REDUCERS:
            raise ValueError(f"metric {self.name}: reducer must be one of {REDUCERS}, not {self.reducer!r}")


# Dimensions that any metric's rows may carry: where in the run the value was seen.
COMMON_DIMS = (
    "task",         # the process that printed it, e.g. worker:0, chief:0, driver
    "wall_clock_s", # seconds since training start at which a per-step value was seen
    "log",          # the log file (relative to the run directory) it came from
)

METRICS = {m.name: m for m in (
    Metric("loss", "1", "lower", "last",
           "training loss reported at a step (mean over the step's batch)"),
    Metric("top1_accuracy", "fraction", "higher", "max",
           "share of test records whose top-scoring class is the label, 0..1"),
    Metric("top5_accuracy", "fraction", "higher", "max",
           "share of test records with the label among the five top-scoring classes, 0..1"),
    Metric("test_loss", "1", "lower", "last",
           "mean loss over the test set at an evaluation"),
    Metric("wall_clock_s", "s", "lower", "last",
           "seconds since training start when the row's step ended, as the tool reports it"),
    Metric("throughput_records_per_s", "records/s", "higher", "mean",
           "records (samples) trained per second, as the tool reports it for a step"),
    Metric("images_per_s", "images/s", "higher", "mean",
           "images trained per second over all workers (per step, or a run's mean when step is empty)"),
    Metric("worker_images_per_s", "images/s", "higher", "mean",
           "images trained per second by one worker of a distributed run (dimension task)"),
    Metric("steps_per_s", "steps/s", "higher", "mean",
           "training steps (iterations) per second"),
    Metric("epoch_time_s", "s", "lower", "mean",
           "seconds one epoch of training took"),
    Metric("end_to_end_s", "s", "lower", "last",
           "seconds from job start to job end, set-up and shutdown included"),
    Metric("train_time_s", "s", "lower", "last",
           "seconds spent in training steps over the whole run"),
    Metric("input_bytes_per_s", "bytes/s", "higher", "last",
           "bytes of a job's input over its end_to_end_s (HiBench's Throughput(bytes/s))"),
    Metric("latency_us", "us", "lower", "median",
           "one operation's latency (RPC round trip, MPI reduce, point-to-point message)",
           ("payload_bytes", "message_bytes", "payload_scheme", "operation")),
    Metric("latency_p50_us", "us", "lower", "median",
           "median of one run's operation latencies (e.g. TF-gRPC-Bench round trips)",
           ("payload_bytes", "message_bytes", "payload_scheme", "operation")),
    Metric("latency_p99_us", "us", "lower", "median",
           "99th percentile of one run's operation latencies (e.g. TF-gRPC-Bench round trips)",
           ("payload_bytes", "message_bytes", "payload_scheme", "operation")),
    Metric("bandwidth_mb_per_s", "MB/s", "higher", "mean",
           "bytes moved per second, 10^6 bytes per MB",
           ("payload_bytes", "message_bytes", "payload_scheme", "operation")),
    Metric("rpc_calls_per_s", "calls/s", "higher", "mean",
           "completed RPCs per second, summed over all clients", ("payload_bytes", "payload_scheme")),
    Metric("cpu_util_pct", "%", "lower", "mean",
           "CPU utilisation of a host, 100 = every core busy", ("host",)),
    Metric("host_mem_mb", "MB", "lower", "max",
           "resident memory of the job's processes on a host, 10^6 bytes per MB", ("host",)),
    Metric("net_mb_per_s", "MB/s", "lower", "mean",
           "network bytes per second through a host's interface", ("host", "interface", "direction")),
    Metric("gpu_mem_gb", "GB", "lower", "max",
           "device memory held by the job's processes on a host's GPUs (nvidia-smi's per-process "
           "report), 10^9 bytes per GB", ("host",)),
    Metric("gpu_device_mem_gb", "GB", "lower", "max",
           "device memory in use on one GPU, by any process, 10^9 bytes per GB", ("host", "gpu")),
    Metric("gpu_util_pct", "%", "none", "mean",
           "share of the last sample period in which a kernel ran on one GPU", ("host", "gpu")),
    Metric("iovec_buffer_count", "buffers", "none", "sum",
           "iovec buffers of one size class seen in gRPC payloads during training",
           ("size_class",)),
    Metric("time_breakdown_s", "s", "lower", "sum",
           "seconds a run spent in one phase (see the phase list in docs/metrics.md)", ("phase",)),
)}

# Values of the `phase` dimension of time_breakdown_s.
PHASES = {
    "yarn_scheduling": "application submitted to YARN until its executors have registered",
    "spark_jobs": ("Spark jobs outside the DL library's start-up, training and shutdown (TFoS: "
                  "from the last step to 'Shutting down cluster')"),
    "tfos_startup": "TFoS: 'Reserving TFSparkNodes' until the first training step starts",
    "tf_startup": ("native TF: the rest of the leading task's end_to_end_s (importing TF, joining "
                   "the cluster, building the model, warm-up steps, evaluation)"),
    "training": ("from the start of the first counted training step to the end of the last, on "
                "the task that leads the run (its last step line's wall_clock_s); native TF and TFoS alike"),
    "tfos_shutdown": "TFoS: 'Shutting down cluster' until the application ends",
    "data_loading": ("reading the input before training (native: the start line's data_loading_s; "
                    "TFoS: executors registered until 'Reserving TFSparkNodes')"),
    "propagation": "S-Caffe: data propagation, the model broadcast to the workers",
    "forward_backward": "S-Caffe: forward and backward passes",
    "aggregation": "S-Caffe: gradient reduce of each iteration, summed over the run",
}


def get(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}: not in the vocabulary (docs/metrics.md)") from None


def row(metric: str, value: float, *, step=None, epoch=None, **dims) -> dict:
    """One tidy row with the metric's unit; dimensions must be known for the metric."""
    m = get(metric)
    allowed = set(m.dims) | set(COMMON_DIMS)
    unknown = set(dims) - allowed
    if unknown:
        raise ValueError(f"metric {metric}: unknown dimension(s) {sorted(unknown)}; allowed {sorted(allowed)}")
    if metric == "time_breakdown_s" and dims.get("phase") not in PHASES:
        raise ValueError(f"time_breakdown_s: phase {dims.get('phase')!r} is not one of {sorted(PHASES)}")
    out = {"metric": metric, "value": float(value), "unit": m.unit, "step": step, "epoch": epoch}
    out.update({k: v for k, v in dims.items() if v is not None})
    return out
