"""Where pyiceberg may place a table's files through the REST catalog:
as in SQL (docs/security.md, "Every table owns its folder"), and a purge
through REST keeps the files another table references."""

import json
import os
import re
import sqlite3
import uuid

import pytest
from pyiceberg.exceptions import ForbiddenError

from conftest import rest_catalog, run_sql
from test_pyiceberg import SCHEMA, count_sql, fresh_table, rows


def warehouse(srv):
    return "file://" + os.path.join(srv.data, "warehouse")


def test_a_chosen_place_needs_location_and_must_be_free(server, schema):
    victim = fresh_table(server, schema, "place_victim")
    victim.append(rows(4))
    creator = rest_catalog(server, "creator")
    placer = rest_catalog(server, "placer")
    for ident in (f"{schema}.evil", f"{schema}.evil2"):
        if creator.table_exists(ident):
            creator.drop_table(ident)
    elsewhere = f"{warehouse(server)}/placed-{uuid.uuid4().hex}"
    # Without LOCATION: no location, no write.data.path elsewhere, staged
    # or not.
    for kw in ({"location": victim.location()}, {"location": elsewhere},
               {"properties": {"write.data.path": victim.location() + "/data"}}):
        with pytest.raises(ForbiddenError, match="LOCATION"):
            creator.create_table(f"{schema}.evil", schema=SCHEMA, **kw)
        with pytest.raises(ForbiddenError, match="LOCATION"):
            with creator.create_table_transaction(f"{schema}.evil", schema=SCHEMA, **kw) as tx:
                tx.append(rows(1))
    # With it: inside or at another table's folder is refused, a free
    # place works.
    for kw in ({"location": victim.location()}, {"location": victim.location() + "/data/x"},
               {"properties": {"write.data.path": victim.location() + "/data"}}):
        with pytest.raises(ForbiddenError, match="another table"):
            placer.create_table(f"{schema}.evil", schema=SCHEMA, **kw)
    placed = placer.create_table(f"{schema}.evil", schema=SCHEMA, location=elsewhere)
    placed.append(rows(2))
    assert placed.location() == elsewhere
    assert count_sql(server, f"{schema}.evil") == 2
    # Without a location, a folder of its own, staged creates too (the
    # place the staged create proposed needs no LOCATION).
    with creator.create_table_transaction(f"{schema}.evil2", schema=SCHEMA) as tx:
        tx.append(rows(3))
    loc = creator.load_table(f"{schema}.evil2").location()
    assert re.search(r"/rt\.db/evil2-[0-9a-f]{32}$", loc), loc
    assert count_sql(server, f"{schema}.evil2") == 3
    assert count_sql(server, f"{schema}.place_victim") == 4


def test_purge_keeps_files_another_table_references(server, schema):
    victim = fresh_table(server, schema, "purge_victim")
    victim.append(rows(5))
    cat = rest_catalog(server, "creator")
    # A table that shares the victim's folder and files, as an earlier
    # version could make: a copy of its metadata under another UUID,
    # written into the embedded catalog's database.
    with open(victim.metadata_location.removeprefix("file://")) as f:
        meta = json.load(f)
    meta["table-uuid"] = str(uuid.uuid4())
    shared_meta = f"{victim.location()}/metadata/00099-{uuid.uuid4()}.metadata.json"
    with open(shared_meta.removeprefix("file://"), "w") as f:
        json.dump(meta, f)
    with sqlite3.connect(os.path.join(server.data, "catalog.db"), timeout=30) as db:
        db.execute("DELETE FROM iceberg_tables WHERE table_namespace = ? AND table_name = 'purge_shared'", (schema,))
        db.execute("INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location) "
                   "VALUES ('local', ?, 'purge_shared', 'TABLE', ?)", (schema, shared_meta))
    assert cat.table_exists(f"{schema}.purge_shared")
    cat.purge_table(f"{schema}.purge_shared")
    assert not cat.table_exists(f"{schema}.purge_shared")
    assert not os.path.exists(shared_meta.removeprefix("file://"))
    assert count_sql(server, f"{schema}.purge_victim") == 5
    assert rest_catalog(server, "reader").load_table(f"{schema}.purge_victim").scan().to_arrow().num_rows == 5
    # A table of its own loses its files.
    own = fresh_table(server, schema, "purge_own")
    own.append(rows(2))
    folder = own.location().removeprefix("file://")
    assert any(files for _, _, files in os.walk(folder))
    cat.purge_table(f"{schema}.purge_own")
    assert not any(files for _, _, files in os.walk(folder))
