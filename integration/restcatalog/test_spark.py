"""Spark (pyspark 3.5 with iceberg-spark-runtime-3.5_2.12) reads and
writes icefloe's tables through the REST catalog over TLS, logged in with
OAuth2 client credentials: one session, a few statements."""

import os
import subprocess

import pytest

from conftest import USERS, run_sql


@pytest.fixture(scope="module")
def spark(server, schema, tmp_path_factory):
    from pyspark.sql import SparkSession

    jar = os.environ.get("ICEBERG_SPARK_JAR")
    if not jar:
        raise RuntimeError("ICEBERG_SPARK_JAR is not set: run this suite through ./run")
    # Java trusts the development CA through a trust store of its own.
    store = str(tmp_path_factory.mktemp("spark") / "trust.p12")
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "icefloe", "-file", server.ca_file,
                    "-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit"],
                   check=True, capture_output=True)
    java_opts = f"-Djavax.net.ssl.trustStore={store} -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=PKCS12"
    s = (SparkSession.builder.master("local[1]").appName("icefloe-rest")
         .config("spark.jars", jar)
         .config("spark.driver.extraJavaOptions", java_opts)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "rest")
         .config("spark.sql.catalog.ice.uri", server.rest)
         .config("spark.sql.catalog.ice.warehouse", "local")
         .config("spark.sql.catalog.ice.credential", "root:" + USERS["root"][0])
         .config("spark.sql.catalog.ice.scope", "catalog")
         .getOrCreate())
    try:
        yield s
    finally:
        s.stop()


def test_spark_reads_and_writes_through_rest(server, schema, spark):
    # Spark's CREATE TABLE … AS is a staged create committed with its rows.
    spark.sql(f"CREATE TABLE ice.{schema}.spark_t USING iceberg AS "
              "SELECT CAST(id AS BIGINT) AS id, CAST(id * 10 AS BIGINT) AS v FROM range(5)")
    spark.sql(f"INSERT INTO ice.{schema}.spark_t VALUES (100, 1000), (101, 1010)")
    assert run_sql(server, f"SELECT count(*), sum(v) FROM local.{schema}.spark_t")[0] == (7, 100 + 2010)
    run_sql(server, f"INSERT INTO local.{schema}.spark_t VALUES (200, 2000)")
    spark.sql(f"REFRESH TABLE ice.{schema}.spark_t")
    got = spark.sql(f"SELECT count(*) AS n, sum(v) AS s FROM ice.{schema}.spark_t").collect()[0]
    assert (got.n, got.s) == (8, 100 + 2010 + 2000)
    spark.sql(f"DELETE FROM ice.{schema}.spark_t WHERE id >= 100")
    assert run_sql(server, f"SELECT count(*) FROM local.{schema}.spark_t")[0][0] == 5
    names = [r.tableName for r in spark.sql(f"SHOW TABLES IN ice.{schema}").collect()]
    assert "spark_t" in names
    assert run_sql(server, f"SELECT count(*) FROM local.default.orders")[0][0] == \
        spark.sql("SELECT count(*) AS n FROM ice.default.orders").collect()[0].n


def test_spark_views_through_rest(server, schema, spark):
    """A view Spark creates through the REST catalog is what icefloe's SQL
    expands, and a view made through SQL is one Spark reads."""
    run_sql(server, f"CREATE OR REPLACE TABLE local.{schema}.spark_vt AS SELECT CAST(range AS BIGINT) AS id FROM range(6)")
    spark.sql(f"USE ice.{schema}")
    spark.sql("CREATE OR REPLACE VIEW spark_v AS SELECT id FROM spark_vt WHERE id < 4")
    assert run_sql(server, f"SELECT count(*), sum(id) FROM local.{schema}.spark_v")[0] == (4, 6)
    run_sql(server, f"CREATE OR REPLACE VIEW local.{schema}.sql_v AS SELECT id * 10 AS x FROM spark_vt WHERE id >= 4")
    got = sorted(r.x for r in spark.sql(f"SELECT x FROM ice.{schema}.sql_v").collect())
    assert got == [40, 50]
    # A replace through Spark: a new version SQL sees.
    spark.sql("CREATE OR REPLACE VIEW spark_v AS SELECT id FROM spark_vt WHERE id < 2")
    assert run_sql(server, f"SELECT count(*) FROM local.{schema}.spark_v")[0][0] == 2
    views = [r.viewName for r in spark.sql(f"SHOW VIEWS IN ice.{schema}").collect()]
    assert "spark_v" in views and "sql_v" in views
