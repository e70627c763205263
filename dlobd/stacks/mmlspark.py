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
samples/s);` (2.0 beta's without `[Training]`) and `Finished Evaluation [1]: Minibatch[1-157]:
metric = 38.14% * 10000;` (its evaluations, numbered: one not above the last is another
printer's, two logs mixed), the `Final Results` line of CNTK's Python examples, and
ProgressPrinter's table ` average      since    average      since      examples` whose lines
give the loss averaged since the line before at the samples seen. Rows of rank 0: per epoch
loss (the training criterion), epoch_time_s, and the Python API's epoch
throughput_records_per_s; per logged minibatch range throughput_records_per_s; per table line
loss (step: samples seen); top1_accuracy (1 - errs, or 1 - metric) of a validation, test or
evaluation; the run's train_time_s (sum of the epoch times) once every epoch finished. The run ends with MMLSpark's `CNTK training finished` (its
end_to_end_s comes from the YARN record) or cntk's `__COMPLETED__`; the Python API prints no
end line of its own, so its runs end with their last epoch. An epoch past the run's stated
epochs (2.0 beta's training_session) is no normal end; the Python API's lines and the cntk
executable's epoch lines in one log, or CNTK's `Selected ... as the process wide default
device.` twice among rank 0's lines, are two logs mixed.

Launcher: `spark-submit --master yarn --deploy-mode client --jars <every jar of
MMLSPARK_JARS_DIR>` of train.py, the CNTK build of the point's device (CNTK_HOME_<DEVICE>:
CPU_OPENBLAS, CPU_MKL, GPU_CUDNN; role mmlspark, mmlspark_cntk_homes), `nodes` GPU hosts
(DLOBD_GPU_WORKERS) with DLOBD_GPUS_PER_NODE ranks each, or for a CPU point `nodes` of the workers
YARN runs its executors on (hadoop.executor_workers, as the other Spark stacks count them) with
one rank each, the global minibatch 128 of the spec's batch rule, and the
network axis as OpenMPI's BTL through config/networks.yaml. The driver and the executors' PySpark
run MMLSPARK_PYTHON (role mmlspark, mmlspark_python), not the stacks' Python 3.11: Spark 2.2's
PySpark breaks on Python 3.7 and later (PEP 479's StopIteration; SPARK-24739 fixed it in Spark
2.3.2/2.4), so a Python the role found newer than 3.6 (MMLSPARK_PYTHON_VERSION) is not runnable.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dlobd import NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.stacks import (
    NO_LINES,
    LogError,
    ParseResult,
    line_parser,
    runner,
    yarn_application_span,
)
from dlobd.stacks.shared import cntk_install
from dlobd.stacks.shared.cntk_log import CntkEpochs

LOG_FILES = ("stderr.log", "stdout.log")

WORKLOADS = Path(__file__).resolve().parents[2] / "workloads" / "mmlspark"
DEVICES = ("cpu-openblas", "cpu-mkl", "gpu-cudnn")
GLOBAL_MINIBATCH = 128   # the spec's batch rule: nodes x per-node batch = 128
EPOCHS = 20              # not stated by the paper: the BrainScript's learning-rate schedule spans 20
WORKDIR_ROOT = "/tmp/dlobd-mmlspark"
NEWEST_PYTHON = "3.6"    # the newest Python Spark 2.2's PySpark runs on
TRAINING_DONE = re.compile(r"\bCNTK training finished\b")
# What the mmlspark role records of its own wherever it runs, with what each is
ROLE_RECORDS = {"MMLSPARK_JARS_DIR": "MMLSpark 0.10's jars (from the mmlspark Maven repository)",
                "MMLSPARK_SSH_KEY": "the ssh key CNTKLearner uses to reach the GPU host",
                "MMLSPARK_WRAPPERS": "the ssh/scp/mpirun wrappers that carry the run's settings"}

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

def role_records() -> dict[str, str]:
    """ROLE_RECORDS' settings, name -> value; NotRunnable naming those missing: the mmlspark role
    records them where the inventory runs it, and no inventory variable gives them."""
    values = {name: provenance.stack_setting(name) for name in ROLE_RECORDS}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise NotRunnable("; ".join(ROLE_RECORDS[name] for name in missing)
                          + f": the mmlspark role records {'them' if len(missing) > 1 else 'it'} where it runs "
                            f"(dlobd_paper_stacks: [mmlspark]; {', '.join(missing)})")
    return values


def pyspark_python() -> tuple[str, str | None]:
    """(MMLSPARK_PYTHON, the version the role found there, None where not known from here);
    NotRunnable where it is not given or is newer than Spark 2.2's PySpark runs on."""
    python = cntk_install.role_setting("MMLSPARK_PYTHON", f"Spark 2.2's PySpark needs a Python {NEWEST_PYTHON} "
                                       "or older with numpy, not the stacks' Python", "mmlspark_python")
    version = provenance.stack_setting("MMLSPARK_PYTHON_VERSION") or None
    if version is not None:
        if not re.fullmatch(r"\d+\.\d+", version):
            raise ValueError(f"MMLSPARK_PYTHON_VERSION {version!r} is not a version like {NEWEST_PYTHON}")
        if [int(n) for n in version.split(".")] > [int(n) for n in NEWEST_PYTHON.split(".")]:
            raise NotRunnable(f"mmlspark_python {python} is Python {version}: Spark 2.2's PySpark runs on "
                              f"{NEWEST_PYTHON} at the newest; set mmlspark_python to an older one with numpy "
                              "(role mmlspark; MMLSPARK_PYTHON)")
    return python, version


def plan_point(ctx: runner.RunContext) -> dict:
    labels = {}
    # a device the paper leaves unstated comes from the scale's `assumed` (in fixed)
    device = ctx.point.get("device", ctx.fixed.get("device"))
    if device not in DEVICES:
        raise ValueError(f"{ctx.spec['id']}: device {device!r} is none of {', '.join(DEVICES)}")
    nodes = int(ctx.point.get("nodes", ctx.fixed.get("nodes", 1)))
    network = str(ctx.point.get("network", ctx.fixed.get("network", "ipoib")))
    btl = capabilities.require_network("mmlspark", network).settings["btl"]
    gpu = device.startswith("gpu")
    if gpu and (lacking := capabilities.missing(["gpu"])):
        raise NotRunnable(f"device {device}: " + "; ".join(lacking))
    # a CPU point's nodes are the workers its Spark executors reach on YARN, as the other Spark stacks
    # count them: an exclusive GPU label keeps those executors off the GPU workers
    hosts = provenance.workers(gpu=True) if gpu else hadoop.executor_workers()
    if nodes > len(hosts):
        raise NotRunnable(f"{nodes} nodes: the cluster has {len(hosts)} {hadoop.workers_phrase(gpu)}")
    # ranks a node as the spec lays them out (one device a node in the paper), else every GPU of a host
    per_node = int(ctx.fixed.get("devices_per_node") or provenance.stack_setting("DLOBD_GPUS_PER_NODE") or 1) \
        if gpu else 1
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
    spark_home = hadoop.stack_spark_home("mmlspark")
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
    cntk = cntk_install.cntk_home(p["device"], f"device {p['device']}: no CNTK 2.x build for it (a site "
                                               "install: CNTK's binary releases, github.com/Microsoft/CNTK/releases)")
    mpi = cntk_install.mpi_home("OpenMPI 1.10 for CNTK's data-parallel SGD")
    records = role_records()
    jars_dir, key, wrappers = records["MMLSPARK_JARS_DIR"], records["MMLSPARK_SSH_KEY"], records["MMLSPARK_WRAPPERS"]
    python, python_version = pyspark_python()
    workdir = f"{provenance.stack_setting('MMLSPARK_WORKDIR_ROOT') or WORKDIR_ROOT}/{hadoop.app_tag(ctx)}"
    if ctx.dry_run:
        jars = [f"{jars_dir}/*.jar"]
    else:
        jars = sorted(str(j) for j in Path(jars_dir).glob("*.jar"))
        if not any(Path(j).name.startswith("mmlspark_") for j in jars):
            raise FileNotFoundError(f"{jars_dir}: no mmlspark_*.jar (is the mmlspark role provisioned?)")
    stack = hadoop.stack_env()
    # a dry run's PATH is the launch host's own, which its pasted command extends
    env = {**stack, "PATH": f"{wrappers}:{'$PATH' if ctx.dry_run else stack.get('PATH', '')}",
           "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "DLOBD_MMLSPARK_REMOTE_ENV": "; ".join(
               f"export {k}={shlex.quote(v) if '$' not in v else v}"
               for k, v in remote_env(p, cntk, mpi, wrappers).items())}
    argv = command(ctx, p, jars, workdir, key, python)
    result = runner.run_command(ctx, argv, env=env, cwd=str(Path(ctx.attempt_dir).resolve()),
                              yarn_tag=hadoop.app_tag(ctx))
    result.versions = {"stack": f"mmlspark 0.10 + cntk ({p['device']})"}
    result.labels = {"data": "cifar10", "network": p["network"], "btl": p["btl"], "device": p["device"],
                     "ranks": f"{p['nodes'] * p['per_node']} ({p['per_node']} per node)", **p["labels"]}
    result.extra["remote_env"] = remote_env(p, cntk, mpi, wrappers)
    if ctx.dry_run and python_version is None:
        result.extra["notes"] = [f"mmlspark_python {python}: the mmlspark role finds its version when "
                                 f"provisioning; newer than {NEWEST_PYTHON} is not runnable"]
    result.hosts = [{"name": h, "address": h, "roles": ["gpu" if p["device"].startswith("gpu") else "workers"]}
                    for h in p["hosts"]]
    return result
