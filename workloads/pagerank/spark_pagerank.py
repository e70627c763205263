"""PageRank on Spark RDDs with the algorithm of Spark's SparkPageRank example (the program
HiBench's websearch/pagerank Spark workload runs), ending with one line in HiBench's report
format.

Input: text lines whose last two whitespace-separated fields are a link "<from> <to>"
(HiBench's edges files hold "<from>\\t<to>"); a link listed twice counts once. Every page
with links starts at rank 1.0; each iteration every page sends rank / (its number of
distinct links) to each page it links to, and a page's new rank is 0.15 + 0.85 * what it
received. A page nobody links to drops out after the first iteration, and a page without
links sends nothing: the ranks are SparkPageRank's, not normalised. Output: "<page>\\t<rank>"
text files under --output.

Report: one line appended to <--report-dir>/hibench.report (the column header first when the
file is new), in HiBench's layout: Type, Date, Time, Input_data_size, Duration(s),
Throughput(bytes/s), Throughput/node. Duration runs from the start of the JVM that
spark-submit started (the driver's Py4J gateway) to the SparkContext's stop, the span HiBench
times around spark-submit; Input_data_size is the bytes under --input (HiBench: its whole
Input folder, vertices and edges); Throughput is that over Duration in whole bytes/s, and per
node over --nodes.
"""

import argparse
import operator
import sys
import time
from pathlib import Path

REPORT_NAME = "hibench.report"
REPORT_COLUMNS = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                  "Throughput/node")
# HiBench's default column layout (its hibench.report.formats)
REPORT_WIDTHS = (12, 10, 8, 20, 20, 20, 20)
DAMPING = 0.85


def parse_link(line: str) -> tuple[str, str]:
    fields = line.split()
    if len(fields) < 2:
        raise ValueError(f"not a link line (two fields '<from> <to>' expected): {line!r}")
    return fields[-2], fields[-1]


def contributions(links_and_rank):
    targets, rank = links_and_rank
    share = rank / len(targets)
    return [(target, share) for target in targets]


def pagerank(lines, iterations: int, partitions: int):
    """The ranks after `iterations` rounds, as an RDD of (page, rank)."""
    links = lines.map(parse_link).distinct(partitions).groupByKey(partitions).cache()
    ranks = links.mapValues(lambda _: 1.0)
    for _ in range(iterations):
        received = links.join(ranks).values().flatMap(contributions)
        ranks = received.reduceByKey(operator.add).mapValues(lambda s: (1 - DAMPING) + DAMPING * s)
    return ranks


def report_line(values) -> str:
    return " ".join(str(v).ljust(w) for v, w in zip(values, REPORT_WIDTHS)) + "\n"


def write_report(report_dir: Path, workload: str, end: float, size: int, duration_ms: int,
                 nodes: int) -> Path:
    """Append the run's line (HiBench's arithmetic: whole bytes per second, truncated)."""
    duration_ms = max(duration_ms, 1)
    throughput = size * 1000 // duration_ms
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / REPORT_NAME
    stamp = time.localtime(end)
    with open(path, "a", encoding="utf-8") as fh:
        if fh.tell() == 0:
            fh.write(report_line(REPORT_COLUMNS))
        fh.write(report_line((workload, time.strftime("%Y-%m-%d", stamp), time.strftime("%H:%M:%S", stamp),
                              size, f"{duration_ms / 1000:.3f}", throughput, throughput // max(nodes, 1))))
    return path


def input_bytes(sc, path: str) -> int:
    """Bytes under a file system path (HDFS or local), through Hadoop's FileSystem as Spark sees it."""
    jvm = sc._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(sc._jsc.hadoopConfiguration())
    return int(fs.getContentSummary(hadoop_path).getLength())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edges", required=True, help="link lines: a file, folder or glob (HDFS or local)")
    p.add_argument("--input", help="the folder whose size the report states (default: --edges)")
    p.add_argument("--output", required=True, help="folder for the ranks (must not exist)")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--report-dir", type=Path, required=True)
    p.add_argument("--nodes", type=int, default=1, help="worker nodes, for Throughput/node")
    p.add_argument("--workload", default="PySparkPagerank", help="the report's Type column")
    a = p.parse_args(argv)
    if a.iterations < 1 or a.partitions < 1 or a.nodes < 1:
        p.error("--iterations, --partitions and --nodes must be at least 1")

    from pyspark import SparkConf, SparkContext

    sc = SparkContext(conf=SparkConf().setAppName(f"{a.workload} ({a.iterations} iterations)"))
    started_ms = sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime()
    size = input_bytes(sc, a.input or a.edges)
    ranks = pagerank(sc.textFile(a.edges, a.partitions), a.iterations, a.partitions)
    ranks.map(lambda page_rank: f"{page_rank[0]}\t{page_rank[1]!r}").saveAsTextFile(a.output)
    sc.stop()
    end = time.time()
    path = write_report(a.report_dir, a.workload, end, size, int(end * 1000) - started_ms, a.nodes)
    print(f"{a.workload}: report line written to {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
