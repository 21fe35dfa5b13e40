"""pyiceberg reads what icefloe wrote, and icefloe reads what pyiceberg
wrote, with identical rows."""

import datetime
import decimal

import pyarrow as pa
import pyarrow.compute as pc


def run(conn, sql):
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return cur.rowcount
    finally:
        cur.close()


def icefloe_rows(conn, sql):
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return canonical(cur.fetch_arrow_table())
    finally:
        cur.close()


def pyiceberg_rows(pycat, name, columns):
    tbl = pycat.load_table(("default", name))
    return canonical(tbl.scan(selected_fields=tuple(columns)).to_arrow().select(columns))


def canonical(t):
    """Rows as sorted tuples of Python values, timestamps in UTC."""
    rows = []
    for r in t.to_pylist():
        vals = []
        for v in r.values():
            if isinstance(v, datetime.datetime) and v.tzinfo is not None:
                v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            if isinstance(v, float):
                v = round(v, 9)
            vals.append(v)
        rows.append(tuple(vals))
    return sorted(rows, key=repr)


def test_pyiceberg_reads_partitioned_insert_select(conn, pycat):
    run(conn, """CREATE TABLE py_orders (id BIGINT NOT NULL, status VARCHAR, amount DECIMAL(12,2), ordered_at TIMESTAMPTZ)
                 PARTITIONED BY (day(ordered_at), bucket(4, id))""")
    n = run(conn, "INSERT INTO py_orders SELECT id, status, amount, ordered_at FROM orders")
    assert n == 50_000
    cols = ["id", "status", "amount", "ordered_at"]
    ours = icefloe_rows(conn, "SELECT id, status, amount, ordered_at FROM py_orders")
    theirs = pyiceberg_rows(pycat, "py_orders", cols)
    assert len(theirs) == 50_000
    assert ours == theirs
    # pyiceberg prunes by our partition values: a filtered scan agrees.
    tbl = pycat.load_table(("default", "py_orders"))
    day = tbl.scan(row_filter="ordered_at >= '2024-01-10T00:00:00+00:00' and ordered_at < '2024-01-11T00:00:00+00:00'").to_arrow()
    ours_day = icefloe_rows(conn, """SELECT id, status, amount, ordered_at FROM py_orders
        WHERE ordered_at >= TIMESTAMPTZ '2024-01-10 00:00:00+00' AND ordered_at < TIMESTAMPTZ '2024-01-11 00:00:00+00'""")
    assert canonical(day.select(cols)) == ours_day
    assert len(ours_day) > 0


def test_pyiceberg_reads_after_positional_deletes(conn, pycat):
    run(conn, """CREATE TABLE py_mor (id BIGINT, kind VARCHAR, value DOUBLE) PARTITIONED BY (kind)
                 WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')""")
    run(conn, "INSERT INTO py_mor SELECT id, kind, value FROM events")
    n = run(conn, "DELETE FROM py_mor WHERE id < 5000")
    assert n == 4999
    tbl = pycat.load_table(("default", "py_mor"))
    tasks = list(tbl.scan().plan_files())
    assert any(t.delete_files for t in tasks), "the DELETE wrote no positional delete files"
    cols = ["id", "kind", "value"]
    assert icefloe_rows(conn, "SELECT id, kind, value FROM py_mor") == pyiceberg_rows(pycat, "py_mor", cols)
    # copy-on-write DELETE and UPDATE too.
    run(conn, "DELETE FROM py_mor WHERE id % 3 = 0")
    run(conn, "UPDATE py_mor SET value = -value WHERE kind = 'view'")
    assert icefloe_rows(conn, "SELECT id, kind, value FROM py_mor") == pyiceberg_rows(pycat, "py_mor", cols)


def test_pyiceberg_reads_after_schema_evolution(conn, pycat):
    run(conn, "CREATE TABLE py_evo AS SELECT id, name, country FROM customers")
    run(conn, "ALTER TABLE py_evo ADD COLUMN score DOUBLE")
    run(conn, "ALTER TABLE py_evo RENAME COLUMN name TO full_name")
    run(conn, "INSERT INTO py_evo SELECT id + 10000, name, country, 1.5 FROM customers WHERE id <= 100")
    run(conn, "ALTER TABLE py_evo DROP COLUMN country")
    run(conn, "ALTER TABLE py_evo ADD PARTITION FIELD bucket(2, id)")
    run(conn, "INSERT INTO py_evo VALUES (99999, 'new row', 2.5)")
    cols = ["id", "full_name", "score"]
    ours = icefloe_rows(conn, "SELECT id, full_name, score FROM py_evo")
    assert len(ours) == 2101
    assert ours == pyiceberg_rows(pycat, "py_evo", cols)
    schema = pycat.load_table(("default", "py_evo")).schema()
    assert [f.name for f in schema.fields] == cols


def test_icefloe_reads_what_pyiceberg_wrote(conn, pycat):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform, IdentityTransform
    from pyiceberg.types import (DateType, DecimalType, DoubleType, LongType, NestedField, StringType,
                                 TimestamptzType)

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "price", DecimalType(10, 2)),
        NestedField(4, "at", TimestamptzType()),
        NestedField(5, "day", DateType()),
        NestedField(6, "x", DoubleType()),
    )
    spec = PartitionSpec(PartitionField(4, 1000, DayTransform(), "at_day"),
                         PartitionField(2, 1001, IdentityTransform(), "name"))
    tbl = pycat.create_table(("default", "from_py"), schema=schema, partition_spec=spec)
    base = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
    n = 3000
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([None if i % 11 == 0 else f"n{i % 5}" for i in range(n)], pa.string()),
        "price": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
        "at": pa.array([base + datetime.timedelta(hours=i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "day": pa.array([(base + datetime.timedelta(hours=i)).date() for i in range(n)], pa.date32()),
        "x": pa.array([i / 3 for i in range(n)], pa.float64()),
    }, schema=tbl.schema().as_arrow())
    tbl.append(data.slice(0, 2000))
    tbl.append(data.slice(2000))
    tbl.delete("id < 100")
    cols = ["id", "name", "price", "at", "day", "x"]
    theirs = pyiceberg_rows(pycat, "from_py", cols)
    ours = icefloe_rows(conn, 'SELECT id, name, price, "at", "day", x FROM from_py')
    assert len(ours) == n - 100
    assert ours == theirs
    # and icefloe writes into it: pyiceberg reads the union.
    run(conn, 'INSERT INTO from_py SELECT id + 100000, name, price, "at", "day", x FROM from_py WHERE id < 200')
    assert icefloe_rows(conn, 'SELECT id, name, price, "at", "day", x FROM from_py') == pyiceberg_rows(pycat, "from_py", cols)
    agg = icefloe_rows(conn, "SELECT name, count(*) FROM from_py GROUP BY name")
    exp = pycat.load_table(("default", "from_py")).scan().to_arrow().group_by("name").aggregate([("id", "count")])
    assert agg == canonical(exp.select(["name", "id_count"]))


def test_pyiceberg_reads_v3_after_copy_on_write(conn, pycat):
    """A format-version 3 table written by workers (first_row_ids assigned
    at commit, lineage columns in rewritten files) reads the same in
    pyiceberg."""
    run(conn, """CREATE TABLE py_v3 (id BIGINT NOT NULL, kind VARCHAR, value DOUBLE) PARTITIONED BY (kind)
                 WITH ('format-version' = '3')""")
    assert run(conn, "INSERT INTO py_v3 SELECT id, kind, value FROM events") > 0
    run(conn, "UPDATE py_v3 SET value = -value WHERE id % 4 = 0")
    run(conn, "DELETE FROM py_v3 WHERE id % 3 = 0")
    tbl = pycat.load_table(("default", "py_v3"))
    assert tbl.format_version == 3
    cols = ["id", "kind", "value"]
    ours = icefloe_rows(conn, "SELECT id, kind, value FROM py_v3")
    assert len(ours) > 0
    assert ours == pyiceberg_rows(pycat, "py_v3", cols)


def test_pyiceberg_reads_compacted_expired_and_branched(conn, pycat):
    """Tables icefloe compacted (after merge-on-read deletes), whose old
    snapshots it expired and that carry a branch and a tag, v2 and v3,
    partitioned and not, read the same in pyiceberg: the main branch, the
    branch and the tag, with exactly the snapshots icefloe kept."""
    cols = ["id", "p", "s"]
    for version in ("2", "3"):
        for part in ("", "PARTITIONED BY (p)"):
            name = f"py_maint_v{version}{'p' if part else ''}"
            run(conn, f"""CREATE TABLE {name} (id BIGINT NOT NULL, p INTEGER, s VARCHAR) {part}
                         WITH ('format-version' = '{version}', 'write.delete.mode' = 'merge-on-read')""")
            for i in range(8):
                vals = ", ".join(f"({i * 5 + j}, {(i * 5 + j) % 3}, 's{i * 5 + j}')" for j in range(5))
                run(conn, f"INSERT INTO {name} VALUES {vals}")
            run(conn, f"DELETE FROM {name} WHERE id IN (3, 11, 12, 27)")
            before = icefloe_rows(conn, f"SELECT id, p, s FROM {name}")
            compacted = icefloe_rows(conn, f"""CALL system.rewrite_data_files(table => '{name}',
                                              options => map('min-input-files', '2'))""")
            assert compacted[0][0] > 0
            icefloe_rows(conn, f"""CALL system.expire_snapshots(table => '{name}',
                                   older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)""")
            run(conn, f"ALTER TABLE {name} CREATE TAG kept")
            run(conn, f"ALTER TABLE {name} CREATE BRANCH dev")
            run(conn, f"INSERT INTO {name}.branch_dev VALUES (1000, 1, 'dev')")
            run(conn, f"DELETE FROM {name}.branch_dev WHERE id = 4")

            tbl = pycat.load_table(("default", name))
            assert len(tbl.metadata.snapshots) == 3  # main's compacted head, dev's two writes
            assert pyiceberg_rows(pycat, name, cols) == before
            assert icefloe_rows(conn, f"SELECT id, p, s FROM {name}") == before
            refs = tbl.metadata.refs
            dev = canonical(tbl.scan(snapshot_id=refs["dev"].snapshot_id, selected_fields=tuple(cols)).to_arrow().select(cols))
            assert dev == icefloe_rows(conn, f"SELECT id, p, s FROM {name} FOR VERSION AS OF 'dev'")
            assert (1000, 1, "dev") in dev and all(r[0] != 4 for r in dev)
            kept = canonical(tbl.scan(snapshot_id=refs["kept"].snapshot_id, selected_fields=tuple(cols)).to_arrow().select(cols))
            assert kept == before


def test_pyiceberg_reads_decimal_partitions(conn, pycat):
    """A table partitioned by DECIMAL(p,0) columns (identity and truncate),
    written by INSERT … VALUES, INSERT … SELECT, a copy-on-write DELETE and
    a merge-on-read one: pyiceberg plans and reads it (iceberg-go's manifests
    left the decimal's scale out of their Avro schema, which pyiceberg
    cannot read), and prunes by its partition values."""
    cols = ["id", "d", "s"]
    for name, typ, part in [("py_dec0", "DECIMAL(10,0)", "d"), ("py_dec38", "DECIMAL(38,0)", "truncate(10, d)")]:
        run(conn, f"""CREATE TABLE {name} (id BIGINT NOT NULL, d {typ}, s VARCHAR) PARTITIONED BY ({part})
                      WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')""")
        run(conn, f"INSERT INTO {name} VALUES (1, 5, 'a'), (2, NULL, 'b'), (3, -7, 'c'), (4, 99999999, 'd')")
        run(conn, f"INSERT INTO {name} SELECT id + 100, CAST(id % 20 - 10 AS {typ}), status FROM orders WHERE id <= 2000")
        run(conn, f"DELETE FROM {name} WHERE id = 150")
        run(conn, f"UPDATE {name} SET s = 'updated' WHERE d = 5")
        ours = icefloe_rows(conn, f"SELECT id, d, s FROM {name}")
        assert len(ours) == 2003
        assert pyiceberg_rows(pycat, name, cols) == ours
        tbl = pycat.load_table(("default", name))
        five = tbl.scan(row_filter="d = 5").to_arrow()
        assert canonical(five.select(cols)) == icefloe_rows(conn, f"SELECT id, d, s FROM {name} WHERE d = 5")
        assert len(five) > 0
