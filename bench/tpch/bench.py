"""TPC-H benchmark: icefloe through Flight SQL next to its users' alternatives.

One run, on one machine and one copy of the data:

1. generate TPC-H at --sf with tpchgen-cli (cached), load it through
   `icefloe serve` (CREATE TABLE, ADBC bulk ingest; lineitem and orders
   partitioned by year of their date);
2. the 22 queries through Python ADBC (all endpoints in parallel) against
   `icefloe serve --workers 2`; the first run of each query is checked
   against DuckDB on the same Parquet files (a wrong answer fails the run),
   then --reps timed runs;
3. peers, --reps runs each: DuckDB on the Parquet files; pyiceberg scanning
   the query's tables to Arrow and DuckDB querying that; Spark (local[2],
   Iceberg's JdbcCatalog over the same SQLite catalog file) in its own
   process (spark_peer.py);
4. scan and transfer: SELECT * FROM lineitem pulled with all endpoints in
   parallel, through one proxied endpoint, and DuckDB read_parquet to Arrow,
   with 1, 2 and 4 workers;
5. writes: ADBC ingest of lineitem, CREATE TABLE … AS SELECT from it, and
   pyiceberg append of the same Arrow table;
6. CPU and heap profiles of the server (coordinator and workers share the
   `serve` process) over one more pass of the 22 queries.

Results go to --out/results-sf<SF>.json; report.py turns them into
docs/benchmarks.md's TPC-H sections and the chart. Nothing is asserted on
time. Run: `make bench-tpch SF=1`.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import tpch  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def timed(fn, reps):
    """Runs fn reps times; returns (median seconds, all times, last result)."""
    times, res = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, res


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tables_of(sql):
    words = set(re.findall(r"[a-z_]+", sql.lower()))
    return [t for t in tpch.TABLES if t in words]


# ---- parts -------------------------------------------------------------------


def run_icefloe_queries(srv, ref, qs, reps, results):
    conn = srv.connect()
    wrong = []
    try:
        for name, sql in qs:
            # The first of the reps runs is also the checked one.
            t0 = time.perf_counter()
            try:
                got = tpch.run_icefloe(conn, sql)
            except Exception as e:
                wrong.append(name)
                log(f"icefloe {name}: FAILED {type(e).__name__}: {e}")
                results[name]["icefloe"] = {"error": str(e)}
                continue
            first = time.perf_counter() - t0
            d = tpch.diff(got, tpch.run_duckdb(ref, sql))
            if d:
                wrong.append(name)
                log(f"icefloe {name}: WRONG ANSWER {d}")
            _, times, _ = timed(lambda: tpch.run_icefloe(conn, sql), reps - 1)
            times = [first] + times
            med = statistics.median(times)
            results[name]["icefloe"] = {"median": med, "times": times, "rows": got.num_rows,
                                        "checked": not d}
            log(f"icefloe {name}: {med:.3f} s ({got.num_rows} rows){' WRONG' if d else ''}")
    finally:
        conn.close()
    return wrong


def run_duckdb_queries(data, qs, reps, results):
    con = tpch.duckdb_on_parquet(data)
    for name, sql in qs:
        med, times, res = timed(lambda: tpch.run_duckdb(con, sql), reps)
        results[name]["duckdb"] = {"median": med, "times": times, "rows": res.num_rows}
        log(f"duckdb {name}: {med:.3f} s")
    con.close()


def run_pyiceberg_queries(data_dir, qs, reps, results):
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog

    cat = SqlCatalog("local", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
    for name, sql in qs:
        def one():
            con = duckdb.connect()
            con.execute("SET threads = 2")
            for t in tables_of(sql):
                arrow = cat.load_table(f"default.{t}").scan().to_arrow()
                con.register(t, arrow)
            out = con.execute(sql).to_arrow_table()
            con.close()
            return out

        med, times, res = timed(one, reps)
        results[name]["pyiceberg"] = {"median": med, "times": times, "rows": res.num_rows}
        log(f"pyiceberg+duckdb {name}: {med:.3f} s")


def run_spark_queries(args, data_dir, reps, results, notes):
    py = pathlib.Path(sys.executable)
    root = HERE.parent.parent
    jars = []
    try:
        for coords in ("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1", "org.xerial:sqlite-jdbc:3.49.1.0"):
            dest = root / "integration" / ".m2" / "jars"
            subprocess.run([str(root / "scripts" / "fetch-maven"), coords, str(dest)],
                           check=True, capture_output=True, text=True)
            _, artifact, version = coords.split(":")
            jars.append(str(dest / f"{artifact}-{version}.jar"))
    except subprocess.CalledProcessError as e:
        notes["spark"] = f"jars could not be fetched: {e.stderr.strip()[-300:]}"
        return
    out_json = pathlib.Path(args.out) / f"spark-sf{args.sf}.json"
    cmd = [str(py), str(HERE / "spark_peer.py"), "--catalog", f"{data_dir}/catalog.db", "--warehouse",
           f"{data_dir}/warehouse", "--jars", ",".join(jars), "--reps", str(reps), "--out", str(out_json)]
    if args.only:
        cmd += ["--only", args.only]
    log("spark: " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.spark_timeout)
    if p.returncode != 0:
        notes["spark"] = f"spark_peer.py exited {p.returncode}: {p.stderr.strip()[-1500:]}"
        log(notes["spark"])
        return
    got = json.loads(out_json.read_text())
    for name, r in got["queries"].items():
        results[name]["spark"] = r
        log(f"spark {name}: {r.get('median', r.get('error'))}")
    notes["spark_startup"] = got.get("startup")


def scan_transfer(binary, data_dir, parquet_dir, reps, workers_list):
    out = []
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    path = tpch.parquet_path(parquet_dir, "lineitem")
    med, times, t = timed(lambda: con.execute(f"SELECT * FROM read_parquet('{path}')").to_arrow_table(), reps)
    rows, nbytes = t.num_rows, t.nbytes
    out.append({"how": "duckdb read_parquet → Arrow (in-process)", "workers": None, "median": med, "times": times,
                "rows": rows, "bytes": nbytes})
    log(f"scan duckdb: {med:.3f} s {rows / med / 1e6:.2f} M rows/s {nbytes / med / 1e6:.0f} MB/s")
    del t
    for w in workers_list:
        with tpch.Server(binary, data_dir, workers=w) as srv:
            for mode, single in (("parallel endpoints", False), ("single endpoint (proxied)", True)):
                conn = srv.connect(single_endpoint=single)
                try:
                    cur = conn.cursor()
                    n_end = len(cur.adbc_execute_partitions("SELECT * FROM lineitem")[0])
                    cur.close()
                    med, times, t = timed(lambda: tpch.run_icefloe(conn, "SELECT * FROM lineitem"), reps)
                except Exception as e:
                    out.append({"how": mode, "workers": w, "error": f"{type(e).__name__}: {e}"})
                    log(f"scan {mode} workers={w}: FAILED {e}")
                    continue
                finally:
                    conn.close()
                if t.num_rows != rows:
                    out.append({"how": mode, "workers": w, "error": f"{t.num_rows} rows, want {rows}"})
                    continue
                out.append({"how": mode, "workers": w, "endpoints": n_end, "median": med, "times": times,
                            "rows": t.num_rows, "bytes": t.nbytes})
                log(f"scan {mode} workers={w} endpoints={n_end}: {med:.3f} s "
                    f"{t.num_rows / med / 1e6:.2f} M rows/s {t.nbytes / med / 1e6:.0f} MB/s")
                del t
    return out


def writes(srv, data_dir, parquet_dir):
    """ADBC ingest of lineitem, CTAS from it, pyiceberg append of the same
    Arrow table; each into a table partitioned like lineitem."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import YearTransform

    path = tpch.parquet_path(parquet_dir, "lineitem")
    table = tpch.parquet_reader(path).read_all()
    mb = table.nbytes / 1e6
    out = {"rows": table.num_rows, "bytes": table.nbytes}
    conn = srv.connect()
    try:
        tpch.update(conn, "DROP TABLE IF EXISTS lineitem_ingest")
        tpch.update(conn, tpch.ddl("lineitem", pq.read_schema(path)).replace("TABLE lineitem", "TABLE lineitem_ingest"))
        cur = conn.cursor()
        t0 = time.perf_counter()
        cur.adbc_ingest("lineitem_ingest", pa.RecordBatchReader.from_batches(
            table.schema, table.to_batches(max_chunksize=64 * 1024)), mode="append")
        out["ingest"] = time.perf_counter() - t0
        cur.close()
        tpch.update(conn, "DROP TABLE IF EXISTS lineitem_ctas")
        t0 = time.perf_counter()
        tpch.update(conn, "CREATE TABLE lineitem_ctas PARTITIONED BY (year(l_shipdate)) AS SELECT * FROM lineitem")
        out["ctas"] = time.perf_counter() - t0
    finally:
        conn.close()
    cat = SqlCatalog("local", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
    if cat.table_exists("default.lineitem_py"):
        cat.drop_table("default.lineitem_py")
    t0 = time.perf_counter()
    tbl = cat.create_table("default.lineitem_py", schema=table.schema)
    with tbl.update_spec() as u:
        u.add_field("l_shipdate", YearTransform(), "l_shipdate_year")
    tbl.append(table)
    out["pyiceberg_append"] = time.perf_counter() - t0
    log(f"writes: ingest {out['ingest']:.2f} s ({mb / out['ingest']:.0f} MB/s), CTAS {out['ctas']:.2f} s, "
        f"pyiceberg append {out['pyiceberg_append']:.2f} s")
    return out


def profile(srv, pprof_addr, qs, out_dir, binary, expect):
    """CPU profile over one more pass of the queries (expect: the seconds
    that pass should take, from the timed runs), then heap and allocs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    base = f"http://{pprof_addr}/debug/pprof"
    conn = srv.connect()
    secs = int(expect * 1.1) + 2
    box = {}

    def grab():
        box["cpu"] = urllib.request.urlopen(f"{base}/profile?seconds={secs}", timeout=secs + 60).read()

    th = threading.Thread(target=grab)
    th.start()
    time.sleep(0.5)
    for _, sql in qs:
        tpch.run_icefloe(conn, sql)
    th.join()
    conn.close()
    (out_dir / "cpu.pb.gz").write_bytes(box["cpu"])
    for kind in ("heap", "allocs"):
        (out_dir / f"{kind}.pb.gz").write_bytes(urllib.request.urlopen(f"{base}/{kind}", timeout=60).read())
    tops = {}
    gobin = shutil.which("go")
    for kind, extra in (("cpu", []), ("allocs", ["-sample_index=alloc_space"]), ("heap", ["-sample_index=inuse_space"])):
        if not gobin:
            break
        for mode in ("-top", "-top -cum"):
            p = subprocess.run([gobin, "tool", "pprof", *mode.split(), "-nodecount=30", *extra, binary,
                                str(out_dir / f"{kind}.pb.gz")], capture_output=True, text=True)
            tops[f"{kind}{'_cum' if 'cum' in mode else ''}"] = p.stdout
            (out_dir / f"{kind}{'_cum' if 'cum' in mode else ''}.txt").write_text(p.stdout + p.stderr)
    log(f"profiles in {out_dir}")
    return {"seconds": secs, "tops": tops}


def versitygw():
    """The versitygw binary: $ICEFLOE_VERSITYGW, or installed now."""
    if os.environ.get("ICEFLOE_VERSITYGW"):
        return os.environ["ICEFLOE_VERSITYGW"]
    root = HERE.parent.parent
    p = subprocess.run([str(root / "scripts" / "ensure-versitygw"), str(root / "integration" / ".tools")],
                       check=True, capture_output=True, text=True)
    return p.stdout.strip().splitlines()[-1]


def run_s3(binary, parquet, qs, reps, workers, results):
    """TPC-H with every table on S3 (versitygw on this machine, an SQL
    catalog whose warehouse is a bucket): cold — each query alone on a
    freshly started server with an empty data cache — and warm — the same
    server after one untimed pass, median of reps. Every answer is checked.
    Returns notes (load times, cache size)."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-tpch-s3-"))
    gw = tpch.S3(versitygw(), root)
    cfg = gw.config()
    data_dir = root / "icefloe"
    notes = {}

    def server(cache):
        return tpch.Server(binary, data_dir, workers=workers, session=("s3", "tpch"),
                           args=["--config", cfg, "--data-cache-dir", str(root / cache)])

    wrong = []
    try:
        with server("cache-load") as srv:
            srv.session = None
            c = srv.connect()
            tpch.update(c, "CREATE SCHEMA IF NOT EXISTS s3.tpch")
            c.close()
            srv.session = ("s3", "tpch")
            notes["load"] = tpch.load(srv, parquet, log=log)
            c = srv.connect()
            files = tpch.run_icefloe(c, 'SELECT file_path FROM "lineitem$files"').column(0).to_pylist()
            c.close()
            if not files or not all(f.startswith(f"s3://{gw.BUCKET}/") for f in files):
                raise RuntimeError(f"lineitem is not on S3: {files[:2]}")
        ref = tpch.duckdb_on_parquet(parquet)
        for i, (name, sql) in enumerate(qs):
            with server(f"cache-cold-{i}") as srv:
                conn = srv.connect()
                t0 = time.perf_counter()
                got = tpch.run_icefloe(conn, sql)
                cold = time.perf_counter() - t0
                conn.close()
            d = tpch.diff(got, tpch.run_duckdb(ref, sql))
            if d:
                wrong.append(name)
                log(f"s3 cold {name}: WRONG ANSWER {d}")
            results[name]["s3_cold"] = {"seconds": cold, "checked": not d}
            log(f"s3 cold {name}: {cold:.3f} s")
        with server("cache-warm") as srv:
            conn = srv.connect()
            for name, sql in qs:
                tpch.run_icefloe(conn, sql)
            for name, sql in qs:
                med, times, got = timed(lambda: tpch.run_icefloe(conn, sql), reps)
                d = tpch.diff(got, tpch.run_duckdb(ref, sql))
                if d:
                    wrong.append(name)
                    log(f"s3 warm {name}: WRONG ANSWER {d}")
                results[name]["s3_warm"] = {"median": med, "times": times, "checked": not d}
                log(f"s3 warm {name}: {med:.3f} s")
            conn.close()
        ref.close()
        cache = root / "cache-warm"
        notes["warm_cache_bytes"] = sum(f.stat().st_size for f in cache.rglob("*.data"))
        notes["object_bytes"] = sum(f.stat().st_size for f in (root / "objects").rglob("*") if f.is_file())
    finally:
        gw.stop()
        shutil.rmtree(root, ignore_errors=True)
    return notes, wrong


def s3_markdown(res):
    """The S3 results as a markdown table (docs/benchmarks.md)."""
    rows = ["| query | S3 cold | S3 warm | DuckDB on local Parquet | warm vs DuckDB | cold vs DuckDB |",
            "|---|---|---|---|---|---|"]
    tc = tw = td = 0.0
    for name, r in res["queries"].items():
        c, w, d = r["s3_cold"]["seconds"], r["s3_warm"]["median"], r["duckdb"]["median"]
        tc, tw, td = tc + c, tw + w, td + d
        rows.append(f"| {name.upper()} | {c:.3f} | {w:.3f} | {d:.3f} | {w / d:.2f}× | {c / d:.2f}× |")
    rows.append(f"| **total** | **{tc:.2f}** | **{tw:.2f}** | {td:.2f} | **{tw / td:.2f}×** | **{tc / td:.2f}×** |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="1")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--cache", default=str(HERE.parent.parent / "integration" / ".tpch-data"))
    ap.add_argument("--only", default="", help="comma-separated query names")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: queries,pyiceberg,spark,scan,writes,profile")
    ap.add_argument("--spark-timeout", type=int, default=3600)
    ap.add_argument("--label", default="", help="suffix of the results file (e.g. before)")
    ap.add_argument("--s3", action="store_true",
                    help="only: the tables on S3 (versitygw), cold and warm, next to DuckDB on local Parquet")
    args = ap.parse_args()
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("bench: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    binary = str(pathlib.Path(binary).resolve())
    skip = set(filter(None, args.skip.split(",")))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tpchgen = str(pathlib.Path(sys.executable).parent / "tpchgen-cli")
    t0 = time.perf_counter()
    parquet = tpch.generate(tpchgen, args.sf, pathlib.Path(args.cache) / f"sf{args.sf}")
    gen_s = time.perf_counter() - t0
    qs = tpch.queries()
    if args.only:
        keep = set(args.only.split(","))
        qs = [q for q in qs if q[0] in keep]
    results = {name: {} for name, _ in qs}
    notes = {}
    res = {"sf": args.sf, "reps": args.reps, "workers": args.workers, "cpus": os.cpu_count(),
           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "generate_seconds": gen_s,
           "parquet_bytes": {t: os.path.getsize(tpch.parquet_path(parquet, t)) for t in tpch.TABLES},
           "rows": {t: pq.ParquetFile(tpch.parquet_path(parquet, t)).metadata.num_rows for t in tpch.TABLES},
           "queries": results, "notes": notes}
    suffix = f"-{args.label}" if args.label else ""
    res_path = out / f"results-sf{args.sf}{suffix}.json"

    def save():
        res_path.write_text(json.dumps(res, indent=1, default=str))

    if args.s3:
        res_path = out / f"results-sf{args.sf}-s3{suffix}.json"
        res["s3"], wrong = run_s3(binary, parquet, qs, args.reps, args.workers, results)
        save()
        run_duckdb_queries(parquet, qs, args.reps, results)
        res["wrong"] = wrong
        res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        save()
        print(s3_markdown(res))
        log(f"results in {res_path}")
        return 1 if wrong else 0

    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-tpch-bench-"))
    wrong = []
    try:
        pprof_addr = f"127.0.0.1:{free_port()}"
        with tpch.Server(binary, data_dir, workers=args.workers, env={"ICEFLOE_PPROF": pprof_addr}) as srv:
            res["load"] = tpch.load(srv, parquet, log=log)
            save()
            if "queries" not in skip:
                ref = tpch.duckdb_on_parquet(parquet)
                wrong = run_icefloe_queries(srv, ref, qs, args.reps, results)
                ref.close()
                save()
            if "profile" not in skip and "queries" not in skip:
                expect = sum(r["icefloe"].get("median", 0) for r in results.values())
                res["profile"] = profile(srv, pprof_addr, qs, out / f"profiles-sf{args.sf}{suffix}", binary, expect)
                save()
            if "writes" not in skip:
                res["writes"] = writes(srv, data_dir, parquet)
                save()
        if "queries" not in skip:
            run_duckdb_queries(parquet, qs, args.reps, results)
            save()
        if "pyiceberg" not in skip:
            run_pyiceberg_queries(data_dir, qs, args.reps, results)
            save()
        if "scan" not in skip:
            res["scan"] = scan_transfer(binary, data_dir, parquet, args.reps, [1, 2, 4])
            save()
        if "spark" not in skip:
            try:
                run_spark_queries(args, data_dir, args.reps, results, notes)
            except subprocess.TimeoutExpired:
                notes["spark"] = f"did not finish within {args.spark_timeout} s"
            save()
    finally:
        res["wrong"] = wrong
        res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        save()
        shutil.rmtree(data_dir, ignore_errors=True)
    log(f"results in {res_path}")
    if wrong:
        log(f"WRONG ANSWERS: {', '.join(wrong)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
