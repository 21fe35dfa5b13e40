"""A table whose grants filter rows or mask columns for a caller is not
handed out through the REST catalog (its files hold every row): the load
is refused with the reason, while SQL applies the filter."""

import pyarrow as pa
import pytest
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from conftest import rest_catalog, run_sql

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))


def made(srv, schema, name, n):
    cat = rest_catalog(srv, "root")
    ident = f"{schema}.{name}"
    if cat.table_exists(ident):
        cat.drop_table(ident)
    tbl = cat.create_table(ident, schema=SCHEMA)
    tbl.append(pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"v{i}" for i in range(n)])}))
    return ident


def test_filtered_table_load_refused(server, schema):
    ident = made(server, schema, "filtered", 10)
    whole = made(server, schema, "whole", 4)
    cat = rest_catalog(server, "filtered")
    with pytest.raises(ForbiddenError, match="row filter and column masks.*only SQL applies"):
        cat.load_table(ident)
    # A table it reads whole loads and scans as before.
    assert cat.load_table(whole).scan().to_arrow().num_rows == 4
    # SQL applies the filter and the mask.
    assert run_sql(server, f"SELECT id, s FROM local.{ident} ORDER BY id", "filtered") == [(0, "x"), (1, "x"), (2, "x")]
    assert run_sql(server, f"SELECT count(*) FROM local.{ident}", "root") == [(10,)]
