"""SHOW / DESCRIBE / information_schema, USE and case-insensitive names
through Python's ADBC driver, as a person at a notebook tries them."""

import adbc_driver_flightsql.dbapi as fsql
import pytest


def rows(cur, q):
    cur.execute(q)
    return cur.fetchall()


def columns(cur):
    return [d[0] for d in cur.description]


def test_show_and_describe(conn):
    with conn.cursor() as cur:
        assert rows(cur, "SHOW CATALOGS") == [("local",)]
        assert columns(cur) == ["Catalog"]
        tables = [r[0] for r in rows(cur, "SHOW TABLES")]
        assert {"orders", "customers", "events"} <= set(tables) and tables == sorted(tables)
        assert columns(cur) == ["name"]
        desc = rows(cur, "DESCRIBE orders")
        assert columns(cur) == ["column_name", "column_type", "null", "key", "default", "extra"]
        assert desc[0] == ("id", "BIGINT", "NO", None, None, None)
        assert ("amount", "DECIMAL(12,2)", "YES", None, None, None) in desc
        assert rows(cur, "DESC SELECT count(*) AS n FROM orders") == [("n", "BIGINT", "YES", None, None, None)]
        assert rows(cur, "SHOW COLUMNS FROM Orders LIKE 'customer%'") == [("customer_id", "BIGINT", "", "")]
        ddl = rows(cur, "SHOW CREATE TABLE orders")[0][0]
        assert ddl.startswith('CREATE TABLE "local"."default"."orders" (') and "PARTITIONED BY (day(\"ordered_at\"))" in ddl


def test_information_schema(conn):
    with conn.cursor() as cur:
        got = rows(cur, """SELECT t.table_name, count(c.column_name)
            FROM information_schema.tables t JOIN information_schema.columns c
              ON c.table_schema = t.table_schema AND c.table_name = t.table_name
            WHERE t.table_schema = 'default' AND t.table_name IN ('orders', 'customers')
            GROUP BY 1 ORDER BY 1""")
        want = [(t, len(rows(cur, f"DESCRIBE {t}"))) for t in ("customers", "orders")]
        assert got == want and want[1] == ("orders", 6), got
        assert ("local", "default") in rows(cur, "SELECT * FROM information_schema.schemata")
        assert rows(cur, "SELECT current_catalog(), current_schema()") == [("local", "default")]


def test_names_and_use(uri):
    with fsql.connect(uri, autocommit=True, db_kwargs={
            "adbc.flight.sql.rpc.with_cookie_middleware": "true"}) as c, c.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS local.PySurf")
        cur.execute("CREATE TABLE IF NOT EXISTS local.pysurf.CamelCase (Id INTEGER)")
        cur.execute("INSERT INTO PYSURF.camelcase VALUES (1), (2)")
        assert rows(cur, "SELECT count(*) FROM local.PYSURF.CAMELCASE") == [(2,)]
        assert columns(cur) == ["count_star()"]
        assert rows(cur, "SELECT count(*) FROM default.orders") == rows(cur, 'SELECT count(*) FROM "default".orders')
        cur.execute("USE local.pysurf")
        assert rows(cur, "SELECT current_schema()") == [("PySurf",)]
        assert rows(cur, "SELECT id FROM camelcase ORDER BY id") == [(1,), (2,)]
        with pytest.raises(fsql.Error) as e:
            cur.execute("SELECT * FROM camelcaes")
        msg = str(e.value)
        assert "did you mean CamelCase?" in msg and "__icefloe" not in msg and "planner:" not in msg, msg
        with pytest.raises(fsql.Error) as e:
            cur.execute('SELECT * FROM "camelcase"')
        assert "table camelcase does not exist in schema local.PySurf" in str(e.value)
        cur.execute("DROP TABLE CamelCase")
        cur.execute('USE "default"')
        cur.execute("DROP SCHEMA PySurf")


def test_errors_name_the_users_sql(conn):
    with conn.cursor() as cur:
        with pytest.raises(fsql.Error) as e:
            cur.execute("SELECT o.nosuch FROM orders o")
        msg = str(e.value)
        assert "nosuch" in msg and "__icefloe" not in msg and "LINE 1" not in msg, msg
        with pytest.raises(fsql.Error) as e:
            cur.execute("SELECT * FROM defalt.orders")
        assert "schema defalt does not exist in catalog local; did you mean default?" in str(e.value)
