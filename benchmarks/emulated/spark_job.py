"""The Spark job `make bench-emulated` times: read a file from HDFS on every executor, move
every line through a shuffle, and count. Prints the counts, which the bench checks."""

import sys
import zlib
from operator import add

from pyspark.sql import SparkSession

path, executors = sys.argv[1], int(sys.argv[2])
spark = SparkSession.builder.appName("dlobd-bench-emulated").getOrCreate()
lines = spark.sparkContext.textFile(path, minPartitions=executors * 2)
# a shuffle keyed by the line's checksum sends most lines to another executor
by_key = lines.map(lambda line: (zlib.crc32(line.encode()) % (executors * 4), len(line) + 1)).reduceByKey(add)
print(f"lines: {lines.count()}")
print(f"bytes: {sum(by_key.values().collect())}")
spark.stop()
