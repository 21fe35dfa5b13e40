"""pyiceberg reads and writes icefloe's tables through the REST catalog,
with icefloe's logins and grants, and SQL sees its commits and the other
way round, under concurrency."""

import subprocess
import threading

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException, ForbiddenError, OAuthError, UnauthorizedError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from conftest import binary, rest_catalog, run_sql, sql

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))


def rows(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": pa.array([f"v{i}" for i in range(start, start + n)])})


def fresh_table(srv, schema, name):
    cat = rest_catalog(srv, "root")
    ident = f"{schema}.{name}"
    if cat.table_exists(ident):
        cat.drop_table(ident)
    return cat.create_table(ident, schema=SCHEMA)


def count_sql(srv, ident, user="root"):
    return run_sql(srv, f"SELECT count(*) FROM local.{ident}", user)[0][0]


def test_logins_client_credentials_and_token(server, schema):
    fresh_table(server, schema, "logins")
    assert "logins" in [t[1] for t in rest_catalog(server, "reader").list_tables(schema)]
    tok = subprocess.run([binary(), "token", "--config", server.config, "--user", "reader", "--ttl=10m"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert "logins" in [t[1] for t in rest_catalog(server, token=tok).list_tables(schema)]
    with pytest.raises(OAuthError):
        rest_catalog(server, credential="reader:wrong-password")
    with pytest.raises(UnauthorizedError):
        rest_catalog(server).list_namespaces()


def test_listings_show_what_the_caller_may_see(server, schema):
    fresh_table(server, schema, "listed")
    assert (schema,) in rest_catalog(server, "reader").list_namespaces()
    outsider = rest_catalog(server, "outsider")
    assert (schema,) not in outsider.list_namespaces()
    assert ("default",) in outsider.list_namespaces()
    with pytest.raises(ForbiddenError):
        outsider.list_tables(schema)


def test_reader_loads_but_cannot_commit(server, schema):
    fresh_table(server, schema, "readonly").append(rows(5))
    reader = rest_catalog(server, "reader")
    tbl = reader.load_table(f"{schema}.readonly")
    assert tbl.scan().to_arrow().num_rows == 5
    with pytest.raises(ForbiddenError, match="INSERT"):
        tbl.append(rows(1, 100))
    with pytest.raises(ForbiddenError, match="privilege"):
        with tbl.transaction() as tx:
            tx.set_properties(owner="reader")
    assert count_sql(server, f"{schema}.readonly") == 5


def test_without_select_no_load(server, schema):
    fresh_table(server, schema, "hidden")
    outsider = rest_catalog(server, "outsider")
    with pytest.raises(ForbiddenError, match="SELECT"):
        outsider.load_table(f"{schema}.hidden")
    # Denied the same whether or not the table exists.
    with pytest.raises(ForbiddenError, match="SELECT"):
        outsider.load_table(f"{schema}.no_such_table")


def test_insert_is_not_delete(server, schema):
    """A commit needs the privilege of what its snapshot does to the rows:
    appending needs INSERT, dropping whole files DELETE, rewriting a file
    without some of its rows (pyiceberg's copy-on-write delete, which
    icefloe cannot tell from an update without reading the rows) UPDATE
    or INSERT and DELETE."""
    fresh_table(server, schema, "privs").append(rows(10))
    writer = rest_catalog(server, "writer").load_table(f"{schema}.privs")
    writer.append(rows(2, 10))
    with pytest.raises(ForbiddenError, match="DELETE"):
        writer.delete("id >= 10")  # the whole second file
    with pytest.raises(ForbiddenError, match="UPDATE"):
        writer.delete("id < 3")  # a rewrite of the first
    deleter = rest_catalog(server, "deleter").load_table(f"{schema}.privs")
    with pytest.raises(ForbiddenError, match="UPDATE"):
        deleter.delete("id < 3")
    deleter.delete("id >= 10")
    with pytest.raises(ForbiddenError, match="INSERT"):
        deleter.append(rows(1, 60))
    assert count_sql(server, f"{schema}.privs") == 10
    root = rest_catalog(server, "root").load_table(f"{schema}.privs")
    root.delete("id < 3")
    assert count_sql(server, f"{schema}.privs") == 7


def test_files_of_another_table_are_refused(server, schema):
    """A writer may not add a data file of a table it cannot read: the
    files a commit adds must lie in the table's own places."""
    import pyarrow.parquet as pq

    secret = fresh_table(server, schema, "secret_src")
    secret.append(rows(3))
    # A file in the other table's folder (pyiceberg adds only files
    # without field ids, so not one of its own data files).
    path = secret.location().removeprefix("file://") + "/data/planted.parquet"
    pq.write_table(rows(3, 500), path)
    fresh_table(server, schema, "thief")
    writer = rest_catalog(server, "writer").load_table(f"{schema}.thief")
    with pytest.raises(ForbiddenError, match="location"):
        writer.add_files(["file://" + path])
    assert count_sql(server, f"{schema}.thief") == 0


def test_rest_commits_seen_by_sql_and_back(server, schema):
    tbl = fresh_table(server, schema, "both")
    tbl.append(rows(4))
    assert count_sql(server, f"{schema}.both") == 4
    run_sql(server, f"INSERT INTO local.{schema}.both VALUES (100, 'sql'), (101, 'sql')")
    got = rest_catalog(server, "reader").load_table(f"{schema}.both").scan().to_arrow()
    assert got.num_rows == 6
    assert sorted(got.column("s").to_pylist()).count("sql") == 2
    tbl = rest_catalog(server, "root").load_table(f"{schema}.both")
    tbl.delete("s = 'sql'")
    assert run_sql(server, f"SELECT count(*), count(*) FILTER (WHERE s = 'sql') FROM local.{schema}.both")[0] == (4, 0)


def test_concurrent_sql_and_rest_appends_lose_nothing(server, schema):
    """SQL INSERTs and pyiceberg appends race on one table: every commit
    lands once (pyiceberg retries a 409 on the refreshed table, as its
    users do; SQL retries inside icefloe)."""
    fresh_table(server, schema, "race")
    rounds, per = 6, 5
    errors = []
    retried = []

    def sql_writer(k):
        try:
            with sql(server) as c, c.cursor() as cur:
                for i in range(rounds):
                    base = 1_000_000 * (k + 1) + i * per
                    values = ", ".join(f"({base + j}, 'sql')" for j in range(per))
                    cur.execute(f"INSERT INTO local.{schema}.race VALUES {values}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def rest_writer(k):
        try:
            cat = rest_catalog(server, "writer")
            for i in range(rounds):
                batch = rows(per, 10_000_000 * (k + 1) + i * per)
                for attempt in range(50):
                    try:
                        cat.load_table(f"{schema}.race").append(batch)
                        break
                    except CommitFailedException:
                        retried.append(1)
                else:
                    raise RuntimeError("append kept losing")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=sql_writer, args=(k,)) for k in range(2)]
    threads += [threading.Thread(target=rest_writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    want = 4 * rounds * per
    assert count_sql(server, f"{schema}.race") == want
    got = rest_catalog(server, "reader").load_table(f"{schema}.race").scan().to_arrow()
    assert got.num_rows == want
    assert len(set(got.column("id").to_pylist())) == want
