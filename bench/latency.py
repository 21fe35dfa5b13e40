"""Per-query latency floor: the queries BI tools send most, through Python
ADBC next to DuckDB, side by side in one run.

Starts `icefloe serve --demo` (ICEFLOE_BIN) on a fresh data dir and times,
over the demo table `orders` (30 Parquet files): `SELECT 1`, `count(*)`,
a point filter, a GROUP BY status, and a dashboard tile repeated with the
result cache on and off (`SET result_cache = on|off`; when the server
reports no such setting the split is skipped, saying so, and the tile is
timed once as the server runs it). Each kind runs --reps times through
Python ADBC (cursor.execute + fetch_arrow_table, what a dashboard does)
after --warmup untimed runs, alternating run by run with the same query in
DuckDB in-process (Python duckdb, read_parquet of the table's data files),
so both see the same load; the answers are compared first.
Prints p50/p99 per kind with the ratio to DuckDB and writes --out (JSON).
With --profile SECONDS it also takes a CPU profile of the server while the
queries loop; with --fixed-cost it runs BenchmarkFixedCost (integration/),
the spans' account of where a small query's time goes, and prints it.

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

import tpch  # noqa: E402

# name -> (icefloe SQL, DuckDB SQL over {files})
KINDS = {
    "SELECT 1": ("SELECT 1", "SELECT 1"),
    "count(*) of orders": ("SELECT count(*) FROM orders", "SELECT count(*) FROM read_parquet({files})"),
    "point filter": ("SELECT id, status, amount FROM orders WHERE id = 4242",
                     "SELECT id, status, amount FROM read_parquet({files}) WHERE id = 4242"),
    "GROUP BY status": ("SELECT status, count(*) FROM orders GROUP BY status ORDER BY status",
                        "SELECT status, count(*) FROM read_parquet({files}) GROUP BY status ORDER BY status"),
}

# The dashboard tile, repeated with the result cache on and off.
DASHBOARD = ("SELECT status, count(*) AS n, sum(amount) AS total FROM orders WHERE amount > 100 "
             "GROUP BY status ORDER BY status",
             "SELECT status, count(*) AS n, sum(amount) AS total FROM read_parquet({files}) WHERE amount > 100 "
             "GROUP BY status ORDER BY status")

# What a server that has no result_cache setting answers to SET.
UNKNOWN_SETTING = ("not allowed", "unknown", "unrecognized", "no such setting", "not a setting")

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


def data_files(conn):
    """The demo orders' data files, for DuckDB."""
    cur = conn.cursor()
    cur.execute('SELECT file_path FROM "orders$files" ORDER BY file_path')
    paths = [p.removeprefix("file://") for p in cur.fetch_arrow_table().column(0).to_pylist()]
    cur.close()
    if not paths:
        raise RuntimeError("orders has no data files")
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def set_result_cache(cur, on):
    """Runs SET result_cache; returns None, or the server's message when
    it has no such setting (any other error is raised)."""
    try:
        cur.execute(f"SET result_cache = {'on' if on else 'off'}")
        return None
    except Exception as e:  # noqa: BLE001 - the message decides
        msg = str(e)
        if any(w in msg.lower() for w in UNKNOWN_SETTING):
            return msg.splitlines()[0]
        raise


def fixed_cost(benchtime):
    """Runs BenchmarkFixedCost and returns its per-query figures by query
    and measure (ms/op)."""
    import re
    import subprocess

    root = pathlib.Path(__file__).resolve().parent.parent
    out = subprocess.run(
        ["go", "test", "-tags", os.environ.get("GO_TAGS", "duckdb_arrow"), "./integration", "-run", "^$",
         "-bench", "FixedCost", "-benchtime", f"{benchtime}x", "-count", "1"],
        cwd=root, capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"BenchmarkFixedCost/(\w+)-\d+\s+\d+\s+(\d+) ns/op\s+(.*)", line)
        if not m:
            continue
        figures = {"wall-ms/op": int(m.group(2)) / 1e6}
        for v, unit in re.findall(r"([-\d.e+]+) (\S+)", m.group(3)):
            if unit.endswith("-ms/op"):
                figures[unit] = float(v)
        res[m.group(1)] = figures
    return res


FIXED = ["FlightSQLStatement.ExecuteQuery", "statement", "parse", "bind", "plan", "seal", "fragment", "open",
         "inputs", "duckdb", "child-fragment", "client+network"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent / "tpch" / "out" / "latency.json"))
    ap.add_argument("--label", default="")
    ap.add_argument("--profile", type=int, default=0, help="seconds of server CPU profile to take while looping")
    ap.add_argument("--fixed-cost", type=int, default=200,
                    help="runs per query of BenchmarkFixedCost (the spans' profile); 0 skips it")
    args = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("latency: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    import duckdb

    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-latency-"))
    pprof = f"127.0.0.1:{free_port()}"
    res = {"label": args.label, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "workers": args.workers, "loadavg_start": os.getloadavg(), "kinds": {}}
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}", flush=True)
    try:
        with tpch.Server(binary, data_dir, workers=args.workers, env={"ICEFLOE_PPROF": pprof}, args=("--demo",)) as srv:
            import adbc_driver_flightsql.dbapi as fsql

            # The session (SET result_cache) lives in a cookie.
            conn = fsql.connect(srv.uri, autocommit=True,
                                db_kwargs={"adbc.flight.sql.rpc.with_cookie_middleware": "true"})
            files = data_files(conn)
            duck = duckdb.connect()
            duck.execute("SET threads = 2")
            cur = conn.cursor()

            def measure(name, q, dq):
                def one():
                    cur.execute(q)
                    return cur.fetch_arrow_table()

                def ref():
                    return duck.execute(dq.format(files=files)).to_arrow_table()

                got, want = one(), ref()
                if got.to_pylist() != want.to_pylist():
                    raise RuntimeError(f"{name}: icefloe {got.to_pylist()[:3]} != duckdb {want.to_pylist()[:3]}")
                ti, td = timed([one, ref], args.warmup, args.reps)
                r = {"icefloe": ti, "duckdb": td}
                r["above_duckdb_p50_ms"] = r["icefloe"]["p50_ms"] - r["duckdb"]["p50_ms"]
                r["ratio_p50"] = r["icefloe"]["p50_ms"] / r["duckdb"]["p50_ms"]
                res["kinds"][name] = r
                print(f"{name:30s} icefloe p50 {ti['p50_ms']:7.2f} ms p99 {ti['p99_ms']:7.2f} ms | "
                      f"duckdb p50 {td['p50_ms']:6.2f} ms p99 {td['p99_ms']:6.2f} ms | ratio {r['ratio_p50']:5.2f}x",
                      flush=True)

            print(f"{'query':30s} {'':7s}", flush=True)
            for name, (q, dq) in KINDS.items():
                measure(name, q, dq)
            unknown = set_result_cache(cur, False)
            if unknown is not None:
                print(f"dashboard tile: the server has no result_cache setting ({unknown}); "
                      "timing the tile once, as the server runs it", flush=True)
                res["result_cache"] = f"unknown: {unknown}"
                measure("dashboard tile", *DASHBOARD)
            else:
                res["result_cache"] = "known"
                measure("dashboard tile, result cache off", *DASHBOARD)
                set_result_cache(cur, True)
                measure("dashboard tile, result cache on", *DASHBOARD)
            if args.profile:
                box = {}

                def grab():
                    box["cpu"] = urllib.request.urlopen(
                        f"http://{pprof}/debug/pprof/profile?seconds={args.profile}", timeout=args.profile + 60).read()

                th = threading.Thread(target=grab)
                th.start()
                t_end, n = time.time() + args.profile, 0
                while time.time() < t_end:
                    for q, _ in [*KINDS.values(), DASHBOARD]:
                        cur.execute(q)
                        cur.fetch_arrow_table()
                        n += 1
                th.join()
                res["profile"] = {"seconds": args.profile, "queries": n}
                print(f"{n} queries during the {args.profile} s profile")
                prof = pathlib.Path(args.out).with_suffix(".cpu.pb.gz")
                prof.parent.mkdir(parents=True, exist_ok=True)
                prof.write_bytes(box["cpu"])
                print(f"profile in {prof}")
            cur.close()
            conn.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if args.fixed_cost:
        res["fixed_cost"] = fixed_cost(args.fixed_cost)
        cols = [c for c in FIXED if any(c + "-ms/op" in f for f in res["fixed_cost"].values())]
        print("fixed cost per query, ms (BenchmarkFixedCost, Go ADBC, in-process cluster, 2 workers):")
        print(f"{'query':9s} {'wall':>7s} " + " ".join(f"{c:>{max(7, len(c))}s}" for c in cols))
        for q, f in res["fixed_cost"].items():
            print(f"{q:9s} {f['wall-ms/op']:7.2f} " +
                  " ".join(f"{f.get(c + '-ms/op', 0):{max(7, len(c))}.2f}" for c in cols))
    res["loadavg_end"] = os.getloadavg()
    print(f"load average {res['loadavg_end'][0]:.2f} {res['loadavg_end'][1]:.2f} {res['loadavg_end'][2]:.2f}")
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
