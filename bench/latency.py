"""Per-query latency floor: tiny queries through Python ADBC next to DuckDB.

Starts `icefloe serve` (ICEFLOE_BIN) on a fresh data dir, loads one small
table in one Parquet file through ADBC bulk ingest, then times each query
kind --reps times through Python ADBC (cursor.execute + fetch_arrow_table,
what a dashboard does) after --warmup untimed runs, alternating run by run
with the same queries in DuckDB in-process (Python duckdb, read_parquet of
the table's data file), so both see the same load.
Prints p50/p99 per kind and writes --out (JSON). With --profile SECONDS it
also takes a CPU profile of the server while the queries loop.

    ICEFLOE_BIN=bin/icefloe integration/.venv-tpch/bin/python bench/latency.py

Reported, never asserted.
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "tpch"))

import pyarrow as pa  # noqa: E402

import tpch  # noqa: E402

ROWS = 10_000

POINT = ("SELECT id, g, v FROM small WHERE id = 4242", "SELECT id, g, v FROM read_parquet('{path}') WHERE id = 4242")
DASHBOARD = ("SELECT g, count(*), sum(v) FROM small GROUP BY g ORDER BY g",
             "SELECT g, count(*), sum(v) FROM read_parquet('{path}') GROUP BY g ORDER BY g")

# name -> (icefloe SQL, DuckDB SQL over {path}, result cache on). Every
# query repeats, so with the result cache on the point filter and the
# aggregate (one endpoint each) are answered from it after their first
# run; the same queries on a session with SET result_cache = off read
# the file each time.
KINDS = {
    "SELECT 1": ("SELECT 1", "SELECT 1", True),
    "count(*) of a small table": ("SELECT count(*) FROM small", "SELECT count(*) FROM read_parquet('{path}')", True),
    "point filter (cache off)": (*POINT, False),
    "one-file aggregate (cache off)": (*DASHBOARD, False),
    "point filter (cache on)": (*POINT, True),
    "repeated dashboard query (cache on)": (*DASHBOARD, True),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def stats(times):
    return {"p50_ms": statistics.median(times) * 1e3, "p99_ms": percentile(times, 99) * 1e3,
            "mean_ms": statistics.fmean(times) * 1e3, "reps": len(times)}


def timed(fns, warmup, reps):
    """Runs each of fns warmup times, then reps times alternating between
    them (so all see the same load); returns their stats in order."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [stats(ts) for ts in times]


def load(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE small (id BIGINT, g BIGINT, v DOUBLE)")
    ids = pa.array(range(ROWS), pa.int64())
    t = pa.table({"id": ids, "g": pa.array([i % 16 for i in range(ROWS)], pa.int64()),
                  "v": pa.array([i * 0.5 for i in range(ROWS)], pa.float64())})
    cur.adbc_ingest("small", t, mode="append")
    cur.execute('SELECT file_path FROM "small$files"')
    paths = cur.fetch_arrow_table().column(0).to_pylist()
    cur.close()
    if len(paths) != 1:
        raise RuntimeError(f"small has {len(paths)} data files, want 1")
    return paths[0].removeprefix("file://")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "tpch" / "out" / "latency.json"))
    ap.add_argument("--label", default="")
    ap.add_argument("--profile", type=int, default=0, help="seconds of server CPU profile to take while looping")
    args = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("latency: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    import duckdb

    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-latency-"))
    pprof = f"127.0.0.1:{free_port()}"
    res = {"label": args.label, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "rows": ROWS, "workers": args.workers, "loadavg_start": os.getloadavg(), "kinds": {}}
    try:
        with tpch.Server(binary, data_dir, workers=args.workers, env={"ICEFLOE_PPROF": pprof}) as srv:
            conn = srv.connect()
            path = load(conn)
            duck = duckdb.connect()
            duck.execute("SET threads = 2")
            import adbc_driver_flightsql.dbapi as fsql
            # SET lasts for the session, which lives in a cookie.
            nocache = fsql.connect(srv.uri, autocommit=True,
                                   db_kwargs={"adbc.flight.sql.rpc.with_cookie_middleware": "true"})
            with nocache.cursor() as c:
                c.execute("SET result_cache = off")
                c.fetchall()
            curs = {True: conn.cursor(), False: nocache.cursor()}
            for name, (q, dq, cached) in KINDS.items():
                cur = curs[cached]

                def one():
                    cur.execute(q)
                    return cur.fetch_arrow_table()

                def ref():
                    return duck.execute(dq.format(path=path)).to_arrow_table()

                got, want = one(), ref()
                if got.to_pylist() != want.to_pylist():
                    raise RuntimeError(f"{name}: icefloe {got.to_pylist()[:3]} != duckdb {want.to_pylist()[:3]}")
                ti, td = timed([one, ref], args.warmup, args.reps)
                r = {"icefloe": ti, "duckdb": td}
                r["above_duckdb_p50_ms"] = r["icefloe"]["p50_ms"] - r["duckdb"]["p50_ms"]
                res["kinds"][name] = r
                print(f"{name:36s} icefloe p50 {r['icefloe']['p50_ms']:7.2f} ms p99 {r['icefloe']['p99_ms']:7.2f} ms | "
                      f"duckdb p50 {r['duckdb']['p50_ms']:6.2f} ms p99 {r['duckdb']['p99_ms']:6.2f} ms", flush=True)
            if args.profile:
                box = {}

                def grab():
                    box["cpu"] = urllib.request.urlopen(
                        f"http://{pprof}/debug/pprof/profile?seconds={args.profile}", timeout=args.profile + 60).read()

                th = threading.Thread(target=grab)
                th.start()
                t_end, n = time.time() + args.profile, 0
                while time.time() < t_end:
                    for q, _, cached in KINDS.values():
                        curs[cached].execute(q)
                        curs[cached].fetch_arrow_table()
                        n += 1
                th.join()
                res["profile"] = {"seconds": args.profile, "queries": n}
                print(f"{n} queries during the {args.profile} s profile")
                prof = pathlib.Path(args.out).with_suffix(".cpu.pb.gz")
                prof.parent.mkdir(parents=True, exist_ok=True)
                prof.write_bytes(box["cpu"])
                print(f"profile in {prof}")
            for c in curs.values():
                c.close()
            conn.close()
            nocache.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg()
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
