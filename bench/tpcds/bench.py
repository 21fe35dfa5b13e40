"""TPC-DS per-query cost above DuckDB, through Python ADBC.

One run, one machine, one copy of the data:

1. DuckDB's tpcds extension (PyPI duckdb-extension-tpcds, matching duckdb)
   generates TPC-DS at --sf (dsdgen) and writes each table as one Parquet
   file (cached in --data);
2. the tables are loaded through `icefloe serve --workers 2` (CREATE TABLE,
   ADBC bulk ingest, as bench/tpch does);
3. each of the extension's 99 queries runs through Python ADBC and its
   answer is compared with DuckDB's on the same Parquet files (same
   columns and types, same rows in order; "same rows" when they are the
   same as multisets, or tied at a final LIMIT, see tpcds.compare); then
   --reps timed runs
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import tpcds  # noqa: E402
import tpch  # noqa: E402 - tpcds puts bench/tpch on the path

HERE = pathlib.Path(__file__).resolve().parent


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_query(conn, duck, name, sql, reps):
    r = {"name": name}
    try:
        got = tpch.run_icefloe(conn, sql)
    except Exception as e:  # noqa: BLE001 - reported per query
        r["error"] = str(e).splitlines()[0][:300]
        return r
    want = tpch.run_duckdb(duck, sql)
    r["answer"] = tpcds.answer(got, want, sql, duck)
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
    tables, queries = tpcds.generate(args.sf, data)
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
            tpcds.load(srv, data, tables)
            res["load_s"] = time.perf_counter() - t0
            log(f"loaded in {res['load_s']:.1f} s")
            duck = tpcds.reference(data, tables)
            conn = tpcds.connect(srv.uri, args.timeout)
            for name, sql in queries:
                r = run_query(conn, duck, name, sql, args.reps)
                res["queries"].append(r)
                if "error" in r:
                    log(f"{name}: error {r['error']}")
                else:
                    ratio = r["icefloe_s"] / r["duckdb_s"] if r["duckdb_s"] > 0 else float("inf")
                    r["ratio"] = ratio
                    log(f"{name}: {r['answer']:10s} icefloe {r['icefloe_s'] * 1e3:8.1f} ms  duckdb {r['duckdb_s'] * 1e3:8.1f} ms"
                        f"  ratio {ratio:6.2f}x")
            conn.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg()
    alike = [r for r in res["queries"] if r.get("answer") in ("same", "same rows")]
    if alike:
        res["median_above_ms"] = statistics.median(r["above_s"] for r in alike) * 1e3
        res["median_icefloe_ms"] = statistics.median(r["icefloe_s"] for r in alike) * 1e3
        res["median_duckdb_ms"] = statistics.median(r["duckdb_s"] for r in alike) * 1e3
        total_i, total_d = sum(r["icefloe_s"] for r in alike), sum(r["duckdb_s"] for r in alike)
        res["total_ratio"] = total_i / total_d if total_d > 0 else float("inf")
        res["above_2x"] = sorted(r["name"] for r in alike if r.get("ratio", 0) > 2)
        res["above_3x"] = sorted(r["name"] for r in alike if r.get("ratio", 0) > 3)
        log(f"total {total_i:.2f} s vs DuckDB {total_d:.2f} s: {res['total_ratio']:.2f}x; "
            f"{len(res['above_2x'])} queries above 2x, {len(res['above_3x'])} above 3x: {', '.join(res['above_3x'])}")
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
