"""MERGE INTO, TRUNCATE and CREATE OR REPLACE TABLE through Python's ADBC
driver, with the counts and errors a notebook user sees."""

import adbc_driver_flightsql.dbapi as fsql
import pytest


def rows(cur, q):
    cur.execute(q)
    return sorted(cur.fetchall(), key=repr)


def test_merge(conn):
    """docs/sql.md's MERGE and TRUNCATE examples, as written there."""
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE stock (id BIGINT, name VARCHAR, n INTEGER)")
        cur.execute("INSERT INTO stock VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)")
        cur.execute("""MERGE INTO stock AS t
USING (VALUES (1, 'uno'), (2, NULL), (4, 'cuatro')) AS s(id, name) ON t.id = s.id
WHEN MATCHED AND s.name IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET name = s.name, n = t.n + 10
WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)""")
        assert cur.rowcount == 3
        assert rows(cur, "SELECT * FROM stock") == [(1, "uno", 11), (3, "three", 3), (4, "cuatro", None)]
        with pytest.raises(fsql.Error) as e:
            cur.execute("""MERGE INTO stock AS t USING (VALUES (1), (1)) AS s(id) ON t.id = s.id
                WHEN MATCHED THEN UPDATE SET n = 0""")
        assert "matched more than one source row" in str(e.value)
        assert rows(cur, "SELECT n FROM stock WHERE id = 1") == [(11,)]
        cur.execute("TRUNCATE TABLE stock")
        assert cur.rowcount == 3
        assert rows(cur, "SELECT count(*) FROM stock") == [(0,)]
        cur.execute("DROP TABLE stock")


def test_truncate_and_create_or_replace(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE py_repl AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(k, s)")
        cur.execute("CREATE OR REPLACE TABLE py_repl AS SELECT k + 1 AS k, s FROM py_repl")
        assert rows(cur, "SELECT * FROM py_repl") == [(2, "a"), (3, "b")]
        cur.execute("TRUNCATE TABLE py_repl")
        assert cur.rowcount == 2
        assert rows(cur, "SELECT count(*) FROM py_repl") == [(0,)]
        cur.execute("CREATE OR REPLACE TABLE py_repl (id BIGINT)")
        assert rows(cur, "SELECT column_name FROM information_schema.columns WHERE table_name = 'py_repl'") == [("id",)]
        cur.execute("DROP TABLE py_repl")
