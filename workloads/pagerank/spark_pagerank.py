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

Written for Python 2.7 and 3 alike (no f-strings, annotations or pathlib) because the paper
profile's Spark 2.1 PySpark runs it in Python 2.7 (DLOBD_TFOS_PYTHON): Spark 2.1.0's PySpark fails
on Python 3.6 and newer (SPARK-19019), every Spark 2.x's on 3.8 and newer (SPARK-29536), and the
stacks' Python is newer. It has run so in Spark 2.1.2's local mode under Python 2.7.18 (the paper
profile's image; not on YARN), its ranks matching a numpy computation of SparkPageRank's
recurrence to a relative 1e-15.
"""

from __future__ import absolute_import, division, print_function, unicode_literals

import argparse
import io
import operator
import os
import sys
import time

REPORT_NAME = "hibench.report"
REPORT_COLUMNS = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                  "Throughput/node")
# HiBench's default column layout (its hibench.report.formats)
REPORT_WIDTHS = (12, 10, 8, 20, 20, 20, 20)
DAMPING = 0.85


def parse_link(line):
    fields = line.split()
    if len(fields) < 2:
        raise ValueError("not a link line (two fields '<from> <to>' expected): {0!r}".format(line))
    return fields[-2], fields[-1]


def contributions(links_and_rank):
    targets, rank = links_and_rank
    share = rank / len(targets)
    return [(target, share) for target in targets]


def pagerank(lines, iterations, partitions):
    """The ranks after `iterations` rounds, as an RDD of (page, rank)."""
    links = lines.map(parse_link).distinct(partitions).groupByKey(partitions).cache()
    ranks = links.mapValues(lambda _: 1.0)
    for _ in range(iterations):
        received = links.join(ranks).values().flatMap(contributions)
        ranks = received.reduceByKey(operator.add).mapValues(lambda s: (1 - DAMPING) + DAMPING * s)
    return ranks


def report_line(values):
    # text in Python 2 as well (unicode_literals), which io.open's files take
    return " ".join("{0}".format(v).ljust(w) for v, w in zip(values, REPORT_WIDTHS)) + "\n"


def write_report(report_dir, workload, end, size, duration_ms, nodes):
    """Append the run's line (HiBench's arithmetic: whole bytes per second, truncated); the
    report's path."""
    duration_ms = max(duration_ms, 1)
    throughput = size * 1000 // duration_ms
    if not os.path.isdir(report_dir):
        os.makedirs(report_dir)
    path = os.path.join(report_dir, REPORT_NAME)
    stamp = time.localtime(end)
    with io.open(path, "a", encoding="utf-8") as fh:
        if fh.tell() == 0:
            fh.write(report_line(REPORT_COLUMNS))
        fh.write(report_line((workload, time.strftime("%Y-%m-%d", stamp), time.strftime("%H:%M:%S", stamp),
                              size, "{0:.3f}".format(duration_ms / 1000), throughput,
                              throughput // max(nodes, 1))))
    return path


def input_bytes(sc, path):
    """Bytes under a file system path (HDFS or local), through Hadoop's FileSystem as Spark sees it."""
    jvm = sc._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(sc._jsc.hadoopConfiguration())
    return int(fs.getContentSummary(hadoop_path).getLength())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edges", required=True, help="link lines: a file, folder or glob (HDFS or local)")
    p.add_argument("--input", help="the folder whose size the report states (default: --edges)")
    p.add_argument("--output", required=True, help="folder for the ranks (must not exist)")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--report-dir", required=True)
    p.add_argument("--nodes", type=int, default=1, help="worker nodes, for Throughput/node")
    p.add_argument("--workload", default="PySparkPagerank", help="the report's Type column")
    a = p.parse_args(argv)
    if a.iterations < 1 or a.partitions < 1 or a.nodes < 1:
        p.error("--iterations, --partitions and --nodes must be at least 1")

    from pyspark import SparkConf, SparkContext

    sc = SparkContext(conf=SparkConf().setAppName("{0} ({1} iterations)".format(a.workload, a.iterations)))
    started_ms = sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime()
    size = input_bytes(sc, a.input or a.edges)
    ranks = pagerank(sc.textFile(a.edges, a.partitions), a.iterations, a.partitions)
    ranks.map(lambda page_rank: "{0}\t{1!r}".format(*page_rank)).saveAsTextFile(a.output)
    sc.stop()
    end = time.time()
    path = write_report(a.report_dir, a.workload, end, size, int(end * 1000) - started_ms, a.nodes)
    print("{0}: report line written to {1}".format(a.workload, path))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
