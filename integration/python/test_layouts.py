"""adbc_ingest of every Arrow layout pyarrow produces (views, large and
fixed-size lists, dictionaries, run-end encoding, every decimal width,
time and timestamp unit and zone, narrow and unsigned integers, nested
combinations, extension types): a table made from it (mode create) and
one it is appended to read back the values sent, as the Arrow type
docs/types.md names; what Iceberg has no type for is refused with an
InvalidArgument error naming the column and its type."""

import datetime
import decimal
import re
import uuid

import adbc_driver_manager
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

UTC = datetime.timezone.utc
NY = "America/New_York"
D = decimal.Decimal


def _ts(unit, tz=None):
    vals = [datetime.datetime(2024, 3, 10, 6, 59, 59, 0 if unit in ("s", "ms") else 123456), None,
            datetime.datetime(1969, 12, 31, 23, 59, 59), datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 58)]
    if unit == "ms":
        vals[0] = vals[0].replace(microsecond=125000)
    if unit == "ns" or tz:
        # timestamp[ns] covers 1677 to 2262; Python cannot shift years 1
        # and 9999 into another zone.
        vals = vals[:3]
    if tz:
        vals = [v.replace(tzinfo=UTC) if v else None for v in vals]
    return pa.array(vals, pa.timestamp(unit, tz=tz))


def _ree(values, typ):
    return pc.run_end_encode(pa.array(values, typ))


# name, the column as sent, the Arrow type it reads back as. Values read
# back equal the values sent (pyarrow's to_pylist of each).
LAYOUTS = [
    ("string_view", pa.array(["a", None, "é" * 30, "", "x, y"], pa.string_view()), pa.string()),
    ("binary_view", pa.array([b"\x00\xff", None, b"x" * 40, b""], pa.binary_view()), pa.binary()),
    ("large_string", pa.array(["a", None, "b"], pa.large_string()), pa.string()),
    ("large_binary", pa.array([b"a", None, b""], pa.large_binary()), pa.binary()),
    ("list_view", pa.array([[1, 2], None, [], [3, None]], pa.list_view(pa.int32())), pa.list_(pa.int32())),
    ("list_view_shared", pa.ListViewArray.from_arrays([0, 1, 0], [3, 2, 1], pa.array([7, 8, 9], pa.int64())), pa.list_(pa.int64())),
    ("large_list_view", pa.array([[1.5], None, [2.5, 3.5]], pa.large_list_view(pa.float64())), pa.list_(pa.float64())),
    ("fixed_size_list", pa.array([[0.5, 1.5, 2.5], None, [3.0, 4.0, -0.0]], pa.list_(pa.float32(), 3)), pa.list_(pa.float32())),
    ("fixed_size_list_nulls", pa.array([[1, None], [None, None]], pa.list_(pa.int64(), 2)), pa.list_(pa.int64())),
    ("large_list", pa.array([[1, 2], None, []], pa.large_list(pa.int64())), pa.list_(pa.int64())),
    ("list_of_large_string", pa.array([["a", None], None], pa.list_(pa.large_string())), pa.list_(pa.string())),
    ("dictionary", pa.array(["x", "y", "x", None]).dictionary_encode(), pa.string()),
    ("dictionary_int8_index", pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), pa.array(["p", "q"])), pa.string()),
    ("run_end_encoded", _ree(["a", "a", "a", None, "b"], pa.string()), pa.string()),
    ("run_end_encoded_int", _ree([1, 1, 2, 2, 2], pa.int64()), pa.int64()),
    ("decimal32", pa.array([D("123.45"), None, D("-0.01")], pa.decimal32(5, 2)), pa.decimal128(5, 2)),
    ("decimal64", pa.array([D("1234567890.123"), None], pa.decimal64(13, 3)), pa.decimal128(13, 3)),
    ("decimal128", pa.array([D("1.5"), None], pa.decimal128(38, 10)), pa.decimal128(38, 10)),
    ("decimal256", pa.array([D("12345678901234567890123456789012345.678"), None, D("-1")], pa.decimal256(38, 3)), pa.decimal128(38, 3)),
    ("int8", pa.array([-128, 127, None], pa.int8()), pa.int32()),
    ("int16", pa.array([-32768, 32767, None], pa.int16()), pa.int32()),
    ("uint8", pa.array([0, 255, None], pa.uint8()), pa.int32()),
    ("uint16", pa.array([0, 65535, None], pa.uint16()), pa.int32()),
    ("uint32", pa.array([0, 4294967295, None], pa.uint32()), pa.int64()),
    ("uint64", pa.array([0, 9223372036854775807, None], pa.uint64()), pa.int64()),
    ("float16", pa.array(np.array([1.5, -0.0, np.inf], dtype=np.float16)), pa.float32()),
    ("date64", pa.array([datetime.date(2024, 2, 29), None, datetime.date(1, 1, 1)], pa.date64()), pa.date32()),
    ("time32_s", pa.array([datetime.time(13, 14, 15), None], pa.time32("s")), pa.time64("us")),
    ("time32_ms", pa.array([datetime.time(13, 14, 15, 125000), None], pa.time32("ms")), pa.time64("us")),
    ("time64_ns", pa.array([datetime.time(23, 59, 59, 999999), None], pa.time64("ns")), pa.time64("us")),
    ("timestamp_s", _ts("s"), pa.timestamp("us")),
    ("timestamp_ms", _ts("ms"), pa.timestamp("us")),
    ("timestamp_ns", _ts("ns"), pa.timestamp("us")),
    ("timestamp_s_utc", _ts("s", "UTC"), pa.timestamp("us", tz="UTC")),
    ("timestamp_ms_ny", _ts("ms", NY), pa.timestamp("us", tz="UTC")),
    ("timestamp_us_ny", _ts("us", NY), pa.timestamp("us", tz="UTC")),
    ("timestamp_ns_offset", _ts("ns", "+05:30"), pa.timestamp("us", tz="UTC")),
    ("struct_of_views", pa.array([{"s": "a", "l": [1, 2]}, None, {"s": None, "l": None}],
                                 pa.struct([("s", pa.string_view()), ("l", pa.list_view(pa.int32()))])),
     pa.struct([("s", pa.string()), ("l", pa.list_(pa.int32()))])),
    ("map_large_string", pa.array([[("a", 1), ("b", None)], None, []], pa.map_(pa.large_string(), pa.int32())),
     pa.map_(pa.string(), pa.int32())),
    ("map_of_fixed_lists", pa.array([[("k", [1.0, 2.0])], None], pa.map_(pa.string(), pa.list_(pa.float64(), 2))),
     pa.map_(pa.string(), pa.list_(pa.float64()))),
    ("list_of_struct_dict", pa.array([[{"a": "x"}], None], pa.list_(pa.struct([("a", pa.dictionary(pa.int32(), pa.string()))]))),
     pa.list_(pa.struct([("a", pa.string())]))),
    ("fixed_size_binary", pa.array([b"abcd", None], pa.binary(4)), pa.binary()),
    ("bool", pa.array([True, None, False]), pa.bool_()),
    ("float64", pa.array([float("nan"), -0.0, None]), pa.float64()),
    ("uuid", pa.array([uuid.UUID(int=1).bytes, None], pa.uuid()), pa.string()),
    ("json", pa.array(['{"a": 1}', None], pa.json_()), pa.string()),
    ("bool8", pa.array([1, 0, None], pa.int8()).cast(pa.bool8()), pa.bool_()),
]


def _expected(arr):
    """The Python values a column should read back as."""
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return [str(uuid.UUID(bytes=v)) if v is not None else None for v in arr.storage.to_pylist()]
        if t.extension_name == "arrow.bool8":
            return [bool(v) if v is not None else None for v in arr.storage.to_pylist()]
        return arr.storage.to_pylist()
    if pa.types.is_run_end_encoded(t):
        return pc.run_end_decode(arr).to_pylist()
    return arr.to_pylist()


def _same(got, want):
    if isinstance(want, float) and isinstance(got, float):
        return (got != got and want != want) or (got == want and str(got)[0] == str(want)[0])
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, tuple) and isinstance(got, tuple):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    return got == want


def _types_match(got, want):
    """Arrow types equal but for the names of list items and map entries."""
    if pa.types.is_list(want):
        return pa.types.is_list(got) and _types_match(got.value_type, want.value_type)
    if pa.types.is_map(want):
        return pa.types.is_map(got) and _types_match(got.key_type, want.key_type) and _types_match(got.item_type, want.item_type)
    if pa.types.is_struct(want):
        return (pa.types.is_struct(got) and [f.name for f in got] == [f.name for f in want]
                and all(_types_match(g.type, w.type) for g, w in zip(got, want)))
    return got == want


def _read(cur, name):
    cur.execute(f"SELECT c FROM {name} ORDER BY id")
    return cur.fetch_arrow_table().column("c")


@pytest.mark.parametrize("name,col,back", LAYOUTS, ids=[l[0] for l in LAYOUTS])
def test_layout_round_trips(conn, name, col, back):
    table = "py_layout_" + name + "_" + uuid.uuid4().hex[:6]
    n = len(col)
    data = pa.table({"id": pa.array(range(n), pa.int64()), "c": col})
    want = _expected(col)
    with conn.cursor() as cur:
        # mode create: the table's column type comes from the layout
        assert cur.adbc_ingest(table, data, mode="create") == n
        got = _read(cur, table)
        assert _types_match(got.type, back), f"{name} reads back as {got.type}, want {back}"
        assert _same(got.to_pylist(), want), f"{name}: {got.to_pylist()} != {want}"
        # mode append: the same layout into the table that now exists
        more = pa.table({"id": pa.array(range(n, 2 * n), pa.int64()), "c": col})
        assert cur.adbc_ingest(table, more, mode="append") == n
        got = _read(cur, table)
        assert _same(got.to_pylist(), want + want), f"{name} appended: {got.to_pylist()}"
        cur.execute(f"DROP TABLE {table}")


def test_layouts_append_to_sql_types(conn):
    """Views, fixed-size lists and run-end encoding append into columns
    made with SQL (VARCHAR, BLOB, FLOAT[], BIGINT), and a null-typed
    column fills a column of any type with NULLs."""
    table = "py_layout_sql_" + uuid.uuid4().hex[:6]
    data = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "s": pa.array(["a", None], pa.string_view()),
        "b": pa.array([b"\x01", b""], pa.binary_view()),
        "e": pa.array([[0.25, 0.5], None], pa.list_(pa.float32(), 2)),
        "n": _ree([5, 5], pa.int64()),
        "z": pa.nulls(2),
    })
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id BIGINT NOT NULL, s VARCHAR, b BLOB, e FLOAT[], n BIGINT, z DATE)")
        assert cur.adbc_ingest(table, data, mode="append") == 2
        cur.execute(f"SELECT s, b, e, n, z FROM {table} ORDER BY id")
        assert cur.fetchall() == [("a", b"\x01", [0.25, 0.5], 5, None), (None, b"", None, 5, None)]
        cur.execute(f"DROP TABLE {table}")


REFUSED = [
    ("duration", pa.array([1, None], pa.duration("s")), "duration"),
    ("duration_ns", pa.array([1], pa.duration("ns")), "duration"),
    ("interval", pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval()), "interval"),
    ("dense_union", pa.UnionArray.from_dense(pa.array([0], pa.int8()), pa.array([0], pa.int32()), [pa.array([1])]), "union"),
    ("sparse_union", pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1])]), "union"),
    ("decimal256_wide", pa.array([D("1")], pa.decimal256(50, 0)), "decimal256(50, 0)"),
    ("null", pa.nulls(2), "null"),
    ("list_of_null", pa.array([[None]], pa.list_(pa.null())), "null"),
    ("tensor", pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((1, 2, 2), dtype=np.float32)), "fixed_shape_tensor"),
    ("struct_of_duration", pa.array([{"d": 1}], pa.struct([("d", pa.duration("ms"))])), "duration"),
]


@pytest.mark.parametrize("name,col,typ", REFUSED, ids=[r[0] for r in REFUSED])
def test_layout_refused(conn, name, col, typ):
    table = "py_layout_no_" + name + "_" + uuid.uuid4().hex[:6]
    data = pa.table({"id": pa.array(range(len(col)), pa.int64()), "c": col})
    with conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.adbc_ingest(table, data, mode="create")
        assert e.value.status_code == adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT, e.value
        msg = str(e.value)
        assert "column c" in msg and typ in msg, msg


@pytest.mark.parametrize("name,col,sql,why", [
    ("uint64_over", pa.array([2**63], pa.uint64()), "BIGINT", "c"),
    ("time64_ns_fraction", pa.array([1], pa.time64("ns")), "TIME", "c"),
    ("timestamp_ns_fraction", pa.array([1], pa.timestamp("ns")), "TIMESTAMP", "c"),
    ("date64_fraction", pa.array([1], pa.date64()), "DATE", "c"),
], ids=["uint64_over", "time64_ns_fraction", "timestamp_ns_fraction", "date64_fraction"])
def test_layout_values_refused(conn, name, col, sql, why):
    """Values the stored layout cannot hold exactly are refused, not
    rounded: the column is named."""
    table = "py_layout_val_" + name + "_" + uuid.uuid4().hex[:6]
    data = pa.table({"id": pa.array([1], pa.int64()), "c": col})
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id BIGINT NOT NULL, c {sql})")
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.adbc_ingest(table, data, mode="append")
        assert e.value.status_code == adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT, e.value
        assert re.search(f'column "?{why}"?', str(e.value)), e.value
        cur.execute(f"SELECT count(*) FROM {table}")
        assert cur.fetchone() == (0,)
        cur.execute(f"DROP TABLE {table}")
