"""pyiceberg as "another engine" for the catalog suites.

usage: engine.py CATALOG_JSON COMMAND ARGS...
CATALOG_JSON: {"name", "uri" (SQLAlchemy URL), "warehouse"}.
"""
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import LongType, StringType, NestedField
from pyiceberg.schema import Schema


def main():
    cfg = json.loads(sys.argv[1])
    cmd, args = sys.argv[2], sys.argv[3:]
    cat = SqlCatalog(cfg["name"], uri=cfg["uri"], warehouse=cfg["warehouse"])
    if cmd == "create":  # ns.table: (id long, v string), rows 1 'x', 2 'y'
        ns = args[0].split(".")[0]
        if (ns,) not in cat.list_namespaces():
            cat.create_namespace(ns)
        schema = Schema(NestedField(1, "id", LongType(), required=False),
                        NestedField(2, "v", StringType(), required=False))
        t = cat.create_table(args[0], schema=schema)
        t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["x", "y"]}))
    elif cmd == "add_column":  # ns.table name
        t = cat.load_table(args[0])
        with t.update_schema() as u:
            u.add_column(args[1], StringType())
    elif cmd == "drop_readd":  # ns.table name: drop, add again, append id 3
        t = cat.load_table(args[0])
        with t.update_schema() as u:
            u.delete_column(args[1])
        t = cat.load_table(args[0])
        with t.update_schema() as u:
            u.add_column(args[1], StringType())
        t = cat.load_table(args[0])
        arrow_schema = t.schema().as_arrow()
        cols = {}
        for f in arrow_schema:
            if f.name == "id":
                cols[f.name] = pa.array([3], f.type)
            elif f.name == args[1]:
                cols[f.name] = pa.array(["new"], f.type)
            else:
                cols[f.name] = pa.array([None], f.type)
        t.append(pa.table(cols, schema=arrow_schema))
    elif cmd == "tag":  # ns.table tagname: tag the current snapshot
        t = cat.load_table(args[0])
        t.manage_snapshots().create_tag(t.current_snapshot().snapshot_id, args[1]).commit()
    elif cmd == "drop":
        cat.drop_table(args[0])
    elif cmd == "purge":
        cat.purge_table(args[0])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
