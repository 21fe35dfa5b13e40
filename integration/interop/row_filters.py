"""Row-filter scans with pyiceberg for the property test
(integration/property_test.go), which starts this script with the data
directory of its cluster and writes requests on stdin, one JSON object a
line:

    {"table": "p1_3", "filter": TREE}

(a null TREE selects every row) and reads one JSON line back per request:
{"ids": [sorted ids]} (the table's `id` column of the rows the scan
returns, see scan), {"error": "..."}, or
{"unsupported": "..."} when pyiceberg 0.10 cannot evaluate the filter for
a reason of its own (see UNSUPPORTED).

A TREE is {"op": "and"|"or", "args": [TREE, ...]}, {"op": "not", "arg":
TREE}, {"op": "is_null"|"not_null"|"is_nan"|"not_nan", "col": name},
{"op": "eq"|"ne"|"lt"|"le"|"gt"|"ge"|"starts_with"|"not_starts_with",
"col": name, "v": VALUE} or {"op": "in"|"not_in", "col": name, "vs":
[VALUE, ...]}. A VALUE is text for the column's type (as DuckDB prints
it), except for dates (days), times and timestamps (microseconds), which
are integers, and binaries (hex)."""

import decimal
import json
import sys
import traceback
import uuid

from pyiceberg import expressions as E
from pyiceberg import types as T
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.expressions.visitors import bind
from pyiceberg.io.pyarrow import ArrowScan, expression_to_pyarrow

_CMP = {"eq": E.EqualTo, "ne": E.NotEqualTo, "lt": E.LessThan, "le": E.LessThanOrEqual,
        "gt": E.GreaterThan, "ge": E.GreaterThanOrEqual,
        "starts_with": E.StartsWith, "not_starts_with": E.NotStartsWith}
_UNARY = {"is_null": E.IsNull, "not_null": E.NotNull, "is_nan": E.IsNaN, "not_nan": E.NotNaN}


def value(typ, v):
    """The Python value pyiceberg binds to a column of Iceberg type typ."""
    if isinstance(typ, T.BooleanType):
        return v == "true"
    if isinstance(typ, (T.IntegerType, T.LongType)):
        return int(v)
    if isinstance(typ, (T.FloatType, T.DoubleType)):
        return float(v)
    if isinstance(typ, T.DecimalType):
        with decimal.localcontext(decimal.Context(prec=76)):
            return decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-typ.scale))
    if isinstance(typ, T.UUIDType):
        return uuid.UUID(v)
    if isinstance(typ, (T.BinaryType, T.FixedType)):
        return bytes.fromhex(v)
    if isinstance(typ, T.StringType):
        return v
    return int(v)  # dates, times, timestamps: their integer form


def build(node, schema):
    if node is None:
        return AlwaysTrue()
    op = node["op"]
    if op in ("and", "or"):
        parts = [build(a, schema) for a in node["args"]]
        out = parts[0]
        for p in parts[1:]:
            out = E.And(out, p) if op == "and" else E.Or(out, p)
        return out
    if op == "not":
        return E.Not(build(node["arg"], schema))
    col = node["col"]
    if op in _UNARY:
        return _UNARY[op](col)
    typ = schema.find_field(col).field_type
    if op in ("in", "not_in"):
        vals = {value(typ, v) for v in node["vs"]}
        return E.In(col, vals) if op == "in" else E.NotIn(col, vals)
    return _CMP[op](col, value(typ, node["v"]))


def unsupported(exc):
    """Why pyiceberg 0.10 failed on its own, or None: its residual evaluator
    (expressions/visitors.py, ResidualVisitor) compares a NULL partition
    value with the literal ('<' between NoneType and int) whenever a file
    of the NULL partition survives pruning under a comparison on that
    column; and its projection of a timestamp literal at 9999-12-31 or
    0001-01-01 onto a time transform leaves Python's date range."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1].filename if frames else ""
    if isinstance(exc, TypeError) and "NoneType" in str(exc) and last.endswith("expressions/visitors.py"):
        return "pyiceberg's ResidualVisitor compares a NULL partition value"
    if isinstance(exc, OverflowError) and "out of range" in str(exc) and "/pyiceberg/" in "".join(f.filename for f in frames):
        return "pyiceberg projects a timestamp at the year-9999/year-1 limits out of Python's date range"
    return None


def scan(tbl, expr):
    """The sorted ids of the rows of tbl that expr selects: pyiceberg plans
    the files with its own pruning over the table's metadata (manifest
    partition summaries, column bounds, null and NaN counts), the planned
    files are read whole, and expr filters the rows in memory. A pyiceberg
    scan would also push expr into pyarrow's Parquet reader, which skips
    row groups on footer min/max that leave NaN out (is_nan over a row
    group of NaN and -1.0 returns nothing): that is pyarrow's to fix, and
    not the metadata icefloe writes."""
    tasks = list(tbl.scan(row_filter=expr).plan_files())
    data = ArrowScan(tbl.metadata, tbl.io, tbl.schema(), AlwaysTrue()).to_table(tasks)
    rows = data.filter(expression_to_pyarrow(bind(tbl.schema(), expr, case_sensitive=True)))
    return sorted(rows.column("id").to_pylist())


def main():
    data_dir = sys.argv[1]
    cat = SqlCatalog("local", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
    for line in sys.stdin:
        req = json.loads(line)
        try:
            tbl = cat.load_table(("default", req["table"]))
            out = {"ids": scan(tbl, build(req["filter"], tbl.schema()))}
        except Exception as e:  # reported to the test, which fails on it
            why = unsupported(e)
            out = {"unsupported": why} if why else {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
