"""CaffeOnSpark: Yahoo's Caffe on Spark executors (github.com/yahoo/CaffeOnSpark at commit
19df500, its caffe-public submodule yahoo/caffe at fc0a02e): the paper profile's build on
Spark 1.6 and Java 8, or the modern profile's, the same sources with the role's patch series
(Spark 3.5, Scala 2.12, Java 17; the stack setting CAFFEONSPARK_PROFILE says which). One Caffe
solver process per executor; the executors exchange gradients over sockets
(`-connection ethernet`) or over InfiniBand verbs (`infiniband`).

Parser: a run's logs are the driver's stderr (the attempt's stderr.log: client mode) and
each executor's YARN container stderr (`containers/<container>/stderr`, kept by
dlobd.cluster.hadoop.save_applications). Formats, from the sources named above:
- log4j lines of CaffeOnSpark's Scala classes, in any layout with Spark 1.6's default time
  stamp `yy/MM/dd HH:mm:ss` first (CaffeOnSpark.scala, CaffeProcessor.scala):
    driver:   `rank = <r>, address = <...>, hostname = <host>` per executor;
              `Requested # of executors: N actual # of executors:M. ...` (a failed start)
    executor: `my rank is <r>`; `Model saving into file at the end of training:<path>`
              (rank 0, once its solver has run every iteration); `Train solver exception`
- Caffe's glog solver lines of each executor (solver.cpp's `Iteration N, loss = x`, and the
  interleaved validation's `Iteration N, Testing net (#0)` / `Test net output #k: name = v`
  from caffe-distri's CaffeNet.cpp), read by dlobd.stacks.shared.caffe_solver.SolverLines. CaffeOnSpark
  steps its solvers one iteration at a time (Solver::Step(1)), so no `Optimization Done.`.
The releases' wordings (tests/data/logs/real/caffeonspark/ holds their real output): Spark
1.x's log4j with package-qualified logger names (`INFO caffe.CaffeProcessor:`, 2016) or
without (`INFO BlockManager:`), the caffe-public solver lines of BVLC rc3 (`Iteration N, loss =
x`) and later (dlobd.stacks.caffe reads every Caffe wording).
Rows: per executor (task `rank:<r>`) the solver's loss, wall_clock_s, test accuracy/loss;
its train_time_s (first to last displayed iteration). An executor log of rank 0 is finished
with its model-saving line, which only rank 0 prints, so a log with it is rank 0's even where
its `my rank is` line is not in it; other ranks print no end line (finished by design). A
driver log gives events (rank placement) and no rows. CaffeOnSpark's own failure lines (the
driver's `Requested # of executors: N actual # of executors:M`, an executor's `Train solver
exception`) make a log of its format that did not reach its end (event `failure`); a second
executor check in one driver log is two logs mixed. With the run's YARN record (`yarn/*.json`)
the run gets end_to_end_s, the application's submission to its end, and a failed or killed
application makes the run unfinished, naming YARN's diagnostics.

Launcher: `spark-submit --master yarn --deploy-mode client` of
`com.yahoo.ml.caffe.CaffeOnSpark` from the build of the point's device, whose home the stack
setting CAFFEONSPARK_HOME_<DEVICE> names (CPU_OPENBLAS, CPU_MKL, GPU, GPU_CUDNN; role
caffeonspark records one per device of caffeonspark_builds, and CAFFEONSPARK_LEFT_OUT_<DEVICE>,
the reason, for a build it left out: the point is then not runnable with it):
`<home>/lib/caffe-grid-0.1-SNAPSHOT-jar-with-dependencies.jar` and the native libraries beside
it (with CAFFEONSPARK_LIBRARY_PATH: CUDA, cuDNN, MKL) as the driver's library path and the
executors' LD_LIBRARY_PATH; one BLAS thread per executor core (OPENBLAS_NUM_THREADS, or
MKL_NUM_THREADS and MKL_THREADING_LAYER=GNU for cpu-mkl), and a cpu-mkl run's versions name its
MKL (CAFFEONSPARK_MKL_VERSION). Options (caffe-grid's Config.scala):
`-train -persistent -conf solver.prototxt -clusterSize <nodes> -devices <per node>
-connection ethernet|infiniband -model <HDFS path>`; `-output` is read only by `-test` and
`-features`, which these experiments do not run. On YARN CaffeOnSpark takes the cluster size
from spark.executor.instances, so `--num-executors` is the point's nodes, one executor per
node: each asks for every vcore of a NodeManager (DLOBD_YARN_VCORES), and for a container so
large that no second one fits there (hadoop.executor_container_mb: YARN's capacity scheduler
places by memory alone). The solver and net
are the project's (workloads/caffe-nets/, rendered per point into the attempt and shipped
with `--files`): solver_mode CPU or GPU from the device, the per-node batch from the spec's
batch rule (nodes x batch = 128), validation only where the metric is an accuracy. The data
are LMDBs in HDFS (`/dlobd/data/lmdb/<dataset>/{train,test}`), staged from
`$CAFFEONSPARK_LMDB_DIR/<dataset>` (role caffeonspark: `$DLOBD_DATA_DIR/lmdb`), the data set
the scale names or else the model's; the ILSVRC12 subset is a registered download. A scale may
shorten the solver (fixed `iterations`, `test_interval`), train a shrunk net (`model`: the
-mini nets), size the executors (`executor_memory`, `executor_overhead_mb`, `executor_cores`)
and run several executors on fewer NodeManagers (`hosts`: processes for nodes, labelled). The
network axis goes through config/networks.yaml; CaffeOnSpark's RDMA connection exists only for
GPU solvers (caffe-distri's RDMACaffeNet checks it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.spec.metrics import row
from dlobd.stacks import (
    NO_LINES,
    LogError,
    ParseResult,
    line_parser,
    runner,
    setting,
    yarn_application_span,
)
from dlobd.stacks.shared.caffe_nets import models, templates
from dlobd.stacks.shared.caffe_solver import GLOG, THREAD, GlogClock, SolverLines

LOG_FILES = ("stderr.log", "containers/*/stderr")

MAIN_CLASS = "com.yahoo.ml.caffe.CaffeOnSpark"
JAR = "caffe-grid-0.1-SNAPSHOT-jar-with-dependencies.jar"
DEVICES = ("cpu-openblas", "cpu-mkl", "gpu", "gpu-cudnn")
# the spec's batch rule: nodes x per-node batch = this global batch (DLoBD Sec. 4.1)
GLOBAL_BATCH = 128
EXECUTOR_MEMORY = "8g"
# Caffe's blobs and the LMDB pages live outside the JVM heap
EXECUTOR_OVERHEAD_MB = 6144
DRIVER_MEMORY = "4g"

# log4j, Spark 1.6's default layout: `16/01/20 12:34:56 INFO CaffeProcessor: my rank is 0`
LOG4J_TIME = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)\b")
RANK_ADDRESS = re.compile(r"\brank = (\d+), address = (.*), hostname = (\S+)\s*$")
MY_RANK = re.compile(r"\bmy rank is (\d+)\s*$")
MODEL_SAVED = re.compile(r"\bModel saving into file at the end of training:(\S*)")
EXECUTORS_SHORT = re.compile(r"\bRequested # of executors: (\d+) actual # of executors:(\d+)")
SOLVER_FAILED = re.compile(r"\b(Train solver exception|Transformer thread failed)\b")
JAVA_ERROR = re.compile(r"^((?:java|scala|org|com)\.[\w.$]*(?:Exception|Error))(?::\s*(.*))?")


# ---------------------------------------------------------------------------- parser

def _log4j_time(no: int, line: str) -> str | None:
    m = LOG4J_TIME.match(line)
    if not m:
        return None
    try:
        return datetime.strptime(m[1], "%y/%m/%d %H:%M:%S").isoformat()
    except ValueError:
        raise LogError(f"line {no}: {m[1]!r} is not a log4j time stamp") from None


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    clock = GlogClock()
    solver = SolverLines(result)
    rank = None
    saved = None
    placed = {}
    errors = []
    failures = []
    short_at = None  # line of the driver's executor check that failed
    for no, line in lines:
        if g := GLOG.match(line):
            solver.read(no, clock.stamp(no, g), g[7], THREAD.match(line)[1])
            continue
        if m := MY_RANK.search(line):
            if rank is not None:
                raise LogError(f"line {no}: a second 'my rank is' line (rank {rank} before, now {m[1]}): "
                               "two executor logs interleaved or concatenated?")
            rank = int(m[1])
            solver.task = f"rank:{rank}"
            result.events.append({"time": _log4j_time(no, line), "event": "executor_rank",
                                  "detail": str(rank), "line": no})
        elif m := RANK_ADDRESS.search(line):
            r = int(m[1])
            if r in placed:
                raise LogError(f"line {no}: rank {r} placed twice (line {placed[r]['line']} first): "
                               "two driver logs interleaved or concatenated?")
            placed[r] = {"host": m[3], "line": no}
            result.events.append({"time": _log4j_time(no, line), "event": "rank_placed",
                                  "detail": f"{r}@{m[3]}", "line": no})
        elif m := MODEL_SAVED.search(line):
            if saved is not None:
                raise LogError(f"line {no}: the model is saved a second time (line {saved} first): "
                               "two logs concatenated?")
            saved = no
            result.meta["model_path"] = m[1]
            result.events.append({"time": _log4j_time(no, line), "event": "model_saved", "line": no})
        elif m := EXECUTORS_SHORT.search(line) or SOLVER_FAILED.search(line):
            # CaffeOnSpark's own word that the run failed: a log of its format, and no normal end
            if m.re is EXECUTORS_SHORT and short_at is not None:
                raise LogError(f"line {no}: a second check of the executors' number (line {short_at} "
                               "first): two driver logs interleaved or concatenated?")
            short_at = no if m.re is EXECUTORS_SHORT else short_at
            failure = (f"{m[2]} of the {m[1]} requested executors registered" if m.re is EXECUTORS_SHORT
                       else m[1])
            failures.append(failure)
            errors.append(failure)
            result.events.append({"time": _log4j_time(no, line), "event": "failure", "detail": failure,
                                  "line": no})
        elif m := JAVA_ERROR.match(line.strip()):
            errors.append(m[0][:200])
    solver.close()
    if placed:
        result.meta["ranks"] = {r: p["host"] for r, p in sorted(placed.items())}
    if errors:
        result.meta["error"] = "; ".join(dict.fromkeys(errors))
    if not result.rows and not result.events:
        reason = (f"{NO_LINES} CaffeOnSpark's format: no Caffe solver line and no CaffeOnSpark "
                  "driver or executor line")
        if errors:
            reason += f"; the log shows {result.meta['error']}"
        return ParseResult.unparseable(reason)
    missing = None
    if rank == 0 and saved is None:
        missing = (f"rank 0 has no 'Model saving into file at the end of training' line "
                   f"(last iteration {solver.last_iter})")
    elif result.rows and rank is None and saved is None:
        # (only rank 0 saves the model, so a log with the saving line is rank 0's, finished)
        missing = "solver lines without CaffeProcessor's 'my rank is' line"
    shown = f"the log shows {result.meta['error']}" if errors else None
    result.close(missing, shown if failures else None, cut=cut)
    if result.finished and rank is not None and (span := solver.training_span_s()) is not None:
        result.rows.append(row("train_time_s", span, task=f"rank:{rank}"))
    if errors and not failures and result.reason:
        result.reason += f"; {shown}"
    return result


parse = line_parser(_parse)


# end_to_end_s and the application's final state from the run's YARN record
parse_records = yarn_application_span


# ---------------------------------------------------------------------------- launcher

def plan_point(ctx: runner.RunContext) -> dict:
    """Model, device, nodes, batch, network and connection of one point, checked; raises
    NotRunnable for what the cluster lacks, ValueError for a bad point."""
    labels = {}
    # a scale's `model` stands in for the paper's (the shrunk -mini nets, named as substitutions)
    model = str(setting(ctx, "model", ctx.spec.get("model")))
    if model not in models():
        raise ValueError(f"{ctx.spec['id']}: model {model!r} has no CaffeOnSpark net here "
                         f"(workloads/caffe-nets/models.yaml has {', '.join(models())})")
    # a device the paper leaves unstated comes from the scale's `assumed` (in fixed)
    device = setting(ctx, "device")
    if device not in DEVICES:
        raise ValueError(f"{ctx.spec['id']}: device {device!r} is none of {', '.join(DEVICES)}")
    # a GPU device's executors go to the GPU workers only (hadoop.gpu_workers): the count is theirs
    gpu = device.startswith("gpu")
    workers, placed = hadoop.gpu_workers(f"device {device}") if gpu else (hadoop.executor_workers(), {})
    nodes, label = runner.count_within(ctx, "nodes", len(workers), hadoop.workers_phrase(gpu))
    if label:
        labels["assumed"] = {"nodes": label}
    per_node = int(ctx.fixed.get("devices_per_node", 1))
    if "batch_rule" in ctx.fixed:
        if GLOBAL_BATCH % (nodes * per_node):
            raise ValueError(f"{ctx.spec['id']}: the global batch {GLOBAL_BATCH} does not split over "
                             f"{nodes} nodes x {per_node} devices")
        batch = GLOBAL_BATCH // (nodes * per_node)
    else:
        batch = models()[model]["batch"]
    network = str(ctx.point.get("network", ctx.fixed.get("network", "ipoib")))
    connection = capabilities.require_network("caffeonspark", network).settings["connection"]
    # the scale's data set where it names one (the synthetic CIFAR-10 here), else the model's
    dataset = str(ctx.spec.get("scales", {}).get(ctx.scale, {}).get("dataset") or models()[model]["dataset"])
    if connection == "infiniband" and not gpu:
        raise NotRunnable(f"device {device} over {network}: CaffeOnSpark's RDMA connection "
                               "works for GPU solvers only (caffe-distri's RDMACaffeNet)")
    if gpu and (lacking := capabilities.missing(["gpu"])):
        raise NotRunnable(f"device {device}: " + "; ".join(lacking))
    return {"model": model, "device": device, "nodes": nodes, "devices": per_node, "batch": batch,
            "network": network, "connection": connection, "gpu": gpu, "dataset": dataset,
            "workers": workers, "placed": placed,
            "hosts": int(ctx.fixed["hosts"]) if "hosts" in ctx.fixed else None, "labels": labels}


def profile() -> str:
    """The build's profile: `paper` (the sources as they are) or `modern` (with the patch series)."""
    return provenance.stack_setting("CAFFEONSPARK_PROFILE") or "paper"


def build_home(device: str) -> Path:
    var = capabilities.caffeonspark_setting("HOME", device)
    home = provenance.stack_setting(var)
    if not home and (left_out := capabilities.caffeonspark_left_out(device)):
        raise NotRunnable(left_out)
    if not home:
        cluster = provenance.inventory()
        role = cluster.role_settings if cluster is not None else {}
        if device in (role.get("caffeonspark_host_builds") or []):
            raise NotRunnable(f"device {device}: no CaffeOnSpark build for it: the caffeonspark role builds it "
                              f"where it runs (dlobd_paper_stacks: [caffeonspark]; {var})")
        asks = [] if device in (role.get("caffeonspark_builds") or []) else [f"add {device} to caffeonspark_builds"]
        if role.get("caffeonspark_install_method") == "spack":
            asks.append("set caffeonspark_install_method to git or mirror, as the spack method builds one device "
                        "per host")
        mkl = capabilities.MKL_SOURCES if device == "cpu-mkl" else ""
        raise NotRunnable(f"device {device}: no CaffeOnSpark build for it: {' and '.join(asks)} (role caffeonspark, "
                          f"which records {var}){mkl}")
    return Path(home)


def placement(p: dict) -> list[str]:
    """The workers the point's executors may land on (a GPU point's: the GPU workers,
    plan_point); NotRunnable when too few. A scale whose fixed `hosts` is smaller than its nodes
    runs several executors on one NodeManager: processes for nodes, labelled on the run."""
    workers = p["workers"]
    if p["hosts"] is not None and p["nodes"] > p["hosts"]:
        if len(workers) < p["hosts"]:
            raise NotRunnable(f"{p['hosts']} host(s): the cluster has {len(workers)} "
                              f"{hadoop.workers_phrase(p['gpu'])}")
        p["labels"]["nodes"] = (f"{p['nodes']} executors on {p['hosts']} NodeManager host(s): "
                                "processes for nodes")
    elif p["nodes"] > len(workers):
        raise NotRunnable(f"{p['nodes']} nodes: the cluster has {len(workers)} {hadoop.workers_phrase(p['gpu'])}")
    return workers


def check_net(home: Path, net: Path) -> None:
    """Parse a net definition as caffe.NetParameter with protoc and the build's caffe.proto
    (<home>/proto, role caffeonspark), as CaffeOnSpark's driver would only after Spark started:
    one that does not parse raises ValueError naming the file and protoc's line:column."""
    proto = home / "proto" / "caffe.proto"
    protoc = shutil.which("protoc")
    if not proto.is_file() or protoc is None:
        raise FileNotFoundError(f"{proto if not proto.is_file() else 'protoc'}: missing, so the net definition "
                                "cannot be checked (the caffeonspark role installs both)")
    with net.open("rb") as text:
        done = subprocess.run([protoc, f"--proto_path={proto.parent}", "--encode=caffe.NetParameter", proto.name],
                              stdin=text, capture_output=True)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().replace("input:", "line ").splitlines()
        raise ValueError(f"{net}: not a Caffe net definition: " + "; ".join(said))


def lmdb_dir() -> Path:
    """Where the caffeonspark role made the LMDBs (CAFFEONSPARK_LMDB_DIR, else
    $DLOBD_DATA_DIR/lmdb)."""
    given = provenance.stack_setting("CAFFEONSPARK_LMDB_DIR")
    return Path(given) if given else Path(provenance.stack_setting("DLOBD_DATA_DIR") or "") / "lmdb"


def hdfs_paths(dataset: str) -> dict:
    """The HDFS paths of a data set's LMDBs."""
    return {part: f"/dlobd/data/lmdb/{dataset}/{part}" for part in ("train", "test")}


def hdfs_uri(path: str) -> str:
    return (provenance.stack_setting("DLOBD_HDFS_URI") or "hdfs://").rstrip("/") + path


def render(ctx: runner.RunContext, p: dict, uris: dict) -> dict:
    """The solver and net of a point as text: {file name: text}."""
    m = models()[p["model"]]
    env = templates()
    net = env.get_template(m["template"]).render(
        train_source=uris["train"], test_source=uris["test"], batch=p["batch"], test_batch=m["test_batch"],
        input=m["input"], classes=int(ctx.fixed.get("classes", 10)))
    validate = ctx.spec["metric"]["name"].endswith("accuracy")
    # a scale may shorten the reference run (fixed `iterations`, `test_interval`)
    settings = {**m["solver"], **{key: int(ctx.fixed[name]) for key, name in
                                  (("max_iter", "iterations"), ("test_interval", "test_interval"))
                                  if name in ctx.fixed}}
    solver = env.get_template("solver.prototxt.j2").render(
        net="net.prototxt", solver=settings, validate=validate, test_iter=m["test_iter"],
        snapshot_prefix=p["model"], mode="GPU" if p["gpu"] else "CPU")
    return {"solver.prototxt": solver, "net.prototxt": net}


def openblas_kernels(device: str) -> dict:
    """The OpenBLAS kernels of a cpu-openblas run on this host (capabilities.openblas_kernels);
    {} for the other devices and for an inventory's cluster, whose OpenBLAS is not this host's."""
    if device != "cpu-openblas" or provenance.inventory() is not None:
        return {}
    return capabilities.openblas_kernels()


def blas_env(device: str, cores: str, kernels: dict) -> dict:
    """The executors' BLAS threads: one per core the executor has, as OpenBLAS and MKL would
    otherwise start one per core of the host in every executor; OpenBLAS's kernels where
    `kernels` (openblas_kernels) names them."""
    if device != "cpu-mkl":
        return {"OPENBLAS_NUM_THREADS": cores,
                **({"OPENBLAS_CORETYPE": kernels["coretype"]} if kernels.get("coretype") else {})}
    # libmkl_rt's default layer loads Intel's OpenMP (libiomp5), which a site's MKL folder may not
    # hold and the role's wheels leave out; GNU's libgomp comes with the compiler of the build
    return {"MKL_NUM_THREADS": cores, "MKL_THREADING_LAYER": "GNU"}


def blas_versions(device: str, kernels: dict) -> tuple[dict, str]:
    """A run's BLAS: (for its versions {'mkl': the version of the MKL the cpu-mkl build links, as the
    caffeonspark role records it (CAFFEONSPARK_MKL_VERSION; None where unrecorded)}, or {'openblas':
    the OpenBLAS and kernels of a cpu-openblas run (openblas_kernels)}, {} for the others; the same
    in short for the stack's name, '' where nothing is known)."""
    if device == "cpu-mkl":
        version = provenance.stack_setting("CAFFEONSPARK_MKL_VERSION")
        return {"mkl": version}, f", MKL {version}" if version else ""
    if kernels:
        ran = f"{kernels['coretype'] or kernels['core']} kernels"
        return {"openblas": f"{kernels['version']}, {ran} ({kernels['why']})"}, f", {kernels['version']} {ran}"
    return {}, ""


def command(ctx: runner.RunContext, p: dict, home: Path, files: list[Path], model_uri: str) -> list[str]:
    spark_home = hadoop.stack_spark_home("caffeonspark") if profile() == "paper" else \
        provenance.stack_setting("SPARK_HOME")
    if not spark_home:
        raise FileNotFoundError("SPARK_HOME is not set: is Spark provisioned (3.5 for the modern profile's "
                                "CaffeOnSpark)?")
    libs = ":".join(filter(None, [str(home / "lib"), provenance.stack_setting("CAFFEONSPARK_LIBRARY_PATH")]))
    # one executor per node takes a NodeManager's vcores; several on one share them
    cores = str(ctx.fixed["executor_cores"]) if "executor_cores" in ctx.fixed else \
        provenance.stack_setting("DLOBD_YARN_VCORES") or "1"
    heap = str(ctx.fixed.get("executor_memory", EXECUTOR_MEMORY))
    overhead = str(ctx.fixed.get("executor_overhead_mb", EXECUTOR_OVERHEAD_MB))
    if p["hosts"] is None:
        # one executor per node: YARN places by memory alone (vcores do not count), so the
        # container takes the rest of a NodeManager and no second one fits beside it
        overhead = hadoop.spread_overhead(1, hadoop.memory_mb(heap), int(overhead), ctx.dry_run)
    return [str(Path(spark_home) / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "client",
            "--num-executors", str(p["nodes"]), "--executor-cores", cores,
            "--executor-memory", heap,
            "--driver-memory", str(ctx.fixed.get("driver_memory", DRIVER_MEMORY)),
            "--files", ",".join(str(f) for f in files),
            "--conf", f"spark.yarn.executor.memoryOverhead={overhead}",
            "--conf", f"spark.yarn.am.memory={hadoop.AM_MEMORY_MB}m",
            *(arg for key, value in p["placed"].items() for arg in ("--conf", f"{key}={value}")),
            "--conf", f"spark.driver.extraLibraryPath={libs}",
            "--conf", f"spark.executorEnv.LD_LIBRARY_PATH={libs}",
            *(arg for name, value in blas_env(p["device"], cores, openblas_kernels(p["device"])).items()
              for arg in ("--conf", f"spark.executorEnv.{name}={value}")),
            "--conf", "spark.dynamicAllocation.enabled=false",
            "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=900s",
            "--conf", "spark.task.maxFailures=1", "--conf", "spark.yarn.maxAppAttempts=1",
            *hadoop.spark_conf(ctx),
            "--class", MAIN_CLASS, str(home / "lib" / JAR),
            "-train", "-persistent", "-conf", "solver.prototxt",
            "-clusterSize", str(p["nodes"]), "-devices", str(p["devices"]),
            "-connection", p["connection"], "-model", model_uri]


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    p = plan_point(ctx)
    home = build_home(p["device"])
    hosts = placement(p)
    dataset = p["dataset"]
    paths = hdfs_paths(dataset)
    texts = render(ctx, p, {part: hdfs_uri(path) for part, path in paths.items()})
    adir = Path(ctx.attempt_dir).resolve()
    files = [adir / name for name in texts]
    model_uri = hdfs_uri(f"/dlobd/models/{hadoop.app_tag(ctx)}/{p['model']}.caffemodel")
    if not ctx.dry_run:
        jar = home / "lib" / JAR
        if not jar.is_file():
            raise FileNotFoundError(f"{jar}: CaffeOnSpark's jar is missing (is the {p['device']} build "
                                    "of the caffeonspark role installed?)")
        local = lmdb_dir() / dataset
        if not (local / "train").is_dir():
            if dataset == "imagenet-subset":
                raise NotRunnable(f"{local}: no LMDB of the first 10 ILSVRC12 classes: ImageNet is "
                                       "a registered download (image-net.org); make train/ and test/ "
                                       "LMDBs of its first 10 classes there with Caffe's convert_imageset")
            raise FileNotFoundError(f"{local}/train: no LMDB of {dataset} (the caffeonspark role makes it)")
        for f, text in zip(files, texts.values()):
            f.write_text(text)
        check_net(home, adir / "net.prototxt")
        for part, path in paths.items():
            hadoop.hdfs_stage(local / part, path)
    argv = command(ctx, p, home, files, model_uri)
    result = runner.run_command(ctx, argv, env=None if ctx.dry_run else hadoop.stack_env(),
                              cwd=str(adir), yarn_tag=hadoop.app_tag(ctx))
    blas, named = blas_versions(p["device"], openblas_kernels(p["device"]))
    result.versions = {"stack": f"caffeonspark 19df500 {profile()} ({p['device']}{named})", **blas}
    result.labels = {"data": runner.data_label(dataset), "network": p["network"],
                     "connection": p["connection"], "device": p["device"],
                     "batch_per_node": str(p["batch"]), **p["labels"]}
    if ctx.dry_run:
        result.extra["files"] = dict(texts)
        result.hosts = [{"name": h, "address": h, "roles": ["workers"]} for h in hosts]
    else:
        result.hosts = hadoop.with_application_roles(provenance.cluster_hosts(),
                                                    hadoop.application_roles(ctx.attempt_dir))
    return result
