"""Values at the edges through Python ADBC: whole-number floats as
parameters in every place one stands, the names of select-list columns
that hold parameters, and nested literals (and nested parameters) in
every statement that takes values. The JDBC suite checks the same
through its driver (integration/jdbc/Params.java)."""

import math
import uuid

import pyarrow as pa
import pytest

FLOATS = [7.0, 2.0, 100.0, -0.0, 0.0, 1e15, -1e15, 1e300, float("nan"), float("inf"), float("-inf"), 7.5]


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@pytest.fixture()
def floats_table(conn):
    name = "py_floats_" + uuid.uuid4().hex[:8]
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id BIGINT NOT NULL, d DOUBLE, f FLOAT)")
    yield name
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE {name}")


@pytest.mark.parametrize("v", FLOATS, ids=[repr(v) for v in FLOATS])
def test_whole_number_float_parameters(conn, floats_table, v):
    """A Python float is a double whatever its value; a float32 column
    of a parameter batch is a FLOAT. -0.0 keeps its sign."""
    t = floats_table
    v32 = pa.scalar(v, pa.float32()).as_py()  # v as a FLOAT holds it (1e300: inf)
    f32 = pa.record_batch([pa.array([v32], pa.float32())], names=["$1"])
    with conn.cursor() as cur:
        cur.execute("SELECT ? AS v, CAST(? AS DOUBLE) AS w", (v, v))
        got = cur.fetchone()
        assert _same(got[0], v) and _same(got[1], v), got
        cur.execute("SELECT CAST(? AS FLOAT) AS v", f32)
        assert _same(cur.fetchone()[0], v32)
        cur.execute(f"INSERT INTO {t} VALUES (1, ?, ?)", (v, v32))
        cur.execute(f"SELECT d, f FROM {t}")
        got = cur.fetchone()
        assert _same(got[0], v) and _same(got[1], v32), got
        cur.execute(f"SELECT count(*) FROM {t} WHERE d = ? AND f = ?", (v, v32))
        assert cur.fetchone() == (1,)
        cur.execute(f"SELECT count(*) FROM {t} WHERE d IN (?, 1.5) AND d BETWEEN ? AND ?", (v, v, v))
        assert cur.fetchone() == (1,)
        cur.execute(f"UPDATE {t} SET d = ? * 1, f = ? WHERE id = ?", (v, v32, 1))
        cur.execute(f"SELECT d FROM {t}")
        assert _same(cur.fetchone()[0], v)
        cur.execute(f"DELETE FROM {t} WHERE d = ?", (v,))
        cur.execute(f"SELECT count(*) FROM {t}")
        assert cur.fetchone() == (0,)


def test_whole_number_float_executemany(conn, floats_table):
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {floats_table} VALUES (?, ?, ?)",
                        [(i, v, pa.scalar(v, pa.float32()).as_py()) for i, v in enumerate(FLOATS)])
        cur.execute(f"SELECT id, d FROM {floats_table} ORDER BY id")
        got = cur.fetchall()
        assert len(got) == len(FLOATS) and all(_same(d, FLOATS[i]) for i, d in got), got


PARAM_VALUES = [1, 7.0, "s", True, b"\x00", None, 2.5]


@pytest.mark.parametrize("value", PARAM_VALUES, ids=[type(v).__name__ for v in PARAM_VALUES])
def test_parameter_column_names(conn, value):
    """Select-list columns with parameters are named by their alias, or
    as DuckDB names them ($1, ($2 + 1)): bare, aliased, in expressions,
    in subqueries, CTEs and UNION branches, for every parameter type."""
    cases = [
        ('SELECT ? AS x, ? AS "Mixed Alias", 7 AS y', 2, ["x", "Mixed Alias", "y"]),
        ("SELECT ?, ? AS b, ?", 3, ["$1", "b", "$3"]),
        ("SELECT coalesce(?, ?) AS c, (SELECT ?) AS s, [?] AS l", 4, ["c", "s", "l"]),
        ("SELECT coalesce(?, ?), (SELECT ?), [?]", 4, ["COALESCE($1, $2)", "(SELECT $3)", "main.list_value($4)"]),
        ("SELECT * FROM (SELECT ? AS z, ?)", 2, ["z", "$2"]),
        ("SELECT ? AS u UNION ALL SELECT ?", 2, ["u"]),
        ("WITH c AS (SELECT ? AS w, ?) SELECT * FROM c", 2, ["w", "$2"]),
        ("SELECT id, ? AS p FROM orders WHERE id = 1", 1, ["id", "p"]),
    ]
    with conn.cursor() as cur:
        for q, n, want in cases:
            cur.execute(q, (value,) * n)
            names = [d[0] for d in cur.description]
            assert names == want, (q, names)
            cur.fetchall()


def test_amount_times_parameter_keeps_alias(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT amount * ? AS x, amount * ? FROM orders WHERE id = 1", (2, 2))
        assert [d[0] for d in cur.description] == ["x", "(amount * $2)"]


NESTED_DDL = "(id BIGINT NOT NULL, l INTEGER[], s STRUCT(a INTEGER, b VARCHAR), m MAP(VARCHAR, INTEGER), ls STRUCT(a INTEGER, b VARCHAR)[])"


def test_nested_literals_in_every_statement(conn):
    """Lists, structs and maps (and strings of brackets and commas) in
    INSERT … VALUES, UPDATE … SET, MERGE … UPDATE SET / INSERT VALUES,
    and as parameters."""
    t = "py_nested_" + uuid.uuid4().hex[:8]
    read = f"SELECT id, CAST(l AS VARCHAR), CAST(s AS VARCHAR), CAST(m AS VARCHAR), CAST(ls AS VARCHAR) FROM {t} ORDER BY id"
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {t} {NESTED_DDL}")
        cur.execute(f"INSERT INTO {t} VALUES (1, [1, 2], {{'a': 7, 'b': 'x'}}, MAP {{'a': 1, 'b': 2}}, [{{'a': 1, 'b': '], ['}}])")
        cur.execute(f"UPDATE {t} SET l = [3, 4], s = {{'a': 8, 'b': 'c, d'}}, m = MAP {{'x, y': 3}} WHERE id = 1")
        cur.execute(f"UPDATE {t} SET ls = [{{'a': 2, 'b': '{{,}}'}}] WHERE l = [3, 4]")
        cur.execute(f"""MERGE INTO {t} USING (SELECT * FROM (VALUES (1), (2)) v(id)) AS src ON {t}.id = src.id
            WHEN MATCHED THEN UPDATE SET l = [5], m = MAP {{'k': 5}}
            WHEN NOT MATCHED THEN INSERT VALUES (src.id, [6, 7], {{'a': 6, 'b': 'WHEN'}}, MAP {{}}, [])""")
        cur.execute(f"UPDATE {t} SET l = ?, s = ? WHERE id = ?", ("[8, NULL]", "{'a': 9, 'b': 'x, y'}", 2))
        cur.execute(read)
        assert cur.fetchall() == [
            (1, "[5]", "{'a': 8, 'b': 'c, d'}", "{k=5}", "[{'a': 2, 'b': '{,}'}]"),
            (2, "[8, NULL]", "{'a': 9, 'b': 'x, y'}", "{}", "[]"),
        ]
        cur.execute(f"DROP TABLE {t}")
