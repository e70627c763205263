#!/usr/bin/env python3
"""The live Java heap of a BigDL executor training VGG-16 on CIFAR-10, measured (`make
bench-bigdl-heap`): BigDL 0.3.0 of the paper profile's image, one epoch in Spark's local mode
(one JVM: the executor's k model replicas and the driver's small part), for each layout of
--layouts (cores x images a core of each batch), over a few hundred records of the synthetic
CIFAR-10. The live heap is the most the JVM held after a full collection (its GC log). Prints
`name: value` lines, then the fit live = base + per_core x cores + per_image x images (an
executor's images of each batch) beside the values the launcher sizes heaps with
(dlobd.stacks.bigdl's HeapUse for vgg16).
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from dlobd.execution import apptainer
from dlobd.stacks import bigdl

ROOT = Path(__file__).resolve().parents[2]
# BigDL 0.3.0's jar and Spark 2.1's spark-submit inside the paper profile's image
JAR = "/opt/dlobd/jars/bigdl/bigdl-SPARK_2.1-0.3.0-jar-with-dependencies.jar"
SPARK_SUBMIT = "/usr/local/bin/spark-submit"
# "[Full GC (...) [PSYoungGen: ...] [ParOldGen: ...] before->after(total), [Metaspace ...": the
# whole heap's triple is the third
FULL_GC = re.compile(r"Full GC.*?\d+K->\d+K\(\d+K\)\].*?\d+K->\d+K\(\d+K\)\] (\d+)K->(\d+)K\((\d+)K\)")


def live_mb(gc_log: Path) -> int:
    """The most heap (MiB) the JVM held after a full collection."""
    afters = [int(m[2]) for m in FULL_GC.finditer(gc_log.read_text())]
    if not afters:
        raise SystemExit(f"{gc_log}: no full collection logged: the run is too short to measure")
    return max(afters) // 1024


def measure(prefix: list[str], work: Path, data: Path, cores: int, per_core: int, heap: str) -> int:
    batch = cores * per_core
    gc_log = work / f"gc-{cores}x{per_core}.log"
    argv = [*prefix, SPARK_SUBMIT, "--master", f"local[{cores}]", "--driver-memory", heap,
            "--conf", f"spark.driver.extraJavaOptions=-XX:+PrintGCDetails -Xmn256m -Xloggc:{gc_log}",
            "--conf", "spark.ui.enabled=false",
            "--class", "com.intel.analytics.bigdl.models.vgg.Train", JAR, "-f", str(data), "-b", str(batch), "-e", "1"]
    with open(work / f"run-{cores}x{per_core}.log", "w") as log:
        if subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT, cwd=work):
            raise SystemExit(f"cores {cores}, batch {batch}: BigDL failed, see {log.name} in {work}")
    return live_mb(gc_log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", type=Path, required=True, help="the paper profile's image (.sif)")
    parser.add_argument("--layouts", nargs="+", default=["1x8", "2x8", "4x8", "8x8", "4x2"],
                        help="CORESxIMAGES: cores, and images a core of each batch")
    parser.add_argument("--records", type=int, default=512, help="training records (one epoch)")
    parser.add_argument("--heap", default="12g", help="the JVM's heap: room enough to measure, not a limit")
    parser.add_argument("--keep", type=Path, help="a new folder to keep the logs in (default: removed)")
    args = parser.parse_args()
    layouts = [tuple(int(n) for n in text.split("x")) for text in args.layouts]
    if len(layouts) < 3 or len({c for c, _ in layouts}) < 2 or len({i for _, i in layouts}) < 2:
        raise SystemExit("--layouts: at least 3, with 2 core counts and 2 image counts, to fit 3 terms")
    if args.keep:
        args.keep.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        data = work / "cifar10-synthetic"
        # a training batch of --records, a test set of a quarter of them (BigDL reads all five files)
        subprocess.run([sys.executable, str(ROOT / "workloads/data/make_datasets.py"), "cifar10-synthetic",
                        "--out", str(data), "--per-batch", str(args.records), "--test", str(args.records // 4)],
                       check=True, stdout=subprocess.DEVNULL)
        for name in ("data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"):
            (data / name).write_bytes(b"")
        prefix = apptainer.run_prefix(args.image, binds=[str(work)])
        rows = []
        for cores, per_core in layouts:
            live = measure(prefix, work, data, cores, per_core, args.heap)
            print(f"bigdl_vgg_live_heap_mb[cores={cores},images={cores * per_core}]: {live}", flush=True)
            rows.append((cores, cores * per_core, live))
    design = np.array([[1, c, i] for c, i, _ in rows], float)
    fitted, *_ = np.linalg.lstsq(design, np.array([r[2] for r in rows], float), rcond=None)
    for name, value in zip(("base", "per_core", "per_image"), fitted):
        print(f"bigdl_vgg_heap_{name}_mb: {value:.0f}")
    print(f"bigdl_vgg_heap_fit_worst_mb: {np.abs(design @ fitted - [r[2] for r in rows]).max():.0f}")
    use = bigdl.MODELS["vgg16"].heap
    print(f"launcher_heap_use_mb: base {use.base_mb}, per core {use.per_core_mb}, per image {use.per_image_mb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
