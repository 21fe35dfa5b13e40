"""TPC-DS answer check: generate (cached), load through icefloe, run the 99
queries of DuckDB's tpcds extension through Python ADBC with parallel
partitions (execute_partitions, every endpoint read from a thread pool)
against `icefloe serve` with 2 workers, and compare each answer with
DuckDB's on the same Parquet files (tpcds.compare: a multiset compare; for
a query ending in ORDER BY … LIMIT, rows tied at the cut are accepted when
every row is in DuckDB's answer without the LIMIT). A query icefloe does
not answer within --timeout fails (its statement is cancelled). No timing
is asserted. Exits non-zero when any answer is wrong or a query fails.

Run: ICEFLOE_BIN=bin/icefloe PY check.py [--sf 0.1] [--cache DIR] [--only q01,q02]
(integration/tpcds/run does this with SF 0.1).
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import tpcds  # noqa: E402
import tpch  # noqa: E402 - tpcds puts bench/tpch on the path


# Server configurations: the workers read the Parquet files with DuckDB's
# reader (direct scans; a gather reads its inputs in place), or with
# iceberg-go's (fragments load temp tables; a gather pulls its inputs from
# the other workers).
CONFIGS = {
    "direct": (),
    "iceberg-go": ("--direct-parquet=false",),
}


def seconds(timeout):
    return float(timeout.rstrip("s"))


def check(runner, ref, name, sql, wait):
    """'' when icefloe answers name like DuckDB, else why not."""
    t0 = time.perf_counter()
    try:
        got, parts = runner.run(sql, wait)
    except TimeoutError:
        return f"no answer within {wait:.0f} s", 0, 0, 0
    except Exception as e:  # noqa: BLE001 - a failed query is a failed check
        return f"{type(e).__name__}: {str(e).splitlines()[0][:300]}", 0, 0, 0
    took = time.perf_counter() - t0
    want = ref.execute(sql).to_arrow_table()
    uncut = tpcds.without_limit(sql)
    if uncut is not None and got.num_rows == want.num_rows:
        # Only the tie check needs DuckDB's whole answer.
        d = tpcds.compare(got, want)
        if d:
            d = tpcds.compare(got, want, ref.execute(uncut).to_arrow_table())
    else:
        d = tpcds.compare(got, want)
    return d, took, parts, got.num_rows


def transfer(runner, ref, wait):
    """'' when all of store_sales, read through several partitions, is
    DuckDB's store_sales; else why not. Every TPC-DS query plans into one
    endpoint (a gather or a final), so this is the multi-endpoint read."""
    sql = "SELECT * FROM store_sales"
    try:
        got, parts = runner.run(sql, wait)
    except Exception as e:  # noqa: BLE001 - a failed read is a failed check
        return f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    if parts < 2:
        return f"{parts} partition(s): store_sales should plan into several endpoints"
    want = ref.execute(sql).to_arrow_table()
    d = tpcds.compare(got.slice(0, 0), want.slice(0, 0))
    if d:
        return d
    if got.num_rows != want.num_rows:
        return f"got {got.num_rows} rows, want {want.num_rows}"
    key = [("ss_item_sk", "ascending"), ("ss_ticket_number", "ascending")]
    if not got.sort_by(key).cast(want.schema).equals(want.sort_by(key)):
        return "the rows differ from DuckDB's"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="0.1")
    ap.add_argument("--cache", required=True, help="folder for the generated Parquet files (reused)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated query names (q01,q02,…)")
    ap.add_argument("--timeout", default="60s", help="icefloe's statement timeout per query")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="server configurations to run the queries on: " + ", ".join(CONFIGS))
    ap.add_argument("--pieces", type=int, default=4, help="data files per table of more than 50,000 rows")
    a = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("check: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    data = pathlib.Path(a.cache) / f"sf{a.sf}"
    tables, queries = tpcds.generate(a.sf, data)
    if a.only:
        keep = set(a.only.split(","))
        queries = [q for q in queries if q[0] in keep]
    if not queries:
        print("check: no queries", file=sys.stderr)
        return 1
    ref = tpcds.reference(data, tables)
    # The statement timeout cancels the query on the server; the client
    # waits a little longer for that answer before it gives up itself.
    wait = seconds(a.timeout) + 15
    passed, failed, parted = 0, [], 0
    for config in a.configs.split(","):
        args = CONFIGS[config]
        with tempfile.TemporaryDirectory(prefix="icefloe-tpcds-") as d:
            with tpch.Server(binary, d, workers=a.workers, args=args) as srv:
                t0 = time.perf_counter()
                tpcds.load(srv, data, tables, pieces=a.pieces)
                print(f"[{config}] loaded {len(tables)} tables in {time.perf_counter() - t0:.1f} s", flush=True)
                runner = tpcds.Partitioned(srv.uri, a.timeout)
                try:
                    for name, sql in queries:
                        diff, took, parts, rows = check(runner, ref, name, sql, wait)
                        if diff:
                            failed.append(f"{config}:{name}")
                            print(f"FAIL [{config}] {name}: {diff}", flush=True)
                        else:
                            passed += 1
                            parted += parts > 1
                            print(f"ok   [{config}] {name} ({rows} rows, {parts} partition(s), {took:.2f} s)", flush=True)
                    diff = transfer(runner, ref, wait)
                    if diff:
                        failed.append(f"{config}:transfer")
                        print(f"FAIL [{config}] transfer: {diff}", flush=True)
                    else:
                        passed += 1
                        print(f"ok   [{config}] transfer (store_sales through every partition)", flush=True)
                finally:
                    runner.close()
    print(f"{passed} passed, {len(failed)} failed{': ' + ' '.join(failed) if failed else ''}; "
          f"{parted} answered from several partitions; {time.perf_counter() - t_start:.0f} s in all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
