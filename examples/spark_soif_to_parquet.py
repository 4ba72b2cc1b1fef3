"""A Spark job: SOIF archives to Parquet (and a per-template count), for spark-submit.

    spark-submit --master local[2] examples/spark_soif_to_parquet.py IN OUT.parquet [SPLIT_SIZE]

IN is a file, directory or glob of SOIF archives (plain or compressed) on a filesystem
every executor sees at the same path, or on a remote one (``s3://bucket/dumps/``,
``gs://…``, ``hdfs://…``: soif.spark reads them through pyarrow.fs, credentials from each
node's environment); OUT is written with Spark's Parquet writer (``s3a://`` for S3). Bad
records are kept aside: their bytes, error, file and offset go to OUT.rejected/ as JSON.
docs/spark.md, "On a cluster", shows how to ship the soif package to a cluster's executors.
"""

import sys

from pyspark.sql import SparkSession

import soif.spark


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    split_size = sys.argv[3] if len(sys.argv) > 3 else "128MiB"
    spark = SparkSession.builder.appName("soif-to-parquet").getOrCreate()
    soif.spark.register(spark)
    df = (
        spark.read.format("soif")
        .option("mode", "PERMISSIVE")
        .option("includeSource", "true")
        .option("splitSize", split_size)
        .load(src)
    )
    df.cache()
    good = df.where("_corrupt_record IS NULL").drop("_corrupt_record", "_source")
    good.write.mode("overwrite").parquet(out)
    bad = df.where("_corrupt_record IS NOT NULL").select("_corrupt_record.*", "_source.file")
    bad.write.mode("overwrite").json(out + ".rejected")  # bytes as base64
    good.groupBy("template").count().orderBy("template").show()
    print(f"records: {good.count()}, rejected: {bad.count()} (see {out}.rejected)")
    spark.stop()


if __name__ == "__main__":
    main()
