"""BigDL: Intel's deep learning library on Spark; its Scala training mains (e.g.
`com.intel.analytics.bigdl.dllib.models.lenet.Train`, `models.vgg.Train`) run through
`spark-submit` on Spark local, standalone or YARN.

Parser: reads the driver log that holds BigDL's DistriOptimizer lines (stderr with
BigDL's default log4j set-up; any log4j layout works, only the message is read; on YARN in
client mode that is the attempt's stderr.log, while the containers' logs hold none):

  [Epoch 1 12800/60000][Iteration 100][Wall Clock 21.56s] Trained 128.0 records in
      0.094 seconds. Throughput is 1355.85 records/second. Loss is 0.877942. ...
  [Epoch 1 ...][Iteration 469][Wall Clock ...] Epoch finished. Wall clock time is 5696.04 ms
  [...] Top1Accuracy is Accuracy(correct: 9290, count: 10000, accuracy: 0.929)
  [...] Top5Accuracy is Accuracy(correct: ..., accuracy: 0.99)
  [...] Loss is (Loss: 3198.36, count: 2000, Average Loss: 1.599)

Releases, as their DistriOptimizer words its lines: BigDL 0.1 and 0.2, and the paper's commit
a1f3a88 (May 2017, between them), print `... Train 128 in 0.094seconds. Throughput is ...
records/second. Loss is ...` and `Epoch finished. Wall clock time is 5696.04ms`; 0.3 on print
the lines above. Up to 0.4 the validation results come without the [Epoch ...] header, after
`[Wall Clock 1963.48s] Validate model...` (`top1 accuracy is Accuracy(...)` before 0.1.0):
they belong to the last iteration seen before them (none in a log that begins with them);
0.5 on give them the header. 2.x adds the optim method's hyper parameters after the loss, and
a log4j layout may put the message on a line of its own.

Rows: per iteration throughput_records_per_s, loss, wall_clock_s; per epoch epoch_time_s
(difference of BigDL's cumulative "Wall clock time" of consecutive epochs; none for an epoch
whose previous epoch's end the log does not hold, e.g. a paste that starts later), top1/top5
accuracy and test_loss of the validation; train_time_s (the last epoch's wall clock) when
the log reaches the end of its last epoch (and no validation it starts lacks its results).
BigDL prints no end-of-training line, so a log cut exactly between two epochs reads as
finished: the run's exit status tells the rest. A validation result twice in one
validation, or a validation starting before the previous one has a result, is two logs
interleaved. A log may start mid-run (a rotated file, a paste): its first [Epoch] line need
not be a trained iteration.

Launcher: the model's Scala main (VGG-16: `models.vgg.Train`, LeNet-5: `models.lenet.Train`,
under `dllib` in BigDL 2.x, at the package root in the paper's 0.x commit, as
$DLOBD_BIGDL_VERSION says; the scale's `model` setting may stand in for the spec's model) from
$DLOBD_BIGDL_JAR (with $DLOBD_BIGDL_CORE_JAR in 2.x) through `spark-submit --master yarn` in
client mode, so the driver, which reads the training data from a local folder and logs
DistriOptimizer's lines, writes them into the attempt's stderr.log. Settings: `cores` (the
point's or the fixed value: total executor cores, split evenly over the executors), `executors`
(default: `cores` over `executor_cores`, the paper's executor per node, else 1; laid out within
the cluster's nodes, plan_resources), `batch` (a multiple of the total cores, as BigDL
requires), `epochs`, optional `learning_rate`, `driver_memory`/`executor_memory` (default for
VGG: its measured live heap at the executor's cores and batch share, executor_heap, labelled;
else 3g). On a cluster of several workers the executors' containers are sized so that they
spread evenly over the NodeManagers (at most ceil(executors / workers) on each), as the papers
ran one per node. The data is $DLOBD_DATA_DIR/<the scale's dataset>, in CIFAR-10 binary format
for VGG and in MNIST's IDX files for LeNet; with `train_images` / `test_images` the first that
many records of it are copied into the attempt's `data/` and trained on instead. The network
axis goes through config/networks.yaml: vanilla Spark over TCP, or OSU RDMA-Spark (an installed
Spark distribution at $RDMA_SPARK_HOME with its own conf/, so SPARK_HOME and SPARK_CONF_DIR
switch to it), which needs an InfiniBand HCA.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

from dlobd import NotRunnable
from dlobd import spec as dspec
from dlobd.cluster import hadoop, provenance
from dlobd.spec.metrics import row
from dlobd.stacks import (
    NO_LINES,
    LogError,
    ParseResult,
    line_parser,
    positive_whole,
    runner,
    setting,
)

LOG_FILES = ("stderr.log", "stdout.log", "containers/*/stderr")

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|-?Infinity"
PREFIX = re.compile(
    r"\[Epoch (\d+) (\d+)/(\d+)\]\[Iteration (\d+)\]\[Wall Clock (" + NUM + r")s\] (.*)$")
# 0.3 on: "Trained 128.0 records in 0.094 seconds."; 0.1, 0.2 (a1f3a88): "Train 128 in 0.094seconds."
TRAINED = re.compile(
    r"^(?:Trained (" + NUM + r") records in|Train (" + NUM + r") in) (" + NUM + r") ?seconds\. "
    r"Throughput is (" + NUM + r") records/second\. Loss is (" + NUM + r")\.(?:\s|$)")
EPOCH_DONE = re.compile(r"^Epoch finished\. Wall clock time is (" + NUM + r") ?ms")  # 0.1, 0.2: "56232.8ms"
# before 0.1.0: "top1 accuracy is"; a validation result without the [Epoch] header (to 0.4)
# follows the log4j prefix, so the bare forms are searched after a separator
ACCURACY = re.compile(
    r"(?:^|\s)(?:Top([15])Accuracy|top([15]) accuracy) is Accuracy\(correct: (\d+), count: (\d+), "
    r"accuracy: (" + NUM + r")\)")
TEST_LOSS = re.compile(r"(?:^|\s)Loss is \(Loss: (" + NUM + r"), count: (\d+), Average Loss: (" + NUM + r")\)")
VALIDATE = re.compile(r"\[Wall Clock (" + NUM + r")s\] Validate model\.\.\.")
JAVA_ERROR = re.compile(r"((?:java|scala|org|com)\.[\w.$]*(?:Exception|Error))(?::\s*(.*))?")


def _validation(message: str, result: ParseResult, where: dict, validation: dict | None, no: int) -> bool:
    """Rows of one validation result line (accuracy or test loss); False if it is none.
    `validation`: the open validation ({line, seen}), where a result may come once."""
    if a := ACCURACY.search(message):
        metric = f"top{a[1] or a[2]}_accuracy"
        result.rows.append(row(metric, float(a[5]), **where))
        result.meta["test_records"] = int(a[4])
    elif t := TEST_LOSS.search(message):
        metric = "test_loss"
        result.rows.append(row(metric, float(t[3]), **where))
    else:
        return False
    if validation is not None:
        if metric in validation["seen"]:
            raise LogError(f"line {no}: {metric} a second time in the validation of line "
                           f"{validation['line']} (two logs interleaved or concatenated?)")
        validation["seen"].add(metric)
    return True


def _validate(validation: dict | None, no: int) -> dict:
    """A validation starts at line `no` ('Validate model...')."""
    if validation is not None and not validation["seen"]:
        raise LogError(f"line {no}: a validation starts before the one of line {validation['line']} "
                       "has a result (two logs interleaved or concatenated?)")
    return {"line": no, "seen": set()}


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    rows = result.rows
    last_iter = last_epoch = 0
    last_wall = -math.inf
    epoch_done = {}     # epoch -> cumulative wall clock (s) at its end
    validation = None   # since 'Validate model...': its line and the results seen
    thrown = cause = None
    for no, line in lines:
        m = PREFIX.search(line)
        if not m:
            # up to 0.4 the results follow 'Validate model...' without the [Epoch] header
            if validation is not None and _validation(line, result, dict(
                    step=last_iter or None, epoch=last_epoch or None,
                    wall_clock_s=last_wall if math.isfinite(last_wall) else None), validation, no):
                continue
            if VALIDATE.search(line):
                validation = _validate(validation, no)
            elif ("Exception in thread" in line or line.startswith("Caused by:")) and (
                    e := JAVA_ERROR.search(line)):
                # The first uncaught exception, and the last "Caused by:" as its root cause.
                if line.startswith("Caused by:"):
                    cause = e.group(0).strip()[:200]
                elif thrown is None:
                    thrown = e[1]
            continue
        epoch, total, it = int(m[1]), int(m[3]), int(m[4])
        wall, message = float(m[5]), m[6]
        if epoch < last_epoch or it < last_iter or wall < last_wall:
            raise LogError(f"line {no}: epoch {epoch} iteration {it} wall clock {wall}s comes after "
                           f"epoch {last_epoch} iteration {last_iter}: not one run's log in order "
                           "(two logs interleaved or concatenated?)")
        where = dict(step=it, epoch=epoch, wall_clock_s=wall)
        if t := TRAINED.match(message):
            if it == last_iter:
                raise LogError(f"line {no}: iteration {it} is reported twice "
                               "(two logs interleaved or concatenated?)")
            result.meta.setdefault("records_per_iteration", float(t[1] or t[2]))
            result.meta["epoch_records"] = total
            rows.append(row("throughput_records_per_s", float(t[4]), **where))
            if math.isfinite(loss := float(t[5])):
                rows.append(row("loss", loss, **where))
            else:
                result.meta.setdefault("nonfinite_loss_iterations", []).append(it)
            rows.append(row("wall_clock_s", wall, step=it, epoch=epoch))
            last_iter = it
            validation = None
        elif it != last_iter and last_iter:
            raise LogError(f"line {no}: a report for iteration {it} but the last trained "
                           f"iteration is {last_iter} (two logs interleaved?)")
        elif e := EPOCH_DONE.match(message):
            if epoch in epoch_done:
                raise LogError(f"line {no}: epoch {epoch} finishes twice (two logs interleaved?)")
            total_s = float(e[1]) / 1000.0
            epoch_done[epoch] = total_s
            # an epoch's time needs the previous epoch's end (or the start, for epoch 1)
            if epoch == 1 or epoch - 1 in epoch_done:
                rows.append(row("epoch_time_s", round(total_s - epoch_done.get(epoch - 1, 0.0), 9),
                                step=it, epoch=epoch, wall_clock_s=total_s))
        elif message.startswith("Validate model..."):
            validation = _validate(validation, no)
        else:
            _validation(message, result, where, validation, no)
        last_iter = last_iter or it  # a log that starts mid-run starts at its first report
        last_epoch, last_wall = epoch, wall
    error = f"{thrown} (caused by {cause})" if thrown and cause else (thrown or cause)
    if error:
        result.meta["error"] = error
    if not rows:
        reason = f"{NO_LINES} BigDL's format: no '[Epoch n a/b][Iteration i][Wall Clock ts]' line"
        if error:
            reason += f"; the log shows {error}"
        return ParseResult.unparseable(reason)
    result.close(None if last_epoch in epoch_done else
                 f"epoch {last_epoch} at iteration {last_iter} has no 'Epoch finished' line"
                 if last_epoch else "no '[Epoch n ...] Epoch finished' line",
                 f"the validation of line {validation['line']} has no result"
                 if validation is not None and not validation["seen"] else None, cut=cut)
    if result.finished:
        rows.append(row("train_time_s", epoch_done[last_epoch], epoch=last_epoch))
    elif error:
        result.reason += f"; the log shows {error}"
    return result


parse = line_parser(_parse)


# ---------------------------------------------------------------- launcher

# CIFAR-10 binary format, as BigDL's CIFAR mains read it from their -f folder
RECORD_BYTES = 1 + 3 * 32 * 32
TRAIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_FILE = "test_batch.bin"
# MNIST's IDX files, as BigDL's LeNet main reads them from its -f folder: (images, labels)
IDX_TRAIN = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
IDX_TEST = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# VGG's executor ran out of Java heap with 1g while training and with 2g when it sends the
# trained model (which carries every layer's activations of its batch share) back at the
# end (one or two cores, batch 16); the client-mode driver only holds the model and the
# CIFAR records. With the AM's container that is about 4.5 GB of the local YARN's 6 GB.
# The least executor heap, and a model's without a measured live heap (HeapUse).
EXECUTOR_MEMORY = "3g"
DRIVER_MEMORY = "1g"
# A heap this many times the live set leaves the collector room (3g held VGG's 2.0 GB at 2 cores).
HEAP_HEADROOM = 1.5


def _positive_int(ctx: runner.RunContext, name: str, default=None) -> int:
    return positive_whole(ctx, name, default, "BigDL")


class CifarBinary:
    """CIFAR-10's binary version: five training files and one test file of 3073-byte records."""

    name = "CIFAR-10 binary"

    @staticmethod
    def _records(path: Path) -> int:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing (a CIFAR-10 binary data set has "
                                    f"{', '.join(TRAIN_FILES)} and {TEST_FILE})")
        size = path.stat().st_size
        if size % RECORD_BYTES:
            raise ValueError(f"{path}: {size} bytes is not a whole number of {RECORD_BYTES}-byte "
                             "CIFAR-10 records")
        return size // RECORD_BYTES

    @classmethod
    def counts(cls, folder: Path) -> tuple[int, int]:
        return (sum(cls._records(folder / name) for name in TRAIN_FILES),
                cls._records(folder / TEST_FILE))

    @staticmethod
    def _first(paths, count: int) -> bytes:
        out = bytearray()
        for path in paths:
            if len(out) >= count * RECORD_BYTES:
                break
            with open(path, "rb") as fh:
                out += fh.read(count * RECORD_BYTES - len(out))
        return bytes(out)

    @classmethod
    def write_subset(cls, folder: Path, subset: Path, n_train: int, n_test: int) -> None:
        # all chosen training records in the first file; BigDL reads the other four empty
        (subset / TRAIN_FILES[0]).write_bytes(cls._first([folder / n for n in TRAIN_FILES], n_train))
        for name in TRAIN_FILES[1:]:
            (subset / name).write_bytes(b"")
        (subset / TEST_FILE).write_bytes(cls._first([folder / TEST_FILE], n_test))


class MnistIdx:
    """MNIST's IDX files: a big-endian header (magic, count, and for images rows and columns),
    then one byte per label or per pixel."""

    name = "MNIST IDX"

    @staticmethod
    def _header(path: Path) -> tuple[int, int, int]:
        """(count, header bytes, bytes per record) of one IDX file, checked against its size."""
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing (an MNIST data set has "
                                    f"{', '.join(IDX_TRAIN + IDX_TEST)})")
        with open(path, "rb") as fh:
            head = fh.read(4)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != 0x08:
                raise ValueError(f"{path}: not an IDX file of unsigned bytes (magic {head.hex()})")
            dims = [int.from_bytes(fh.read(4), "big") for _ in range(head[3])]
        header, record = 4 + 4 * len(dims), math.prod(dims[1:])
        if path.stat().st_size != header + dims[0] * record:
            raise ValueError(f"{path}: {path.stat().st_size} bytes, but its header says "
                             f"{dims[0]} records of {record} bytes")
        return dims[0], header, record

    @classmethod
    def _count(cls, folder: Path, pair: tuple[str, str]) -> int:
        images, labels = (cls._header(folder / name)[0] for name in pair)
        if images != labels:
            raise ValueError(f"{folder}: {pair[0]} has {images} images, {pair[1]} {labels} labels")
        return images

    @classmethod
    def counts(cls, folder: Path) -> tuple[int, int]:
        return cls._count(folder, IDX_TRAIN), cls._count(folder, IDX_TEST)

    @classmethod
    def write_subset(cls, folder: Path, subset: Path, n_train: int, n_test: int) -> None:
        for pair, count in ((IDX_TRAIN, n_train), (IDX_TEST, n_test)):
            for name in pair:
                _, header, record = cls._header(folder / name)
                with open(folder / name, "rb") as fh:
                    head, body = bytearray(fh.read(header)), fh.read(count * record)
                head[4:8] = count.to_bytes(4, "big")
                (subset / name).write_bytes(bytes(head) + body)


@dataclass(frozen=True)
class HeapUse:
    """An executor's live Java heap (MiB) training a model: its own part, one model replica
    per core, and the layers' activations and gradients of each image of the executor's share
    of a batch (BigDL splits a batch evenly over all cores)."""
    base_mb: int
    per_core_mb: int
    per_image_mb: int

    def live_mb(self, cores: int, images: int) -> int:
        return self.base_mb + self.per_core_mb * cores + self.per_image_mb * images


@dataclass(frozen=True)
class Model:
    main: str           # BigDL's Scala training main, under its package root
    data: type          # the format its main reads from its -f folder
    rate_option: str    # how that main takes the learning rate
    heap: HeapUse | None = None  # measured, for the executor heap it needs (executor_heap)

    def main_class(self, bigdl_version: str | None) -> str:
        """The main's class in this BigDL: 2.x moved the models under `dllib`; the 0.x code the
        paper ran (commit a1f3a88) has them at the package root, with the same options."""
        return f"{BIGDL_PACKAGE}.{'dllib.' if _is_2x(bigdl_version) else ''}{self.main}"


BIGDL_PACKAGE = "com.intel.analytics.bigdl"


def _is_2x(version: str | None) -> bool:
    # unset: the modern profile's BigDL 2.4; a commit id (the paper's a1f3a88) is 0.x code
    return not version or bool(re.match(r"[2-9]\.", version))


# the spec's (or the scale's `model` setting's) model -> how BigDL trains it
MODELS = {
    # `make bench-bigdl-heap`: BigDL 0.3.0 (Java 8, parallel collector), the most heap left
    # after a full collection through one epoch at 1, 2, 4 and 8 cores with 8 images a core and
    # at 4 cores with 2 a core (1467, 2182, 3500, 6022 and 1822 MiB), fitted within 45 MiB; larger
    # shares of a batch are extrapolated, as the activations grow with the images
    "vgg16": Model("models.vgg.Train", CifarBinary, "-l", HeapUse(865, 103, 68)),
    "lenet5": Model("models.lenet.Train", MnistIdx, "-r"),
}


def model_of(ctx: runner.RunContext) -> Model:
    model = str(setting(ctx, "model", ctx.spec.get("model")))
    if model not in MODELS:
        raise NotRunnable(f"model {model}: no BigDL training main for it here "
                               f"(known: {', '.join(MODELS)})")
    return MODELS[model]


def plan_resources(ctx: runner.RunContext) -> dict:
    """Executors, cores per executor, batch and epochs of a point, checked as BigDL needs and laid
    out within the cluster's nodes. `executors` where the scale sets it, else `cores` over the
    scale's `executor_cores` (the paper's executor per node), else 1. An executor bigger than a
    node (hadoop.node_cores) is split into as many as it takes, and `layout` says so; more
    executors than the workers hold is NotRunnable, naming the point, the cores and the nodes.
    `heap` and `heap_why`: the executors' heap and why that size (executor_heap)."""
    batch = _positive_int(ctx, "batch")
    per_executor = _positive_int(ctx, "executor_cores") if setting(ctx, "executor_cores") is not None else None
    node, where = hadoop.node_cores()
    workers = len(hadoop.executor_workers()) or 1
    # what provisioning gave the NodeManagers: the layout is sized before anything asks YARN
    memory = hadoop.rendered_nodemanager_memory_mb()
    cores, assumed = _cores(ctx, batch, per_executor, node, workers, where, memory)
    executors = (_positive_int(ctx, "executors") if setting(ctx, "executors") is not None
                 else -(-cores // per_executor) if per_executor else 1)
    if cores % executors:
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: {cores} cores do not split evenly over "
                         f"{executors} executors")
    if batch % cores:
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: batch {batch} is not a multiple of the "
                         f"{cores} executor cores (BigDL splits each batch evenly over them)")
    layout = None
    if node is not None and cores // executors > node:
        # the fewest executors that split the cores evenly, each within a node
        wanted = f"{executors} x {cores // executors}"
        executors = next(n for n in range(-(-cores // node), cores + 1) if cores % n == 0)
        layout = (f"{executors} executors x {cores // executors} cores: the spec's {wanted} cores per "
                  f"executor do not fit {where}")
    # nodes of unknown size hold one of the paper's executors each, as the paper ran them
    per_node = node // (cores // executors) if node is not None else 1 if per_executor else None
    if per_node is not None and executors > workers * per_node:
        raise NotRunnable(f"{ctx.spec['id']} {ctx.scale} {dspec.point_id(ctx.point)}: {cores} cores as "
                          f"{executors} executors x {cores // executors} cores need {-(-executors // per_node)} "
                          + (f"nodes of {node} cores" if node is not None else
                             "nodes, one executor each (declare dlobd_hardware.cores to fit more on a node)")
                          + f"; the cluster has {workers} {hadoop.workers_phrase()}; node size: {where}")
    r = {"executors": executors, "executor_cores": cores // executors, "cores": cores,
         "batch": batch, "epochs": _positive_int(ctx, "epochs"), "layout": layout, "assumed": assumed}
    r["heap"], r["heap_why"] = executor_heap(ctx, model_of(ctx), cores // executors, batch // executors)
    short = memory_shortfall(r["heap"], executors, workers, memory)
    if short:
        raise NotRunnable(f"executors of {r['heap']} heap" + (f" ({r['heap_why']})" if r["heap_why"] else "")
                          + f": {short}")
    return r


def memory_shortfall(heap: str, executors: int, workers: int, memory: int | None) -> str | None:
    """Why NodeManagers of `memory` MiB cannot hold `executors` containers of `heap` heap spread
    over `workers` (YARN places by memory alone; the ApplicationMaster's container may share any of
    them: hadoop.executor_container_mb), or None where they can or their memory is unknown."""
    if memory is None:
        return None
    step = hadoop.allocation_step_mb()
    container, am = hadoop.container_mb(hadoop.memory_mb(heap), step), hadoop.container_mb(hadoop.AM_MEMORY_MB, step)
    per_node = -(-executors // workers)
    if per_node * container <= memory - am:
        return None
    return (f"{per_node} executor(s) per NodeManager in containers of {container} MiB (Spark's default overhead, "
            f"in YARN's {step}-MiB steps): YARN offers {memory} MiB on its smallest NodeManager, which holds "
            f"{max(memory - am, 0) // container} beside the ApplicationMaster's {am} MiB")


def _cores(ctx: runner.RunContext, batch: int, per_executor: int | None, node: int | None, workers: int,
           where: str, memory: int | None) -> tuple[int, str | None]:
    """(the point's total cores, their label where assumed): stated, or an assumed count the scale
    leaves open (`within_cluster`) cut to the most this cluster lays out in executors of the
    paper's size (one a node where the node's size is unknown) that divides the batch and whose
    heaps the NodeManagers' `memory` holds (memory_shortfall; each executor's share of the batch,
    and so its heap, grows as there are fewer)."""
    if "cores" in ctx.point or "cores" not in dspec.within_cluster(ctx.spec["scales"][ctx.scale]):
        return _positive_int(ctx, "cores"), None
    step = min(per_executor or node or 1, node or per_executor or 1)
    slots = workers * (node // step if node else 1)
    model = model_of(ctx)
    usable = max((c for c in range(step, slots * step + 1, step) if batch % c == 0 and not memory_shortfall(
        executor_heap(ctx, model, step, batch // (c // step))[0], c // step, workers, memory)), default=0)
    held = f" whose heaps {memory} MiB NodeManagers hold" if memory is not None else ""
    return runner.count_within(ctx, "cores", usable, f"cores in executors of {step} on {workers} "
                                                     f"{hadoop.workers_phrase()} that divide batch {batch}{held} "
                                                     f"(node size: {where})")


def data_folder(folder: Path, train_images: int | None, test_images: int | None,
                attempt_dir: Path, have: tuple = (None, None)) -> Path:
    """The folder BigDL trains from: the data set's own, or, when `train_images` or
    `test_images` asks for fewer records than it has (`have`: its counts, where known),
    `<attempt>/data` holding the first records of it (prepare_data makes it)."""
    if train_images in (None, have[0]) and test_images in (None, have[1]):
        return folder
    return attempt_dir / "data"


def prepare_data(folder: Path, train_images: int | None, test_images: int | None,
                 attempt_dir: Path, data=CifarBinary) -> Path:
    """The folder to train from (data_folder), made: the first `train_images` / `test_images`
    records of `folder` (format `data`) written into `<attempt>/data` (BigDL reads every
    record of its folder). What was made is written to `<attempt>/prepare.log`."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: data set folder not found (is the datasets role "
                                "provisioned? see workloads/data/make_datasets.py)")
    have_train, have_test = data.counts(folder)
    for what, want, have in (("train_images", train_images, have_train),
                             ("test_images", test_images, have_test)):
        if want is not None and want > have:
            raise ValueError(f"{folder}: {what} {want} asked for, the data set has {have}")
    subset = data_folder(folder, train_images, test_images, attempt_dir, (have_train, have_test))
    with open(attempt_dir / "prepare.log", "x") as log:
        if subset == folder:
            log.write(f"training on {folder} as it is: {have_train} train, {have_test} test "
                      "records\n")
            return folder
        subset.mkdir()
        n_train, n_test = train_images or have_train, test_images or have_test
        data.write_subset(folder, subset, n_train, n_test)
        log.write(f"subset of {folder} ({data.name}) in {subset}: the first {n_train} of "
                  f"{have_train} train and the first {n_test} of {have_test} test records\n")
    return subset


def executor_heap(ctx: runner.RunContext, model: Model, cores: int, images: int) -> tuple[str, str | None]:
    """(the executors' heap, why that size or None where stated or the least): the point's
    `executor_memory`; else the model's live heap at an executor's `cores` and its `images` of a
    batch times HEAP_HEADROOM, in whole GiB, at least EXECUTOR_MEMORY, which a model not measured
    gets."""
    if (stated := setting(ctx, "executor_memory")) is not None:
        return str(stated), None
    if model.heap is None:
        return EXECUTOR_MEMORY, None
    live = model.heap.live_mb(cores, images)
    heap = f"{-(-max(hadoop.memory_mb(EXECUTOR_MEMORY), math.ceil(live * HEAP_HEADROOM)) // 1024)}g"
    if heap == EXECUTOR_MEMORY:
        return heap, None
    return heap, (f"{HEAP_HEADROOM:g} x the {live} MiB live heap measured for {cores} "
                  f"model replicas and {images} images of each batch")


def spark_install(ctx: runner.RunContext, env: dict) -> tuple[str, dict, str]:
    """spark-submit, its environment and the Spark flavour the point's network selects."""
    return hadoop.spark_install("bigdl", str(ctx.point.get("network", "loopback")), env, dry_run=ctx.dry_run)


def spread_conf(ctx: runner.RunContext, executors: int, heap: str) -> list[str]:
    """On several workers, each executor's container sized so that at most its share of them
    (hadoop.executors_per_node) fit a NodeManager: without it YARN places them by heartbeats and
    may give one worker two while another idles. The ApplicationMaster's memory is pinned as
    that sizing counts it. Nothing on one worker, whose NodeManager holds them all."""
    per_node = hadoop.executors_per_node(executors)
    if not per_node:
        return []
    heap_mb = hadoop.memory_mb(heap)
    overhead = hadoop.spread_overhead(per_node, heap_mb, hadoop.spark_overhead_mb(heap_mb), ctx.dry_run)
    # Spark 2.1's key (the paper profile's); Spark 3.5 reads it as spark.executor.memoryOverhead
    conf = hadoop.sized_memory_conf("spark.yarn.executor.memoryOverhead", overhead)
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def command(ctx: runner.RunContext, spark_submit: str, data: Path, env: dict, r: dict,
            flavour: str = "vanilla") -> list[str]:
    """BigDL's spark-submit for the point's resources `r` (plan_resources), on the Spark
    `flavour` spark_install chose."""
    model = model_of(ctx)
    jars = {}
    # BigDL 2.x keeps its native core in a jar of its own; the 0.x jar carries it
    for var in ("DLOBD_BIGDL_JAR", "DLOBD_BIGDL_CORE_JAR") if _is_2x(env.get("DLOBD_BIGDL_VERSION")) else (
            "DLOBD_BIGDL_JAR",):
        jar = env.get(var)
        if not jar or not provenance.present(jar):
            raise FileNotFoundError(f"{var}={jar or '(unset)'}: BigDL jar not found (is the "
                                    "dl_libs role provisioned?)")
        jars[var] = jar
    heap, sized = r["heap"], r["heap_why"]
    try:
        spread = spread_conf(ctx, r["executors"], heap)
    except NotRunnable as exc:
        raise NotRunnable(f"executors of {heap} heap{f' ({sized})' if sized else ''}: {exc}") from None
    argv = [spark_submit, "--master", "yarn", "--deploy-mode", "client",
            "--num-executors", str(r["executors"]), "--executor-cores", str(r["executor_cores"]),
            "--executor-memory", heap,
            "--driver-memory", str(setting(ctx, "driver_memory", DRIVER_MEMORY)),
            *spread,
            *(arg for key, value in hadoop.transport_conf(flavour).items() for arg in ("--conf", f"{key}={value}")),
            *hadoop.spark_conf(ctx),
            *(["--jars", jars["DLOBD_BIGDL_CORE_JAR"]] if "DLOBD_BIGDL_CORE_JAR" in jars else []),
            "--class", model.main_class(env.get("DLOBD_BIGDL_VERSION")), jars["DLOBD_BIGDL_JAR"],
            "-f", str(data), "-b", str(r["batch"]), "-e", str(r["epochs"])]
    if (rate := setting(ctx, "learning_rate")) is not None:
        argv += [model.rate_option, str(float(rate))]
    return argv


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    env = hadoop.stack_env()
    spark_submit, env, flavour = spark_install(ctx, env)
    # a bad point fails before any data is copied
    model = model_of(ctx)
    resources = plan_resources(ctx)
    dataset = ctx.spec.get("scales", {}).get(ctx.scale, {}).get("dataset", ctx.spec.get("dataset"))
    data_dir = env.get("DLOBD_DATA_DIR")
    if not data_dir:
        raise FileNotFoundError("DLOBD_DATA_DIR is not set: is the stack provisioned under "
                                f"{provenance.prefix()}?")
    adir = Path(ctx.attempt_dir).resolve()  # the driver runs in it: paths must be absolute
    train, test = (_positive_int(ctx, k) if setting(ctx, k) is not None else None
                   for k in ("train_images", "test_images"))
    folder = Path(data_dir) / str(dataset)
    if ctx.dry_run:  # the counts of a data set visible from here, read and not copied
        data = data_folder(folder, train, test, adir,
                           model.data.counts(folder) if folder.is_dir() else (None, None))
    else:
        data = prepare_data(folder, train, test, adir, model.data)
    argv = command(ctx, spark_submit, data, env, resources, flavour)
    # BigDL writes bigdl.log into its working directory: the attempt
    result = runner.run_command(ctx, argv, env=env, cwd=str(adir), yarn_tag=hadoop.app_tag(ctx))
    result.versions = {"stack": f"bigdl {env.get('DLOBD_BIGDL_VERSION', 'unknown')}"}
    result.labels = {"data": runner.data_label(dataset), "spark": flavour,
                     "network": str(ctx.point.get("network", "loopback"))}
    if resources["layout"]:
        result.labels["executor_layout"] = resources["layout"]
    if resources["assumed"]:
        result.labels["assumed"] = {"cores": resources["assumed"]}
    if resources["heap_why"]:
        result.labels["executor_memory"] = f"{resources['heap']}: {resources['heap_why']}"
    result.hosts = hadoop.with_application_roles(provenance.cluster_hosts(),
                                                hadoop.application_roles(ctx.attempt_dir))
    return result
