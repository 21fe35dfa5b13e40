"""Bound parameters through Python ADBC: every type the planner infers a
parameter as, in every place a parameter can stand (WHERE, CAST, IN,
BETWEEN, LIKE, INSERT … VALUES, UPDATE SET, DELETE), NULLs, and
executemany of many rows in one commit. The JDBC suite checks the same
through the JDBC driver (integration/jdbc/Params.java).
"""

import datetime
import decimal
import time
import uuid
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

LA = ZoneInfo("America/Los_Angeles")
UUID = uuid.UUID("0193c1b4-7e25-7c4f-9a52-000000000001")

# column, DDL type, a value as Python binds it, the value as it reads back,
# the value's text in DuckDB (CAST(col AS VARCHAR)).
TYPES = [
    ("c_int", "INTEGER", -7, -7, "-7"),
    ("c_long", "BIGINT", 9007199254740993, 9007199254740993, "9007199254740993"),
    ("c_bool", "BOOLEAN", True, True, "true"),
    ("c_float", "FLOAT", 1.5, 1.5, "1.5"),
    ("c_double", "DOUBLE", 2.25, 2.25, "2.25"),
    ("c_dec", "DECIMAL(12,2)", decimal.Decimal("1234567890.12"), decimal.Decimal("1234567890.12"), "1234567890.12"),
    ("c_date", "DATE", datetime.date(2024, 2, 29), datetime.date(2024, 2, 29), "2024-02-29"),
    ("c_time", "TIME", datetime.time(13, 14, 15, 123456), datetime.time(13, 14, 15, 123456), "13:14:15.123456"),
    ("c_ts", "TIMESTAMP", datetime.datetime(2024, 2, 29, 23, 59, 58, 500001),
     datetime.datetime(2024, 2, 29, 23, 59, 58, 500001), "2024-02-29 23:59:58.500001"),
    # An aware datetime in another zone is the instant it names.
    ("c_tz", "TIMESTAMPTZ", datetime.datetime(2024, 1, 22, 4, 0, 0, 250000, tzinfo=LA),
     datetime.datetime(2024, 1, 22, 12, 0, 0, 250000, tzinfo=datetime.timezone.utc), "2024-01-22 12:00:00.25+00"),
    ("c_str", "VARCHAR", "it's; -- é", "it's; -- é", "it's; -- é"),
    # UUIDs bind as their text, or as an arrow.uuid value.
    ("c_uuid", "UUID", str(UUID), str(UUID), str(UUID)),
    ("c_bin", "BLOB", b"\x00\xffab", b"\x00\xffab", "\\x00\\xFFab"),
    # Nested types bind as DuckDB's literal text.
    ("c_list", "INTEGER[]", "[1, 2, NULL]", [1, 2, None], "[1, 2, NULL]"),
    ("c_struct", "STRUCT(a INTEGER, b VARCHAR)", "{'a': 5, 'b': 'x, y'}", {"a": 5, "b": "x, y"}, "{'a': 5, 'b': 'x, y'}"),
    ("c_map", "MAP(VARCHAR, BIGINT)", "{a=1, b=2}", [("a", 1), ("b", 2)], "{a=1, b=2}"),
]


@pytest.fixture()
def typed_table(conn):
    name = "py_params_" + uuid.uuid4().hex[:8]
    cols = ", ".join(f"{c} {t}" for c, t, *_ in TYPES)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id BIGINT NOT NULL, {cols})")
    yield name
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE {name}")


def _one(cur, q, params=()):
    cur.execute(q, params)
    rows = cur.fetchall()
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("col,_t,value,back,text", TYPES, ids=[t[0] for t in TYPES])
def test_every_type_round_trips(conn, typed_table, col, _t, value, back, text):
    t = typed_table
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {t} (id, {col}) VALUES (?, ?)", (1, value))
        cur.execute(f"INSERT INTO {t} (id, {col}) VALUES (?, ?)", (2, None))
        # What was stored, in DuckDB's own words, and what reads back.
        assert _one(cur, f"SELECT CAST({col} AS VARCHAR) FROM {t} WHERE id = 1") == (text,)
        assert _one(cur, f"SELECT {col} FROM {t} WHERE id = 1") == (back,)
        assert _one(cur, f"SELECT {col} FROM {t} WHERE id = 2") == (None,)
        # The same value finds the row in WHERE, and NULL finds none.
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", (value,)) == (1,)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", (None,)) == (0,)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} IS NOT DISTINCT FROM ?", (None,)) == (1,)
        # UPDATE SET with parameters in SET and WHERE.
        cur.execute(f"UPDATE {t} SET {col} = ? WHERE id = ?", (value, 2))
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", (value,)) == (2,)
        cur.execute(f"UPDATE {t} SET {col} = ? WHERE id = ?", (None, 1))
        assert _one(cur, f"SELECT id FROM {t} WHERE {col} IS NULL") == (1,)
        # IN, BETWEEN and CAST of the same value (row 2 holds it, row 1 NULL).
        assert _one(cur, f"SELECT id FROM {t} WHERE {col} IN (?, ?)", (value, None)) == (2,)
        if not _t.endswith((")", "]")):  # DuckDB has no BETWEEN for lists, structs, maps
            assert _one(cur, f"SELECT id FROM {t} WHERE {col} BETWEEN ? AND ?", (value, value)) == (2,)
        assert _one(cur, f"SELECT CAST(? AS {_t}) AS x", (value,)) == (back,)
        # DELETE with a parameter in WHERE.
        cur.execute(f"DELETE FROM {t} WHERE {col} = ?", (value,))
        assert _one(cur, f"SELECT count(*) FROM {t}") == (1,)


# The Iceberg types SQL cannot create, in the tables integration/fixture
# made (an int id and one column): table, column, the value as Python binds
# it, the same value as Arrow data, its text in DuckDB and how it reads back.
FIXTURE_TYPES = [
    ("fixed_t", "c_fixed", b"\x00\xffab", pa.array([b"\x00\xffab"], pa.binary(4)), "\\x00\\xFFab", b"\x00\xffab"),
    ("ns_t", "c_ns", datetime.datetime(2024, 2, 29, 23, 59, 58, 500001),
     pa.array([datetime.datetime(2024, 2, 29, 23, 59, 58, 500001)], pa.timestamp("ns")),
     "2024-02-29 23:59:58.500001", datetime.datetime(2024, 2, 29, 23, 59, 58, 500001)),
]


@pytest.mark.parametrize("tbl,col,value,arrow_value,text,back", FIXTURE_TYPES, ids=[t[0] for t in FIXTURE_TYPES])
def test_fixture_types_round_trip(conn, tbl, col, value, arrow_value, text, back):
    t = "fixture." + tbl
    with conn.cursor() as cur:
        cur.execute(f"DELETE FROM {t}")
        cur.execute(f"INSERT INTO {t} (id, {col}) VALUES (?, ?)", (1, value))
        cur.execute(f"INSERT INTO {t} (id, {col}) VALUES (?, ?)", (2, None))
        assert _one(cur, f"SELECT CAST({col} AS VARCHAR) FROM {t} WHERE id = 1") == (text,)
        assert _one(cur, f"SELECT {col} FROM {t} WHERE id = 1") == (back,)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", (value,)) == (1,)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", pa.record_batch([arrow_value], names=["v"])) == (1,)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} IS NOT DISTINCT FROM ?", (None,)) == (1,)
        cur.execute(f"UPDATE {t} SET {col} = ? WHERE id = ?", (value, 2))
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE {col} = ?", (value,)) == (2,)
        cur.execute(f"DELETE FROM {t} WHERE {col} = ? AND id = ?", (value, 1))
        assert _one(cur, f"SELECT count(*) FROM {t}") == (1,)
        # Arrow data binds as it is.
        cur.execute(f"INSERT INTO {t} (id, {col}) VALUES (?, ?)",
                    pa.record_batch([pa.array([3], pa.int32()), arrow_value], names=["id", "v"]))
        assert _one(cur, f"SELECT CAST({col} AS VARCHAR) FROM {t} WHERE id = 3") == (text,)
        cur.execute(f"DELETE FROM {t}")


def test_timestamp_ns_keeps_nanoseconds(conn):
    # A timestamp[ns] parameter into a timestamp_ns column keeps its
    # nanoseconds (Python datetimes stop at microseconds).
    ns = pa.array([1709251198500001234], pa.timestamp("ns"))  # 2024-02-29 23:59:58.500001234
    with conn.cursor() as cur:
        cur.execute("DELETE FROM fixture.ns_t")
        cur.execute("INSERT INTO fixture.ns_t VALUES (?, ?)", pa.record_batch([pa.array([1], pa.int32()), ns], names=["id", "v"]))
        assert _one(cur, "SELECT CAST(c_ns AS VARCHAR) FROM fixture.ns_t") == ("2024-02-29 23:59:58.500001234",)
        assert _one(cur, "SELECT count(*) FROM fixture.ns_t WHERE c_ns = ?", pa.record_batch([ns], names=["v"])) == (1,)
        cur.execute("DELETE FROM fixture.ns_t")


def test_uuid_extension_value(conn, typed_table):
    # Arrow data binds as it is: an arrow.uuid column.
    t = typed_table
    u = pa.array([UUID.bytes], pa.uuid())
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {t} (id, c_uuid) VALUES (?, ?)",
                    pa.record_batch([pa.array([1], pa.int64()), u], names=["id", "u"]))
        assert _one(cur, f"SELECT CAST(c_uuid AS VARCHAR) FROM {t}") == (str(UUID),)
        assert _one(cur, f"SELECT count(*) FROM {t} WHERE c_uuid = ?", pa.record_batch([u], names=["u"])) == (1,)


def test_parameters_in_every_position(conn):
    with conn.cursor() as cur:
        # CAST, IN, BETWEEN, LIKE over the demo orders (amount DECIMAL(12,2),
        # ordered_at TIMESTAMPTZ, ordered_on DATE).
        assert _one(cur, "SELECT CAST(? AS DECIMAL(12,2)) AS x", (decimal.Decimal("12.34"),)) == (decimal.Decimal("12.34"),)
        assert _one(cur, "SELECT CAST(? AS DECIMAL(12,2)) AS x", ("12.345",)) == (decimal.Decimal("12.35"),)
        want = _one(cur, "SELECT count(*) FROM orders WHERE amount > 100.5")
        assert _one(cur, "SELECT count(*) FROM orders WHERE amount > ?", (decimal.Decimal("100.5"),)) == want
        want = _one(cur, "SELECT count(*) FROM orders WHERE id IN (3, 5, 7)")
        assert _one(cur, "SELECT count(*) FROM orders WHERE id IN (?, ?, ?)", (3, 5, 7)) == want
        want = _one(cur, "SELECT count(*) FROM orders WHERE ordered_on BETWEEN DATE '2024-01-03' AND DATE '2024-01-09'")
        assert _one(cur, "SELECT count(*) FROM orders WHERE ordered_on BETWEEN ? AND ?",
                    (datetime.date(2024, 1, 3), datetime.date(2024, 1, 9))) == want
        want = _one(cur, "SELECT count(*) FROM orders WHERE status LIKE 'sh%'")
        assert _one(cur, "SELECT count(*) FROM orders WHERE status LIKE ?", ("sh%",)) == want
        want = _one(cur, "SELECT count(*) FROM orders WHERE ordered_at < TIMESTAMPTZ '2024-01-22 12:00:00+00'")
        assert want[0] > 0
        utc = datetime.datetime(2024, 1, 22, 12, 0, tzinfo=datetime.timezone.utc)
        assert _one(cur, "SELECT count(*) FROM orders WHERE ordered_at < ?", (utc,)) == want
        assert _one(cur, "SELECT count(*) FROM orders WHERE ordered_at < ?", (utc.astimezone(LA),)) == want


def test_executemany_commits_once(conn):
    name = "py_batch_" + uuid.uuid4().hex[:8]
    n = 10_000
    rows = [(i, f"label {i}", decimal.Decimal(i) / 100, datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i))
            for i in range(n)]
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id BIGINT NOT NULL, label VARCHAR, price DECIMAL(10,2), made TIMESTAMP)")
        start = time.monotonic()
        cur.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", rows)
        took = time.monotonic() - start
        print(f"executemany of {n} rows: {took:.2f} s ({n / took:.0f} rows/s)")
        assert _one(cur, f"SELECT count(*), sum(id), sum(price), max(made) FROM {name}") == (
            n, n * (n - 1) // 2, sum(r[2] for r in rows), rows[-1][3])
        assert _one(cur, f'SELECT count(*) FROM "{name}$snapshots"') == (1,)
        # A NULL in a NOT NULL column names its row and commits nothing.
        bad = rows[:5] + [(None, "x", None, None)] + rows[5:10]
        with pytest.raises(Exception) as e:
            cur.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", bad)
        assert "parameter row 6" in str(e.value) and "NOT NULL" in str(e.value)
        assert _one(cur, f'SELECT count(*) FROM "{name}$snapshots"') == (1,)
        cur.execute(f"DROP TABLE {name}")
