"""Smoke test of Spark on YARN: count the words of a text file in HDFS, write the counts back.

  spark-submit smoke_wordcount.py <hdfs input file> <hdfs output dir>
"""

import sys

from pyspark.sql import SparkSession


def main(source: str, target: str) -> None:
    spark = SparkSession.builder.appName("dlobd-smoke-wordcount").getOrCreate()
    counts = (
        spark.sparkContext.textFile(source)
        .flatMap(str.split)
        .map(lambda word: (word, 1))
        .reduceByKey(lambda a, b: a + b)
        .sortByKey()
        .map(lambda pair: f"{pair[0]}\t{pair[1]}")
    )
    counts.coalesce(1).saveAsTextFile(target)
    print(f"master={spark.sparkContext.master} application={spark.sparkContext.applicationId}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
