"""tf_cnn_benchmarks: TensorFlow's CNN benchmark script (github.com/tensorflow/benchmarks,
scripts/tf_cnn_benchmarks), run at a pinned commit with TF 2.x through tf.compat.v1; it
trains AlexNet, ResNet-50, Inception-v3 ... on synthetic or real ImageNet data, locally
or distributed (parameter servers / replicated, over gRPC).

Parser: reads the script's stdout:

  TensorFlow:  2.15
  Model:       alexnet
  Batch size:  8 global
  ...
  Step	Img/sec	total_loss[	top_1_accuracy	top_5_accuracy]
  10	images/sec: 14.2 +/- 0.5 (jitter = 1.5)	6.912
  ----------------------------------------------------------------
  total images/sec: 15.14

Releases: the script's output from the TF 1.x branches (cnn_tf_v1.x_compatible, 2017 on)
to the pinned commit: the step table's loss column is `loss` until early 2018 and
`total_loss` after; a table copied from a terminal has runs of spaces for its tabs; a
distributed run's Devices name `/job:worker/task:4/cpu:0` (TF 1.4, 1.5) or
`/job:worker/replica:0/task:0/gpu:0`. A paste that leaves out the table's header is read by
its number of values (1: the loss; 3: loss and the two accuracies), as meta `columns` says.

Several processes in one file: MPI ranks (Horovod) under `mpirun --tag-output` tag each line
`[1,0]<stdout>:` (after `Mon Oct 15 23:15:14 2018` with --timestamp-output); the tags are
stripped and the lowest rank's lines are read with the untagged ones, the rank in meta
`mpi_rank`. Ranks' lines without tags cannot be told apart: their repeated steps make the
log unparseable. Kubeflow's tf-cnn launcher (TFJob examples, 2017-2019) prefixes every line
with `INFO|2019-02-13T23:02:11|/opt/launcher.py|27| `, which is stripped.

Rows: per printed step images_per_s (the script's running mean over the steps since
warm-up, as it prints it), loss (total_loss) and training accuracies when printed; the
run's images_per_s from `total images/sec` (empty step). In a distributed run (Devices
name a `/job:<job>/.../task:<n>`) each worker prints its own rate per step: those rows
are worker_images_per_s with task `<job>:<n>`, while `total images/sec` counts all
workers and stays images_per_s; so too under Horovod, with task `rank:<n>` (the rank
read). A non-finite loss (the script prints `nan` when training diverges) gives no row and
is listed in meta; nor does the loss column of a forward-only run (`Mode: forward-only`),
where the script prints 0.000 for a loss it never computed. The log is finished when it
has the `total images/sec` line.

Launcher (paper scale, across hosts): one TF cluster of the script's own parameter-server
mode, every task a `tf_cnn_benchmarks.py --job_name=ps|worker --task_index=i --ps_hosts=...
--worker_hosts=...` process started by the native TF launcher's supervisor (here or over ssh,
dlobd.stacks.tf_cluster.run_tasks) on a port chosen on its host or from the inventory's
dlobd_worker_ports (remote.worker_ports), with `--variable_update=parameter_server`, the point's
network as `--server_protocol` (config/networks.yaml: grpc, grpc+verbs, grpc+mpi; the verbs and
MPI channels and gRPC over RDMA need a TF 1.x build that has them, DLOBD_TF_RDMA_PYTHON),
`--model`, `--batch_size` (per device), `--device` and `--num_gpus` from the point, and
`--num_batches` / `--num_warmup_batches` from `steps` / `warmup_steps` where set (label
tf_build: which setting's Python ran, as for the native TF launcher). One worker
task per node on the workers of group gpu for GPU points (DLOBD_GPU_WORKERS), the parameter
servers on hosts of their own where the spec's nodes leave room for them (tfgrpc-fig4: 5
nodes = 2 PS + 3 workers), else beside the workers. The script is on no registry: the role
tf_cnn_benchmarks clones it at the pinned commit into TF_CNN_BENCHMARKS_HOME, or that setting
names a checkout the site has; without it a point is not runnable and says how to get it.
"""

import math
import re
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.cluster.remote import worker_ports
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser, runner, setting
from dlobd.stacks.shared import tf_cluster

LOG_FILES = ("stdout.log", "tasks/*.log")

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
HEADER_FIELD = re.compile(r"^(TensorFlow|Model|Dataset|Mode|Batch size|Num batches|Num epochs|"
                          r"Devices|Data format|Optimizer|Variables):\s+(.*?)\s*$")
# tabs as the script prints them, or runs of spaces where a terminal copy replaced them
COLUMNS = re.compile(r"^Step\s+Img/sec\s+(.*?)\s*$")
STEP = re.compile(r"^(\d+)\s+images/sec: (" + NUM + r") \+/- (" + NUM + r") \(jitter = (" + NUM + r")\)\s+(.*?)\s*$")
TOTAL = re.compile(r"^total images/sec: (" + NUM + r")\s*$")
EVAL = re.compile(r"^Accuracy @ 1 = (" + NUM + r") Accuracy @ 5 = (" + NUM + r") \[(\d+) examples\]")
DEVICE_TASK = re.compile(r"/job:(\w+)/(?:replica:\d+/)?task:(\d+)/")
# A paste that starts inside the step table: its columns by the number of values (the script
# prints the loss, and with --print_training_accuracy or forward-only the two accuracies).
HEADLESS_COLUMNS = {1: ["total_loss"], 3: ["total_loss", "top_1_accuracy", "top_5_accuracy"]}
# A forward-only run computes no loss: the script prints 0.0 in its loss column (the header's
# "Mode: forward-only", "BenchmarkMode.FORWARD_ONLY" in later versions).
FORWARD_ONLY = re.compile(r"forward[-_]only", re.IGNORECASE)
# Column names of the step table -> metric names (`loss` is total_loss's name before 2018).
COLUMN_METRIC = {"total_loss": "loss", "loss": "loss", "top_1_accuracy": "top1_accuracy",
                 "top_5_accuracy": "top5_accuracy"}


def _task(meta: dict) -> str | None:
    """`worker:0` for a distributed run's Devices line, `rank:0` for the MPI rank read of a Horovod
    run (Devices `horovod/gpu:0`, ...), None for a local run."""
    devices = meta.get("devices", "")
    if m := DEVICE_TASK.search(devices):
        return f"{m[1]}:{m[2]}"
    return f"rank:{meta['mpi_rank']}" if "mpi_rank" in meta and "horovod/" in devices else None


# Open MPI's --tag-output, after --timestamp-output's "Mon Oct 15 23:15:14 2018" if given
MPI_TAG = re.compile(r"^(?:\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[(\d+),(\d+)\]<(?:stdout|stderr)>:")
# Kubeflow's tf-cnn launcher re-logs the script's lines: "INFO|2019-02-13T23:02:11|/opt/launcher.py|27| "
LAUNCHER = re.compile(r"^[A-Z]+\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\|[^|]+\|\d+\| ")


def _own_lines(lines, result: ParseResult):
    """The script's own lines: a launcher's prefix stripped, and of MPI-tagged output the untagged
    lines and the lowest rank's, their tags stripped."""
    lines = [(no, line[m.end():] if (m := LAUNCHER.match(line)) else line) for no, line in lines]
    ranks = {int(m[2]) for _, line in lines if (m := MPI_TAG.match(line))}
    if not ranks:
        return lines
    rank = result.meta["mpi_rank"] = min(ranks)
    result.meta["mpi_ranks"] = len(ranks)
    kept = []
    for no, line in lines:
        m = MPI_TAG.match(line)
        if not m:
            kept.append((no, line))
        elif int(m[2]) == rank:
            kept.append((no, line[m.end():]))
    return kept


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    lines = _own_lines(lines, result)
    columns = None
    last_step = 0
    total_line = None
    for no, line in lines:
        if h := HEADER_FIELD.match(line):
            key = h[1].lower().replace(" ", "_")
            if key == "model" and "model" in result.meta:
                raise LogError(f"line {no}: a second 'Model:' header (two logs interleaved or concatenated?)")
            result.meta[key] = h[2]
        elif c := COLUMNS.match(line):
            if columns is not None:
                raise LogError(f"line {no}: a second step table header (two logs interleaved or concatenated?)")
            columns = c[1].split()
            unknown = [name for name in columns if name not in COLUMN_METRIC]
            if unknown:
                raise LogError(f"line {no}: step table column(s) {', '.join(unknown)} unknown to this parser")
        elif s := STEP.match(line):
            values = s[5].split()
            if columns is None:
                columns = HEADLESS_COLUMNS.get(len(values))
                if columns is None:
                    raise LogError(f"line {no}: a step line of {len(values)} values before any step "
                                   "table header")
                result.meta["columns"] = f"no step table header: {', '.join(columns)} taken from line {no}"
            if total_line is not None:
                raise LogError(f"line {no}: a step line after the total (two logs interleaved?)")
            step = int(s[1])
            if step <= last_step:
                raise LogError(f"line {no}: step {step} after step {last_step} "
                               "(two logs interleaved or concatenated, or several processes' output "
                               "without MPI rank tags?)")
            last_step = step
            if len(values) != len(columns):
                raise LogError(f"line {no}: {len(values)} values for the {len(columns)} columns "
                               f"{', '.join(columns)}")
            task = _task(result.meta)
            result.rows.append(row("worker_images_per_s", float(s[2]), step=step, task=task) if task
                               else row("images_per_s", float(s[2]), step=step))
            for name, text in zip(columns, values):
                try:
                    value = float(text)
                except ValueError:
                    raise LogError(f"line {no}: {name} {text!r} is not a number") from None
                if COLUMN_METRIC[name] == "loss" and FORWARD_ONLY.search(result.meta.get("mode", "")):
                    result.meta["loss_not_computed"] = "forward-only mode prints 0 for the loss"
                elif math.isfinite(value):
                    result.rows.append(row(COLUMN_METRIC[name], value, step=step, task=task))
                else:
                    result.meta.setdefault("nonfinite", []).append(f"{name} at step {step}")
        elif t := TOTAL.match(line):
            if total_line is not None:
                raise LogError(f"line {no}: a second 'total images/sec' (line {total_line} was the "
                               "first): two logs interleaved or concatenated?")
            total_line = no
            result.rows.append(row("images_per_s", float(t[1]), task=_task(result.meta)))
        elif e := EVAL.match(line):
            result.rows.append(row("top1_accuracy", float(e[1])))
            result.rows.append(row("top5_accuracy", float(e[2])))
            total_line = total_line or no
    if not result.rows:
        return ParseResult.unparseable(
            f"{NO_LINES} tf_cnn_benchmarks' format: no step line and no 'total images/sec' line")
    return result.close(f"no 'total images/sec' line (last step printed: {last_step})"
                        if total_line is None else None, cut=cut)


parse = line_parser(_parse)


# ---------------------------------------------------------------- launcher

MODELS = ("alexnet", "inception3", "resnet50", "vgg16")  # the specs' names are the script's


def _count(ctx: runner.RunContext, value, name: str) -> int:
    runner.unstated(ctx.scale, name, value)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or number != float(value):
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: {name} must be a positive whole number, got {value!r}")
    return number


def layout(ctx: runner.RunContext) -> dict:
    """Workers, parameter servers, where they go, and each worker's devices, from the point."""
    params = {**ctx.fixed, **ctx.point}
    needs = ctx.spec["scales"][ctx.scale].get("needs") or []
    device = str(params.get("worker_device", params.get("device", "gpu" if "gpu" in needs else "cpu")))
    device = "gpu" if "gpu" in device else "cpu"
    workers = _count(ctx, params.get("workers", params.get("nodes")), "nodes")
    ps = _count(ctx, params.get("parameter_servers", 1), "parameter_servers")
    nodes = _count(ctx, params["nodes"], "nodes") if "nodes" in params else workers
    per_node = params.get("gpus_per_node", 1) if device == "gpu" else 1
    return {"device": device, "workers": workers, "ps": ps, "gpus": _count(ctx, per_node, "gpus_per_node"),
            "batch": _count(ctx, params.get("batch"), "batch"),
            # the paper's nodes leave room for parameter servers of their own (ps on CPU)
            "ps_apart": "workers" in params and nodes >= workers + ps}


def batch_counts(ctx: runner.RunContext) -> list[str]:
    """The script's counted and warm-up batches from the point's `steps` and `warmup_steps`;
    where unset, its own (100 after 10)."""
    return [f"{flag}={_count(ctx, setting(ctx, key), key)}"
            for key, flag in (("steps", "--num_batches"), ("warmup_steps", "--num_warmup_batches"))
            if setting(ctx, key) is not None]


def hosts_for(lay: dict) -> tuple[list[str], list[str]]:
    """(host of each worker task, host of each parameter server)."""
    gpu = lay["device"] == "gpu"
    candidates = provenance.workers(gpu=gpu)
    if len(candidates) < lay["workers"]:
        raise NotRunnable(f"{lay['workers']} worker task(s), one per node, need as many workers"
                               f"{' of group gpu' if gpu else ''}; the cluster has {len(candidates)}")
    worker_hosts = candidates[:lay["workers"]]
    if lay["ps_apart"]:
        spare = [h for h in provenance.workers() if h not in worker_hosts]
        if len(spare) < lay["ps"]:
            raise NotRunnable(f"{lay['ps']} parameter server(s) on nodes of their own need "
                                   f"{lay['ps']} more workers; the cluster has {len(spare)} more")
        return worker_hosts, spare[:lay["ps"]]
    return worker_hosts, [worker_hosts[i % len(worker_hosts)] for i in range(lay["ps"])]


def launch(ctx: runner.RunContext) -> runner.LaunchResult:

    found = capabilities.tf_cnn_benchmarks_script()
    if found is None or not provenance.present(found):
        raise NotRunnable(capabilities.TF_CNN_BENCHMARKS_WHERE + (f" (no {found})" if found else ""))
    network = str(ctx.point.get("network", "ipoib"))
    link, tf1 = tf_cluster.transport(network, "tf_cnn_benchmarks")
    env = hadoop.stack_env()
    python = tf1.python if tf1 else env.get("DLOBD_PYTHON")
    if not provenance.present(python):
        raise NotRunnable("no Python with TensorFlow (DLOBD_PYTHON; run `make provision`)")
    model = str(ctx.point.get("model", ctx.spec.get("model")))
    if model not in MODELS:
        raise NotRunnable(f"model {model}: not one this launcher gives tf_cnn_benchmarks ({', '.join(MODELS)})")
    lay = layout(ctx)
    if lay["device"] == "gpu":
        tf_cluster.refuse_cpu_only(python, tf1.source if tf1 else tf_cluster.STACKS_BUILD, env, ctx.dry_run)
    worker_hosts, ps_hosts = (capabilities.worker_addresses(link, hosts) for hosts in hosts_for(lay))
    ports, chosen = worker_ports([*worker_hosts, *ps_hosts], ctx.dry_run)
    tasks = ([tf_cluster.Task("worker", i, h, ports[i], True, ports_chosen=chosen[h])
              for i, h in enumerate(worker_hosts)]
             + [tf_cluster.Task("ps", i, h, ports[len(worker_hosts) + i], False, ports_chosen=chosen[h])
                for i, h in enumerate(ps_hosts)])
    common = [f"--ps_hosts={','.join(f'{t.host}:{t.port}' for t in tasks if t.job == 'ps')}",
              f"--worker_hosts={','.join(f'{t.host}:{t.port}' for t in tasks if t.job == 'worker')}",
              "--variable_update=parameter_server", f"--server_protocol={link.settings['protocol']}",
              f"--model={model}", f"--batch_size={lay['batch']}", f"--num_gpus={lay['gpus']}",
              f"--device={lay['device']}", *batch_counts(ctx)]
    adir = str(Path(ctx.attempt_dir).resolve())
    mpi_name = tf_cluster.mpi_of(link.settings["protocol"])
    for t in tasks:
        # parameter servers hold the variables on CPU, as tfgrpc-fig4 states (ps_device: cpu)
        own = {"CUDA_VISIBLE_DEVICES": ""} if t.job == "ps" else {}
        tf_cluster.place(t, [python, str(found), f"--job_name={t.job}", f"--task_index={t.index}", *common],
                         {"TF_CPP_MIN_LOG_LEVEL": "1", **own}, adir, rank=mpi_name is not None)
    result = tf_cluster.run_tasks(ctx, tasks, env, mpi_name)
    result.labels = {"network": network, "protocol": link.settings["protocol"], "device": lay["device"],
                     "tf_build": tf1.source if tf1 else tf_cluster.STACKS_BUILD,
                     "gpus_per_worker": str(lay["gpus"]), "batch_per_device": str(lay["batch"]),
                     "parameter_servers": str(lay["ps"]),
                     "data": runner.data_label(ctx.spec["scales"][ctx.scale].get("dataset", ctx.spec.get("dataset")))}
    if not ctx.dry_run:
        result.versions = {"stack": f"tf_cnn_benchmarks ({found}) on {python}"}
        result.hosts = [{"name": h, "address": h, "roles": [t.name for t in tasks if t.host == h]}
                        for h in dict.fromkeys(t.host for t in tasks)]
    return result
