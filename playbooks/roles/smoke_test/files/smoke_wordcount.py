"""Smoke test of Spark on YARN: count the words of a text file in HDFS, write the counts back.

  spark-submit smoke_wordcount.py <hdfs input file> <hdfs output dir>

Python 2.7 and 3 alike: the paper profile's Spark 2.1 runs its PySpark on Python 2.7.
"""

from __future__ import print_function

import sys

from pyspark.sql import SparkSession


def main(source, target):
    spark = SparkSession.builder.appName("dlobd-smoke-wordcount").getOrCreate()
    counts = (
        spark.sparkContext.textFile(source)
        .flatMap(lambda line: line.split())
        .map(lambda word: (word, 1))
        .reduceByKey(lambda a, b: a + b)
        .sortByKey()
        .map(lambda pair: "%s\t%d" % pair)
    )
    counts.coalesce(1).saveAsTextFile(target)
    print("master=%s application=%s" % (spark.sparkContext.master, spark.sparkContext.applicationId))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
