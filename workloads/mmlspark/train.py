"""Train the CIFAR-10 ConvNet with MMLSpark 0.10's CNTKLearner: read CIFAR-10's binary
batches into a DataFrame of (labels, features) vectors, and fit CNTKLearner on it, which
writes the data in CNTK's text format, copies the working directory to the first GPU
machine over ssh and runs `mpirun ... cntk` there (MMLSpark's MPICommandBuilder).

On bare metal three of CNTKLearner's settings must be given: the GPU machine and its user
(`gpuMachines`, `username`), a working directory at the same path on every GPU host
(`workingDir`), and the ssh key. MMLSpark 0.10 reads the key from a fixed Azure blob path,
`CNTKLearner.identityLocation` (wasb:///MML-GPU/identity); `--identity` points that field at a
local file through Java reflection (a Scala object's `val` is a final instance field, which
Field.set may change once setAccessible(true) succeeds) before fitting.

Prints `DLOBD event=...` lines (driver_start, data_ready, fit_start, fit_end) to stdout.

It runs on MMLSPARK_PYTHON, a Python 3.6 (Spark 2.2's PySpark runs on none newer): nothing here
may need a newer one, e.g. `X | None` annotations, which Python 3.6 evaluates and rejects.
"""

import argparse
import getpass
import re
import time
from pathlib import Path
from typing import Optional

import numpy as np
from pyspark.ml.linalg import Vectors
from pyspark.sql import SparkSession

RECORD = 1 + 3 * 32 * 32
TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]


def event(name: str, **fields) -> None:
    extra = "".join(f" {k}={v}" for k, v in fields.items())
    print(f"DLOBD event={name} time={time.time():.3f}{extra}", flush=True)


def read_cifar(folder: Path, limit: Optional[int]) -> np.ndarray:
    """The records of CIFAR-10's binary training batches: label byte, then 3072 pixel bytes."""
    chunks = []
    for name in TRAIN_FILES:
        raw = np.fromfile(folder / name, dtype=np.uint8)
        if raw.size % RECORD:
            raise SystemExit(f"{folder / name}: {raw.size} bytes is not a whole number of "
                             f"{RECORD}-byte CIFAR-10 records")
        chunks.append(raw.reshape(-1, RECORD))
    records = np.concatenate(chunks)
    return records[:limit] if limit else records


def brainscript(template: Path, values: dict) -> str:
    text = template.read_text()
    missing = sorted(set(re.findall(r"\$\{(\w+)\}", text)) - set(values))
    if missing:
        raise SystemExit(f"{template}: no value for {', '.join(missing)}")
    return re.sub(r"\$\{(\w+)\}", lambda m: str(values[m[1]]), text)


def point_identity_at(jvm, identity: str) -> None:
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    module_class = jvm.java.lang.Class.forName("com.microsoft.ml.spark.CNTKLearner$", True, loader)
    module = module_class.getField("MODULE$").get(None)
    field = module_class.getDeclaredField("identityLocation")
    field.setAccessible(True)
    field.set(module, identity)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="CIFAR-10 binary batches")
    ap.add_argument("--brainscript", type=Path, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--minibatch", type=int, required=True, help="global minibatch over all workers")
    ap.add_argument("--gpu-machine", required=True, help="'host,gpus': where mpirun starts")
    ap.add_argument("--working-dir", required=True, help="file:/... at the same path on every GPU host")
    ap.add_argument("--identity", required=True, help="file:///... private key CNTKLearner copies")
    ap.add_argument("--username", default=getpass.getuser())
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--limit", type=int, help="train on the first N records only")
    args = ap.parse_args()

    event("driver_start")
    spark = SparkSession.builder.appName("dlobd-mmlspark-cntk").getOrCreate()
    records = read_cifar(args.data_dir, args.limit)
    eye = np.eye(10)
    rows = [(Vectors.dense(eye[r[0]]), Vectors.dense(r[1:].astype(np.float64))) for r in records]
    frame = spark.createDataFrame(rows, ["labels", "features"]).repartition(args.partitions)
    event("data_ready", records=len(rows))

    jvm = spark.sparkContext._jvm
    point_identity_at(jvm, args.identity)
    learner = jvm.com.microsoft.ml.spark.CNTKLearner()
    learner.setBrainScriptText(brainscript(args.brainscript, {"epochs": args.epochs,
                                                               "minibatch": args.minibatch}))
    machines = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
    machines[0] = args.gpu_machine
    learner.setGPUMachines(machines)
    learner.setWorkingDirectory(args.working_dir)
    learner.setUserName(args.username)
    learner.setParallelTrain(True)
    learner.setTransferStrategy("local")
    learner.setDataFormat("text")
    event("fit_start")
    learner.fit(frame._jdf)
    event("fit_end")
    spark.stop()


if __name__ == "__main__":
    main()
