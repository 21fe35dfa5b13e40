"""TPC-DS per-query cost above DuckDB, through Python ADBC.

One run, one machine, one copy of the data:

1. DuckDB's tpcds extension (PyPI duckdb-extension-tpcds, matching duckdb)
   generates TPC-DS at --sf (dsdgen) and writes each table as one Parquet
   file (cached in --data);
2. the tables are loaded through `icefloe serve --workers 2` (CREATE TABLE,
   ADBC bulk ingest, as bench/tpch does);
3. each of the extension's 99 queries runs through Python ADBC and its
   answer is compared with DuckDB's on the same Parquet files (same
   columns and types, same rows in order; "same rows" when only the order
   of rows differs, as ORDER BY over ties allows); then --reps timed runs
   alternate icefloe and DuckDB in-process (2 threads), so both see the
   same load. A query icefloe does not finish within --timeout counts as
   an error (its statement is cancelled).

Prints per-query medians and the median of (icefloe - DuckDB) over the
queries both answered alike; writes --out (JSON). Reported, never
asserted. Run: `make bench-tpcds`.
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tpch"))

import pyarrow.parquet as pq  # noqa: E402

import tpch  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def duckdb_tpcds():
    """A DuckDB connection with the tpcds extension loaded from its package."""
    import duckdb
    import duckdb_extension_tpcds

    con = duckdb.connect()
    ext = pathlib.Path(duckdb_extension_tpcds.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "tpcds.duckdb_extension"
    con.execute(f"LOAD '{ext}'")
    return con


def generate(sf, out):
    """Writes the TPC-DS tables at sf as Parquet into out once (a stamp
    marks a complete run); returns the table names and the 99 queries."""
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb_tpcds()
    queries = [(f"q{n:02d}", q.strip().rstrip(";")) for n, q in
               con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY query_nr").fetchall()]
    stamp = out / ".complete"
    if not (stamp.exists() and stamp.read_text() == str(sf)):
        con.execute(f"CALL dsdgen(sf={sf})")
        for (t,) in con.execute("SHOW TABLES").fetchall():
            con.execute(f"COPY {t} TO '{out / (t + '.parquet')}' (FORMAT parquet)")
        stamp.write_text(str(sf))
    tables = sorted(p.stem for p in out.glob("*.parquet"))
    return tables, queries


def reference(data, tables):
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    for t in tables:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data / (t + '.parquet')}')")
    return con


def load(srv, data, tables):
    conn = srv.connect()
    try:
        for t in tables:
            path = str(data / f"{t}.parquet")
            tpch.update(conn, tpch.ddl(t, pq.read_schema(path)))
            cur = conn.cursor()
            # Wide tables: batches of 16 Ki rows stay under gRPC's 16 MiB message limit.
            n = cur.adbc_ingest(t, tpch.parquet_reader(path, batch_rows=16 * 1024), mode="append")
            cur.close()
            if n != pq.ParquetFile(path).metadata.num_rows:
                raise RuntimeError(f"ingest {t}: {n} rows")
    finally:
        conn.close()


def connect(srv, timeout):
    """A connection whose statements icefloe cancels after timeout (the
    session option statement_timeout, kept in the session cookie)."""
    import adbc_driver_flightsql.dbapi as fsql

    conn = fsql.connect(srv.uri, autocommit=True, db_kwargs={"adbc.flight.sql.rpc.with_cookie_middleware": "true"})
    conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.statement_timeout": timeout})
    return conn


def compare(got, want):
    """'same' (rows in order), 'same rows' (other order) or the difference."""
    d = tpch.diff(got, want)
    if not d:
        return "same"
    if got.schema.names == want.schema.names and got.num_rows == want.num_rows:
        key = lambda r: tuple((v is None, repr(v)) for v in r.values())  # noqa: E731
        if not tpch.diff(got.from_pylist(sorted(got.to_pylist(), key=key), schema=got.schema),
                         want.from_pylist(sorted(want.to_pylist(), key=key), schema=want.schema)):
            return "same rows"
    return d.splitlines()[0][:200]


def run_query(conn, duck, name, sql, reps):
    r = {"name": name}
    try:
        got = tpch.run_icefloe(conn, sql)
    except Exception as e:  # noqa: BLE001 - reported per query
        r["error"] = str(e).splitlines()[0][:300]
        return r
    want = tpch.run_duckdb(duck, sql)
    r["answer"] = compare(got, want)
    ti, td = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        tpch.run_icefloe(conn, sql)
        ti.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        tpch.run_duckdb(duck, sql)
        td.append(time.perf_counter() - t0)
    r["icefloe_s"], r["duckdb_s"] = statistics.median(ti), statistics.median(td)
    r["above_s"] = r["icefloe_s"] - r["duckdb_s"]
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", default=str(HERE / "out" / "data"))
    ap.add_argument("--out", default=str(HERE / "out" / "results.json"))
    ap.add_argument("--only", default="", help="comma-separated query names (q01,q02,…)")
    ap.add_argument("--timeout", default="60s", help="icefloe's statement timeout per run of a query")
    args = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("tpcds: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    data = pathlib.Path(args.data) / f"sf{args.sf}"
    tables, queries = generate(args.sf, data)
    if args.only:
        keep = set(args.only.split(","))
        queries = [q for q in queries if q[0] in keep]
    log(f"{len(tables)} tables, {len(queries)} queries at SF {args.sf}")
    res = {"sf": args.sf, "reps": args.reps, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "loadavg_start": os.getloadavg(), "queries": []}
    work = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-tpcds-"))
    try:
        with tpch.Server(binary, work, workers=2) as srv:
            t0 = time.perf_counter()
            load(srv, data, tables)
            res["load_s"] = time.perf_counter() - t0
            log(f"loaded in {res['load_s']:.1f} s")
            duck = reference(data, tables)
            conn = connect(srv, args.timeout)
            for name, sql in queries:
                r = run_query(conn, duck, name, sql, args.reps)
                res["queries"].append(r)
                if "error" in r:
                    log(f"{name}: error {r['error']}")
                else:
                    log(f"{name}: {r['answer']:10s} icefloe {r['icefloe_s'] * 1e3:8.1f} ms  duckdb {r['duckdb_s'] * 1e3:8.1f} ms")
            conn.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg()
    alike = [r for r in res["queries"] if r.get("answer") in ("same", "same rows")]
    if alike:
        res["median_above_ms"] = statistics.median(r["above_s"] for r in alike) * 1e3
        res["median_icefloe_ms"] = statistics.median(r["icefloe_s"] for r in alike) * 1e3
        res["median_duckdb_ms"] = statistics.median(r["duckdb_s"] for r in alike) * 1e3
    counts = {}
    for r in res["queries"]:
        k = "error" if "error" in r else (r["answer"] if r["answer"] in ("same", "same rows") else "different")
        counts[k] = counts.get(k, 0) + 1
    res["counts"] = counts
    log(f"answers {counts}; median above DuckDB {res.get('median_above_ms', float('nan')):.1f} ms over {len(alike)} queries")
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    log(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
