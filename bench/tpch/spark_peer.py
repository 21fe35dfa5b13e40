"""The Spark peer of the TPC-H benchmark (run by bench.py in its own process).

pyspark 3.5 in local[2] with the Iceberg Spark runtime, reading the very
tables icefloe wrote: Iceberg's JdbcCatalog over icefloe's SQLite catalog
file (catalog `local`, namespace `default`) and the same warehouse. Each
query runs --reps times (results collected to the driver; TPC-H answers are
small); medians go to --out as JSON. Session start-up is reported
separately and not counted.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import tpch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--jars", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--driver-memory", default="4g")
    a = ap.parse_args()
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    spark = (SparkSession.builder.master("local[2]").appName("icefloe-tpch")
             .config("spark.jars", a.jars)
             .config("spark.driver.memory", a.driver_memory)
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.local", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.local.catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog")
             .config("spark.sql.catalog.local.uri", f"jdbc:sqlite:{a.catalog}")
             .config("spark.sql.catalog.local.jdbc.schema-version", "V1")
             .config("spark.sql.catalog.local.warehouse", f"file:{a.warehouse}")
             .config("spark.sql.defaultCatalog", "local")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("USE local.default")
    startup = time.perf_counter() - t0
    qs = tpch.queries()
    if a.only:
        keep = set(a.only.split(","))
        qs = [q for q in qs if q[0] in keep]
    out = {"startup": startup, "queries": {}}
    for name, sql in qs:
        times, rows = [], None
        try:
            for _ in range(a.reps):
                t = time.perf_counter()
                rows = len(spark.sql(sql).collect())
                times.append(time.perf_counter() - t)
            out["queries"][name] = {"median": statistics.median(times), "times": times, "rows": rows}
        except Exception as e:  # reported per query
            out["queries"][name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(name, out["queries"][name], flush=True)
        pathlib.Path(a.out).write_text(json.dumps(out, indent=1))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
