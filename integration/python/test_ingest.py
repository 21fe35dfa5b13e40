"""adbc_ingest (bulk ingest, CommandStatementIngest) in all four modes."""

import uuid

import adbc_driver_flightsql.dbapi as fsql
import pyarrow as pa
import pytest


def _data(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "label": pa.array([f"v{i}" for i in ids])})


def _ids(cur, name):
    cur.execute(f"SELECT id FROM {name} ORDER BY id")
    return [r[0] for r in cur.fetchall()]


def test_ingest_modes(conn):
    name = "py_ingest_" + uuid.uuid4().hex[:8]
    with conn.cursor() as cur:
        assert cur.adbc_ingest(name, _data([1, 2]), mode="create") == 2
        assert _ids(cur, name) == [1, 2]
        with pytest.raises(fsql.Error):
            cur.adbc_ingest(name, _data([3]), mode="create")
        assert cur.adbc_ingest(name, _data([3]), mode="append") == 1
        assert _ids(cur, name) == [1, 2, 3]
        with pytest.raises(fsql.Error):
            cur.adbc_ingest(name + "_missing", _data([3]), mode="append")
        assert cur.adbc_ingest(name, _data([7, 8]), mode="replace") == 2
        assert _ids(cur, name) == [7, 8]
        assert cur.adbc_ingest(name, _data([9]), mode="create_append") == 1
        assert _ids(cur, name) == [7, 8, 9]
        other = name + "_ca"
        assert cur.adbc_ingest(other, _data([5]), mode="create_append") == 1
        assert _ids(cur, other) == [5]
        cur.execute(f"DROP TABLE {name}")
        cur.execute(f"DROP TABLE {other}")
