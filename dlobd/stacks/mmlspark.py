"""MMLSpark 0.10 (Microsoft, github.com/Azure/mmlspark at tag v0.10) with CNTK 2.x: Spark
2.2 turns the data into CNTK's text format and CNTKLearner trains CNTK's data-parallel SGD
under OpenMPI 1.10 on the GPU hosts. The driver program is workloads/mmlspark/train.py, the
network workloads/mmlspark/cifar10_convnet.cntk.

How CNTKLearner trains (MMLSpark v0.10, src/cntk-train/.../CommandBuilders.scala): the driver
writes the data and the configs into its `workingDir`, copies the key at
`CNTKLearner.identityLocation` (an Azure blob path, wasb:///MML-GPU/identity) to
~/.ssh/MML-GPU/identity, `scp`s the working directory to the first of `gpuMachines`, and runs
`ssh -i <key> <username>@<host> 'export CLASSPATH=...; time mpirun --npernode <gpus> cntk
configFile=...'` there; CNTK's stderr reaches the driver's stderr. What makes that work on
bare metal, set per run here:
- the key: train.py points identityLocation at the key the mmlspark role made
  (MMLSPARK_SSH_KEY, authorized on every GPU host for the run's user);
- `workingDir`: a node-local folder at the same path on every host
  (MMLSPARK_WORKDIR_ROOT/<run tag>, default /tmp/dlobd-mmlspark);
- the remote environment: MMLSpark runs `ssh`, `scp` and then `mpirun` by name, so the
  driver's PATH starts with the role's wrapper folder (MMLSPARK_WRAPPERS). Its `ssh` puts the
  run's settings (DLOBD_MMLSPARK_*) and the wrapper folder in front of the remote command;
  its `mpirun`, found first on the GPU host, copies the working directory to the other GPU
  hosts and runs OpenMPI 1.10's mpirun (MMLSPARK_MPI_HOME) over them all with a host file,
  the point's byte transfer layer (`--mca btl`), `--tag-output`, and CNTK's `deviceId`
  (CNTKLearner's override says "auto", which would pick a GPU for the CPU points).

Parser: the driver's stderr.log holds Spark's and MMLSpark's log4j lines and, through
mpirun, CNTK's, tagged `[<job>,<rank>]<stderr>:` by `--tag-output` (OpenMPI's IOF format);
untagged lines count as rank 0. From CNTK's Source/SGDLib/SGD.cpp and Criterion.h (2.x):
  [timestamp: ]Finished Epoch[ 3 of 20]: [Training] ce = 1.23456789 * 50000; errs = 43.210% * 50000;
      totalSamplesSeen = 150000; learningRatePerSample = 0.0015625; epochTime=31.2049s
  [timestamp: ]Finished Epoch[ 3 of 20]: [Validate] ce = ... * 10000; errs = 45.000% * 10000
  [timestamp: ] Epoch[ 3 of 20]-Minibatch[ 101- 200, 51.20%]: ce = ... * 12800; errs = ...% * 12800;
      time = 1.2345s; samplesPerSecond = 10368.4
(the time stamp `%m/%d/%Y %H:%M:%S: ` with `timestamping = true`, as the project's BrainScript
sets), and the test command's `Final Results: Minibatch[1-10]: errs = 14.310% * 10000; ...`.
It reads CNTK's own output too, of the releases in tests/data/logs/real/mmlspark/: the cntk
executable (2.0rc2), which ends a run with `__COMPLETED__`, and of 1.x (`[Training Set]
TrainLossPerSample = 0.63; EvalErrPerSample = 0.20; ...; EpochTime=95.78`, minibatch lines with
`SamplesPerSecond`), and the Python API's ProgressPrinter (2.0 beta, 2.4, 2.5): `Finished
Epoch[1 of 40]: [Training] loss = 0.40596 * 60000, metric = 13.01% * 60000 21.741s (2759.8
samples/s);` (2.0 beta's without `[Training]`),
the `Final Results` line of CNTK's Python examples, and ProgressPrinter's table
` average      since    average      since      examples` whose lines give the loss averaged
since the line before at the samples seen. Rows of rank 0: per epoch loss (the training
criterion), epoch_time_s, and the Python API's epoch throughput_records_per_s; per logged
minibatch range throughput_records_per_s; per table line loss (step: samples seen);
top1_accuracy (1 - errs) of a validation or test; the run's train_time_s (sum of the epoch
times) once every epoch finished. The run ends with MMLSpark's `CNTK training finished` (its
end_to_end_s comes from the YARN record) or cntk's `__COMPLETED__`; the Python API prints no
end line of its own, so its runs end with their last epoch. An epoch past the run's stated
epochs (2.0 beta's training_session) is no normal end; the Python API's lines and the cntk
executable's epoch lines in one log, or CNTK's `Selected ... as the process wide default
device.` twice among rank 0's lines, are two logs mixed.

Launcher: `spark-submit --master yarn --deploy-mode client --jars <every jar of
MMLSPARK_JARS_DIR>` of train.py, the CNTK build of the point's device (CNTK_HOME_<DEVICE>:
CPU_OPENBLAS, CPU_MKL, GPU_CUDNN), `nodes` GPU hosts (DLOBD_GPU_WORKERS) with
DLOBD_GPUS_PER_NODE ranks each, the global minibatch 128 of the spec's batch rule, and the
network axis as OpenMPI's BTL through config/networks.yaml. The driver and the executors' PySpark
run MMLSPARK_PYTHON (role mmlspark, mmlspark_python), not the stacks' Python 3.11: Spark 2.2's
PySpark breaks on Python 3.7 and later (PEP 479's StopIteration; SPARK-24739 fixed it in Spark
2.3.2/2.4), so a Python the role found newer than 3.6 (MMLSPARK_PYTHON_VERSION) is not runnable.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dlobd.cluster import hadoop, provenance
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser, yarn_application_span
from dlobd.cluster import capabilities
from dlobd.stacks import runner
from dlobd import NotRunnable

LOG_FILES = ("stderr.log", "stdout.log")

WORKLOADS = Path(__file__).resolve().parents[2] / "workloads" / "mmlspark"
DEVICES = ("cpu-openblas", "cpu-mkl", "gpu-cudnn")
GLOBAL_MINIBATCH = 128   # the spec's batch rule: nodes x per-node batch = 128
EPOCHS = 20              # not stated by the paper: the BrainScript's learning-rate schedule spans 20
UNSTATED_DEVICE = "gpu-cudnn"
WORKDIR_ROOT = "/tmp/dlobd-mmlspark"
NEWEST_PYTHON = "3.6"    # the newest Python Spark 2.2's PySpark runs on

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
MPI_TAG = re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr)>:(.*)$")
CNTK_TIME = re.compile(r"^(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d): ")
# CNTK 2.0's beta Python API printed no [Training] tag; CNTK 1.x's is `[Training Set]`
FINISHED = re.compile(r"^Finished Epoch\[\s*(\d+) of (\d+)\]: (?:\[(Training|Validat)(?:e|ion)?(?: Set)?\] )?(.*)$")
MINIBATCH = re.compile(r"^\s*Epoch\[\s*(\d+) of (\d+)\]-Minibatch\[\s*(\d+)-\s*(\d+)(?:, [\d.]+%)?\]: (.*)$")
CRITERION = re.compile(r"(\w+) = (" + NUM + r")(%?) \* (\d+)")
# CNTK 1.x: `TrainLossPerSample = 0.62585586; EvalErrPerSample = 0.20480554; ...; EpochTime=95.7758`
CRITERION_1X = re.compile(r"(\w+?)PerSample = \s*(" + NUM + r")")
EPOCH_TIME = re.compile(r"[eE]pochTime=(" + NUM + r")s?(?:$|;|\s)")
# the Python API's ProgressPrinter: `... 21.741s (2759.8 samples/s);`
PY_EPOCH_TIME = re.compile(r"\s(" + NUM + r")s \(\s*(" + NUM + r") samples/s\);")
# a test pass: the cntk executable's (and CNTK's Python examples') `Final Results: Minibatch[1-10]: errs = ...`
TEST_RESULT = re.compile(r"^Final Results: Minibatch\[\d+-\d+\]: (.*)$")
# ProgressPrinter's table: average loss since the start and since the last line, the same of the
# metric where there is one, and the samples seen
TABLE_HEADER = re.compile(r"^\s*average\s+since\s+average\s+since\s+examples\s*$")
TABLE_ROW = re.compile(r"^\s*(" + NUM + r")\s+(" + NUM + r")(?:\s+(?:" + NUM + r")\s+(?:" + NUM + r"))?\s+(\d+)\s*$")
CNTK_COMPLETED = re.compile(r"^__COMPLETED__\s*$")
# the CNTK library's first line in a process (the Python API's, or cntk's)
DEVICE_CHOSEN = re.compile(r"^Selected \w+\[\d+\] .* as the process wide default device\.")
RATE = re.compile(r"[sS]amplesPerSecond = (" + NUM + r")")
TRAINING_DONE = re.compile(r"\bCNTK training finished\b")
CNTK_ERROR = re.compile(r"^EXCEPTION occurred: ?(.*)")


# ---------------------------------------------------------------------------- parser

def _criteria(text: str) -> dict:
    """`ce = 1.2 * 500; errs = 43.2% * 500; ...` as {name: (value, is_percent, samples)};
    CNTK 1.x's `TrainLossPerSample = 0.6; EvalErrPerSample = 0.2` as {TrainLoss: (0.6, False, None),
    EvalErr: (20.0, True, None)} (its error a share, given here in percent like 2.x's)."""
    found = {m[1]: (float(m[2]), bool(m[3]), int(m[4])) for m in CRITERION.finditer(text)}
    for m in CRITERION_1X.finditer(text):
        if m[1] == "EvalErr":
            found[m[1]] = (float(m[2]) * 100, True, None)
        elif m[1] == "TrainLoss":
            found[m[1]] = (float(m[2]), False, None)
    return found


class CntkEpochs:
    """CNTK's epoch and minibatch lines of rank 0 (untagged lines count as rank 0) as rows of
    `result`; LogError for epochs out of order. Lines of other ranks are counted, not read:
    every rank prints the same aggregated criteria."""

    def __init__(self, result: ParseResult):
        self.result = result
        self.last_epoch = 0
        self.max_epochs = None
        self.epoch_times = {}
        self.ranks = set()
        self.python_api = False  # the epoch lines are the Python API's ProgressPrinter's
        self.table = False       # a ProgressPrinter table's header was seen
        self.table_samples = 0   # samples seen at its last line
        self.completed = False   # the cntk executable's `__COMPLETED__`
        self.brainscript = None  # line of the first epoch line of the cntk executable's wording
        self.device_chosen = None  # line of CNTK's `Selected ... as the process wide default device.`

    def read(self, no: int, line: str) -> None:
        tag = MPI_TAG.match(line)
        rank, text = (int(tag[2]), tag[3]) if tag else (0, line)
        if tag:
            self.ranks.add(rank)
        text = CNTK_TIME.sub("", text, count=1)
        if CNTK_ERROR.match(text.strip()):
            self.result.meta.setdefault("errors", []).append(text.strip()[:200])
        elif rank != 0:
            return
        elif f := FINISHED.match(text):
            self._epoch(no, int(f[1]), int(f[2]), f[3] or "Training", f[4])
        elif m := MINIBATCH.match(text):
            epoch = int(m[1])
            if epoch <= self.last_epoch:
                raise LogError(f"line {no}: a minibatch of epoch {epoch} after epoch {self.last_epoch} "
                               "finished (two logs interleaved or concatenated?)")
            if r := RATE.search(m[5]):
                self.result.rows.append(row("throughput_records_per_s", float(r[1]), step=int(m[4]), epoch=epoch))
        elif t := TEST_RESULT.match(text):
            self._tested(t[1], None)
        elif TABLE_HEADER.match(text):
            self.table = True
            self._wording(no, python_api=True)
        elif self.table and (t := TABLE_ROW.match(text)):
            self._table_row(no, float(t[2]), int(t[3]))
        elif CNTK_COMPLETED.match(text.strip()):
            self.completed = True
        elif DEVICE_CHOSEN.match(text):
            if self.device_chosen:
                raise LogError(f"line {no}: CNTK chooses its device a second time (line "
                               f"{self.device_chosen} first): two processes' logs interleaved?")
            self.device_chosen = no

    def _wording(self, no: int, python_api: bool) -> None:
        """Note whose wording a line has (the Python API's ProgressPrinter or the cntk
        executable); LogError where one log has both: one process prints one of them."""
        if python_api:
            self.python_api = True
        else:
            self.brainscript = self.brainscript or no
        if self.python_api and self.brainscript:
            raise LogError(f"line {no}: the Python API's progress lines and the cntk executable's "
                           f"epoch lines (line {self.brainscript}) in one log: two logs interleaved?")

    def _tested(self, text: str, epoch: int | None) -> None:
        """A validation's or test pass's criteria: the error share (the first criterion in %) as
        top1_accuracy."""
        errors = [(v, n) for v, percent, n in _criteria(text).values() if percent]
        if errors:
            self.result.rows.append(row("top1_accuracy", 1 - errors[0][0] / 100, epoch=epoch))
            if errors[0][1] is not None:  # (CNTK 1.x does not say)
                self.result.meta["test_records"] = errors[0][1]

    def _table_row(self, no: int, loss_since_last: float, samples: int) -> None:
        """A ProgressPrinter table line: the loss averaged since the line before, at the samples seen."""
        if samples <= self.table_samples:
            raise LogError(f"line {no}: {samples} samples seen after {self.table_samples} "
                           "(two logs interleaved or concatenated?)")
        self.table_samples = samples
        self.result.rows.append(row("loss", loss_since_last, step=samples))

    def _epoch(self, no: int, epoch: int, total: int, kind: str, text: str) -> None:
        rows, meta = self.result.rows, self.result.meta
        if self.max_epochs is not None and total != self.max_epochs:
            raise LogError(f"line {no}: epoch {epoch} of {total} in a run of {self.max_epochs} epochs "
                           "(two logs interleaved or concatenated?)")
        self.max_epochs = total
        crit = _criteria(text)
        if kind == "Training":
            if epoch <= self.last_epoch:
                raise LogError(f"line {no}: epoch {epoch} finishes after epoch {self.last_epoch} "
                               "(two logs interleaved or concatenated?)")
            t = EPOCH_TIME.search(text)
            py = PY_EPOCH_TIME.search(text) if t is None else None
            if not crit or (t or py) is None:
                raise LogError(f"line {no}: a 'Finished Epoch' line without its criterion or its time")
            name, (value, _, _) = next(iter(crit.items()))
            meta.setdefault("criterion", name)
            rows.append(row("loss", value, epoch=epoch))
            seconds = float((t or py)[1])
            self.epoch_times[epoch] = seconds
            rows.append(row("epoch_time_s", seconds, epoch=epoch))
            self._wording(no, python_api=py is not None)
            if py:
                rows.append(row("throughput_records_per_s", float(py[2]), epoch=epoch))
            self.last_epoch = epoch
        else:
            self._tested(text, epoch)

    def missing(self) -> str | None:
        """What the log lacks of a whole training, or None."""
        if self.max_epochs is None:
            return "no 'Finished Epoch' line"
        if self.last_epoch < self.max_epochs:
            return f"{self.last_epoch} of {self.max_epochs} epochs finished"
        if self.last_epoch > self.max_epochs:  # CNTK 2.0 beta's training_session ran on past its end
            return f"epoch {self.last_epoch} finished, past the run's {self.max_epochs} epochs"
        return None

    def finish(self, problems, cut: bool) -> ParseResult:
        """Close the result; a whole training gets its train_time_s (the sum of its epochs)."""
        result = self.result
        if self.ranks:
            result.meta["mpi_ranks"] = len(self.ranks)
        result.close(*problems, cut=cut)
        if result.finished:
            result.rows.append(row("train_time_s", round(sum(self.epoch_times.values()), 6), epoch=self.last_epoch))
        elif result.meta.get("errors"):
            result.reason += f"; the log shows {result.meta['errors'][0]}"
        return result


def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    epochs = CntkEpochs(result)
    done = None
    for no, line in lines:
        if TRAINING_DONE.search(line):
            if done is not None:
                raise LogError(f"line {no}: a second 'CNTK training finished' (line {done} first): "
                               "two driver logs concatenated?")
            done = no
        else:
            epochs.read(no, line)
    if not result.rows and done is None:
        reason = f"{NO_LINES} CNTK's or MMLSpark's format: no 'Finished Epoch' or minibatch line"
        if result.meta.get("errors"):
            reason += f"; the log shows {result.meta['errors'][0]}"
        return ParseResult.unparseable(reason)
    # the run's end: MMLSpark's line, the cntk executable's __COMPLETED__; ProgressPrinter
    # prints no end line of its own, so for the Python API every epoch finished is the end
    ended = done or epochs.completed or epochs.python_api
    return epochs.finish([epochs.missing(), None if ended else
                          "no 'CNTK training finished' line from MMLSpark (nor cntk's __COMPLETED__)"], cut)


parse = line_parser(_parse)
parse_records = yarn_application_span


# ---------------------------------------------------------------------------- launcher

def _setting(name: str, what: str) -> str:
    value = provenance.stack_setting(name)
    if not value:
        raise NotRunnable(f"{what}: set {name} (role mmlspark)")
    return value


def pyspark_python() -> tuple[str, str | None]:
    """(MMLSPARK_PYTHON, the version the role found there, None where not known from here);
    NotRunnable where it is not given or is newer than Spark 2.2's PySpark runs on."""
    python = _setting("MMLSPARK_PYTHON", f"Spark 2.2's PySpark needs a Python {NEWEST_PYTHON} or older "
                                         "with numpy (the role's mmlspark_python), not the stacks' Python")
    version = provenance.stack_setting("MMLSPARK_PYTHON_VERSION") or None
    if version is not None:
        if not re.fullmatch(r"\d+\.\d+", version):
            raise ValueError(f"MMLSPARK_PYTHON_VERSION {version!r} is not a version like {NEWEST_PYTHON}")
        if [int(n) for n in version.split(".")] > [int(n) for n in NEWEST_PYTHON.split(".")]:
            raise NotRunnable(f"MMLSPARK_PYTHON {python} is Python {version}: Spark 2.2's PySpark "
                                   f"runs on {NEWEST_PYTHON} at the newest; set mmlspark_python (role "
                                   "mmlspark) to an older one with numpy")
    return python, version


def plan_point(ctx: runner.RunContext) -> dict:
    labels = {}
    device = ctx.point.get("device", ctx.fixed.get("device"))
    if device is None or str(device).startswith("not stated"):
        device = UNSTATED_DEVICE
        labels["device"] = f"{device} (not stated by the paper; the slide's range suggests it)"
    if device not in DEVICES:
        raise ValueError(f"{ctx.spec['id']}: device {device!r} is none of {', '.join(DEVICES)}")
    nodes = int(ctx.point.get("nodes", ctx.fixed.get("nodes", 1)))
    network = str(ctx.point.get("network", ctx.fixed.get("network", "ipoib")))
    btl = capabilities.require_network("mmlspark", network).settings["btl"]
    gpu = device.startswith("gpu")
    if gpu and (lacking := capabilities.missing(["gpu"])):
        raise NotRunnable(f"device {device}: " + "; ".join(lacking))
    hosts = (provenance.stack_setting("DLOBD_GPU_WORKERS") or "").split() if gpu else provenance.workers()
    if nodes > len(hosts):
        raise NotRunnable(f"{nodes} nodes: the cluster has {len(hosts)} "
                               f"{'GPU host(s) (DLOBD_GPU_WORKERS)' if gpu else 'worker(s)'}")
    per_node = int(provenance.stack_setting("DLOBD_GPUS_PER_NODE") or 1) if gpu else 1
    ranks = nodes * per_node
    if GLOBAL_MINIBATCH % ranks:
        raise ValueError(f"{ctx.spec['id']}: the global minibatch {GLOBAL_MINIBATCH} does not split over {ranks} ranks")
    return {"device": device, "nodes": nodes, "network": network, "btl": btl, "hosts": hosts[:nodes],
            "per_node": per_node, "device_id": "auto" if gpu else "-1", "labels": labels}


def remote_env(p: dict, cntk_home: str, mpi_home: str, wrappers: str) -> dict:
    """What the ssh wrapper exports on the GPU host before MMLSpark's remote command."""
    return {"PATH": f"{wrappers}:{cntk_home}/cntk/bin:{mpi_home}/bin:$PATH",
            "LD_LIBRARY_PATH": f"{cntk_home}/cntk/lib:{cntk_home}/cntk/dependencies/lib:{mpi_home}/lib"
                               "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
            "DLOBD_MMLSPARK_MPI_HOME": mpi_home,
            "DLOBD_MMLSPARK_HOSTS": " ".join(p["hosts"]),
            "DLOBD_MMLSPARK_BTL": p["btl"],
            "DLOBD_MMLSPARK_TCP_IF": provenance.stack_setting("MMLSPARK_TCP_IF_INCLUDE") or "",
            "DLOBD_MMLSPARK_DEVICE_ID": p["device_id"]}


def command(ctx: runner.RunContext, p: dict, jars: list[str], workdir: str, key: str, python: str) -> list[str]:
    spark_home = provenance.stack_setting("SPARK_HOME")
    if not spark_home:
        raise FileNotFoundError("SPARK_HOME is not set: is the paper profile's Spark 2.2 provisioned?")
    data = Path(provenance.stack_setting("DLOBD_DATA_DIR") or "") / "cifar10"
    # over the stacks' Python that spark-defaults.conf names for the executors and the AM
    pythons = {"spark.pyspark.python": python, "spark.pyspark.driver.python": python,
               "spark.executorEnv.PYSPARK_PYTHON": python, "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python}
    return [str(Path(spark_home) / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "client",
            "--num-executors", str(p["nodes"]), "--driver-memory", str(ctx.fixed.get("driver_memory", "8g")),
            "--jars", ",".join(jars),
            "--conf", "spark.dynamicAllocation.enabled=false", "--conf", "spark.yarn.maxAppAttempts=1",
            *(arg for name, value in pythons.items() for arg in ("--conf", f"{name}={value}")),
            *hadoop.spark_conf(ctx),
            str(WORKLOADS / "train.py"),
            "--data-dir", str(data), "--brainscript", str(WORKLOADS / "cifar10_convnet.cntk"),
            "--epochs", str(int(ctx.fixed.get("epochs", EPOCHS))), "--minibatch", str(GLOBAL_MINIBATCH),
            "--gpu-machine", f"{p['hosts'][0]},{p['per_node']}",
            "--working-dir", f"file:{workdir}", "--identity", f"file://{key}"]


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    p = plan_point(ctx)
    var = "CNTK_HOME_" + p["device"].upper().replace("-", "_")
    cntk_home = _setting(var, f"device {p['device']}: no CNTK 2.x build for it (a site install: "
                              "CNTK's binary releases, github.com/Microsoft/CNTK/releases)")
    mpi_home = _setting("MMLSPARK_MPI_HOME", "OpenMPI 1.10 for CNTK's data-parallel SGD")
    jars_dir = _setting("MMLSPARK_JARS_DIR", "MMLSpark 0.10's jars (from the mmlspark Maven repository)")
    key = _setting("MMLSPARK_SSH_KEY", "the ssh key CNTKLearner uses to reach the GPU host")
    wrappers = _setting("MMLSPARK_WRAPPERS", "the ssh/scp/mpirun wrappers that carry the run's settings")
    python, python_version = pyspark_python()
    workdir = f"{provenance.stack_setting('MMLSPARK_WORKDIR_ROOT') or WORKDIR_ROOT}/{hadoop.app_tag(ctx)}"
    if ctx.dry_run:
        jars = [f"{jars_dir}/*.jar"]
    else:
        jars = sorted(str(j) for j in Path(jars_dir).glob("*.jar"))
        if not any(Path(j).name.startswith("mmlspark_") for j in jars):
            raise FileNotFoundError(f"{jars_dir}: no mmlspark_*.jar (is the mmlspark role provisioned?)")
    env = None
    if not ctx.dry_run:
        env = {**hadoop.stack_env(), "PATH": f"{wrappers}:{hadoop.stack_env().get('PATH', '')}",
               "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
               "DLOBD_MMLSPARK_REMOTE_ENV": "; ".join(
                   f"export {k}={shlex.quote(v) if '$' not in v else v}"
                   for k, v in remote_env(p, cntk_home, mpi_home, wrappers).items())}
    argv = command(ctx, p, jars, workdir, key, python)
    result = runner.run_command(ctx, argv, env=env, cwd=str(Path(ctx.attempt_dir).resolve()),
                              yarn_tag=hadoop.app_tag(ctx))
    result.versions = {"stack": f"mmlspark 0.10 + cntk ({p['device']})"}
    result.labels = {"data": "cifar10", "network": p["network"], "btl": p["btl"], "device": p["device"],
                     "ranks": f"{p['nodes'] * p['per_node']} ({p['per_node']} per node)", **p["labels"]}
    result.extra["remote_env"] = remote_env(p, cntk_home, mpi_home, wrappers)
    if ctx.dry_run and python_version is None:
        result.extra["notes"] = [f"MMLSPARK_PYTHON {python}: the mmlspark role finds its version when "
                                 f"provisioning; newer than {NEWEST_PYTHON} is not runnable"]
    result.hosts = [{"name": h, "address": h, "roles": ["gpu" if p["device"].startswith("gpu") else "workers"]}
                    for h in p["hosts"]]
    return result
