"""TPC-H answer check: generate (cached), load through icefloe, run the 22
queries through Python ADBC against `icefloe serve` with 2 workers, and
compare each answer with DuckDB's on the same Parquet files; then pull all
of lineitem through every endpoint and through the single proxied endpoint
and compare counts and sums with DuckDB. No timing is asserted. Exits non-zero when any answer is wrong or a query fails.

Run: ICEFLOE_BIN=bin/icefloe PY -m smoke [--sf 0.1] [--cache DIR] [--only q01,q02]
(integration/tpch/run does this with SF 0.1).
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pyarrow.compute as pc  # noqa: E402

import tpch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="0.1")
    ap.add_argument("--cache", required=True, help="folder for the generated Parquet files (reused)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated query names")
    ap.add_argument("--config", default="", help="a YAML config for `icefloe serve` (e.g. join thresholds)")
    ap.add_argument("--explain", action="store_true", help="print each query's strategy")
    a = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("smoke: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    tpchgen = str(pathlib.Path(sys.executable).parent / "tpchgen-cli")
    data = tpch.generate(tpchgen, a.sf, pathlib.Path(a.cache) / f"sf{a.sf}")
    qs = tpch.queries()
    if a.only:
        keep = set(a.only.split(","))
        qs = [q for q in qs if q[0] in keep]
    if not qs:
        print("smoke: no queries", file=sys.stderr)
        return 1
    ref = tpch.duckdb_on_parquet(data)
    passed, failed = 0, []
    with tempfile.TemporaryDirectory(prefix="icefloe-tpch-") as d:
        args = ("--config", a.config) if a.config else ()
        with tpch.Server(binary, d, workers=a.workers, args=args) as srv:
            tpch.load(srv, data)
            conn = srv.connect()
            try:
                for name, sql in qs:
                    t0 = time.perf_counter()
                    try:
                        got = tpch.run_icefloe(conn, sql)
                    except Exception as e:  # a failed query is a failed check
                        failed.append(name)
                        print(f"FAIL {name}: {type(e).__name__}: {e}")
                        continue
                    took = time.perf_counter() - t0
                    if a.explain:
                        plan = tpch.run_icefloe(conn, "EXPLAIN " + sql).to_pylist()
                        print("     " + "; ".join(r["value"] for r in plan if r["item"] == "strategy"))
                    d_ = tpch.diff(got, tpch.run_duckdb(ref, sql))
                    if d_:
                        failed.append(name)
                        print(f"FAIL {name}: wrong answer: {d_}")
                    else:
                        passed += 1
                        print(f"ok   {name} ({got.num_rows} rows, {took:.2f} s)")
            finally:
                conn.close()
            # The whole of lineitem, through all endpoints and through the
            # single proxied endpoint (its batches exceed gRPC's default
            # 4 MiB message size).
            want = tpch.run_duckdb(ref, "SELECT count(*) AS n, sum(l_orderkey) AS k, "
                                        "sum(l_extendedprice) AS p FROM lineitem").to_pylist()[0]
            for name, single in (("transfer-parallel", False), ("transfer-single-endpoint", True)):
                c = srv.connect(single_endpoint=single)
                try:
                    t = tpch.run_icefloe(c, "SELECT * FROM lineitem")
                    got = {"n": t.num_rows, "k": pc.sum(t["l_orderkey"]).as_py(),
                           "p": pc.sum(t["l_extendedprice"]).as_py()}
                    if got != want or t.num_columns != 16:
                        failed.append(name)
                        print(f"FAIL {name}: got {got} ({t.num_columns} columns), want {want}")
                    else:
                        passed += 1
                        print(f"ok   {name} ({t.num_rows} rows)")
                except Exception as e:
                    failed.append(name)
                    print(f"FAIL {name}: {type(e).__name__}: {e}")
                finally:
                    c.close()
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
