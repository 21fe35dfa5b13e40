"""TPC-H and TPC-DS side by side with DuckDB, and scaling with pinned workers.

One run, one machine, one copy of each dataset:

1. data: TPC-H at each --tpch-sf (tpchgen-cli, cached in
   integration/.tpch-data) and TPC-DS at each --tpcds-sf (DuckDB's tpcds
   extension, cached in integration/.tpcds-data), one Parquet file per table;
2. per dataset, the tables are loaded once through icefloe (CREATE TABLE,
   ADBC bulk ingest) into a data folder that the later clusters reuse;
3. per worker count in --workers, a cluster of `icefloe coordinator` and
   that many `icefloe worker` processes, each worker pinned to its own core
   with taskset (worker i on CPU i; the coordinator is not pinned) unless
   --no-pin; every query's first answer is compared with DuckDB's on the
   same Parquet files, then --reps timed runs; the workers' peak RSS
   (VmHWM) is recorded per query;
4. DuckDB in-process (threads = the machine's CPUs) runs the same queries
   on the Parquet files, --reps times each, in the same run.

Each worker serves /metrics (--http-addr): per query, the bytes the
workers streamed to one another (icefloe_worker_streamed_bytes_total of
child tickets: exchanges and gathers) and each worker's and the
coordinator's CPU seconds (/proc/<pid>/stat), over the timed runs.

Reports per dataset: icefloe's total per worker count next to DuckDB's,
the ratio, the queries above 3x DuckDB, the speed-up of the largest
worker count over 1, the bytes moved between workers, and a projection
to 4, 8 and 16 workers from the measured CPU and bytes moved (project()). Writes --out (JSON) and docs/benchmarks.md's section
between `<!-- sidebyside:begin -->` and `<!-- sidebyside:end -->`.
Reported, never asserted. Run: `make bench-sidebyside`.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench" / "tpch"))

sys.path.insert(0, str(ROOT / "bench" / "tpcds"))

import tpch  # noqa: E402
import tpcds  # noqa: E402

BEGIN, END = "<!-- sidebyside:begin -->", "<!-- sidebyside:end -->"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def datasets(args):
    """(label, tables loader, queries, duckdb reference factory) per dataset."""
    out = []
    tpchgen = str(pathlib.Path(sys.executable).parent / "tpchgen-cli")
    for sf in filter(None, args.tpch_sf.split(",")):
        data = tpch.generate(tpchgen, sf, ROOT / "integration" / ".tpch-data" / f"sf{sf}")
        out.append({
            "name": f"TPC-H SF {sf}", "data": data, "queries": tpch.queries(),
            "load": lambda srv, data=data: tpch.load(srv, data, log=log),
            "reference": lambda data=data: tpch.duckdb_on_parquet(data, threads=os.cpu_count()),
        })
    for sf in filter(None, args.tpcds_sf.split(",")):
        data = ROOT / "integration" / ".tpcds-data" / f"sf{sf}"
        tables, qs = tpcds.generate(float(sf), data)
        out.append({
            "name": f"TPC-DS SF {sf}", "data": data, "queries": qs,
            "load": lambda srv, data=data, tables=tables: tpcds.load(srv, data, tables),
            "reference": lambda data=data, tables=tables: tpcds.reference(data, tables, threads=os.cpu_count()),
        })
    if args.queries:
        keep = set(args.queries.split(","))
        for ds in out:
            ds["queries"] = [(n, q) for n, q in ds["queries"] if n in keep]
    return out


def pins(workers, pin):
    if not pin:
        return None
    cpus = os.cpu_count() or 1
    return [str(i % cpus) for i in range(workers)]


def timed(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


CHILD_BYTES = re.compile(r'^icefloe_worker_streamed_bytes_total\{kind="child"\} (\S+)$', re.M)


def http_addrs(cl):
    """The workers' HTTP listeners, from their ready lines."""
    out = []
    for line in cl.log:
        if "icefloe worker ready" in line and "{" in line:
            out.append(json.loads(line[line.index("{"):]).get("http", ""))
    return out


def moved_bytes(addrs):
    """Bytes the workers streamed to peers so far, summed."""
    total = 0.0
    for a in addrs:
        if not a:
            return None
        with urllib.request.urlopen(f"http://{a}/metrics", timeout=10) as r:
            m = CHILD_BYTES.search(r.read().decode())
        total += float(m.group(1)) if m else 0.0
    return total


def cpu_seconds(pid):
    """User and system CPU seconds of pid so far."""
    try:
        f = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def cpu(cl):
    """{'coordinator': s, 'worker0': s, …} of CPU so far."""
    out = {"coordinator": cpu_seconds(cl.proc.pid)}
    for i, w in enumerate(cl.workers):
        out[f"worker{i}"] = cpu_seconds(w.pid)
    return out


def run_cluster(binary, work, ds, workers, args, ref):
    """Runs every query of ds on a cluster of workers; returns per-query rows."""
    rows = {}
    extra = ("--config", args.coordinator_config) if args.coordinator_config else ()
    with tpch.Cluster(binary, work, workers=workers, pin=pins(workers, args.pin), args=("--http-addr", "127.0.0.1:0"),
                      coordinator_args=extra) as cl:
        addrs = http_addrs(cl)
        conn = tpcds.connect(cl.uri, args.timeout)
        try:
            for name, sql in ds["queries"]:
                r = {}
                try:
                    got = tpch.run_icefloe(conn, sql)
                    r["answer"] = tpcds.answer(got, tpch.run_duckdb(ref, sql), sql, ref)
                    b0, c0 = moved_bytes(addrs), cpu(cl)
                    r["seconds"] = timed(lambda: tpch.run_icefloe(conn, sql), args.reps)
                    b1, c1 = moved_bytes(addrs), cpu(cl)
                    # Per run of the query: the timed runs' median is one run.
                    r["moved_bytes"] = (b1 - b0) / args.reps if b0 is not None and b1 is not None else None
                    r["cpu_s"] = {k: (c1[k] - c0[k]) / args.reps for k in c0}
                except Exception as e:  # noqa: BLE001 - reported per query
                    r["error"] = str(e).splitlines()[0][:300]
                r["peak_rss"] = cl.peak_rss()
                rows[name] = r
                log(f"{ds['name']} workers={workers} {name}: "
                    + (f"error {r['error']}" if "error" in r else f"{r['answer']:10s} {r['seconds'] * 1e3:9.1f} ms"))
        finally:
            conn.close()
    return rows


def run_dataset(binary, ds, args):
    res = {"name": ds["name"], "workers": {}, "duckdb": {}}
    work = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-sidebyside-"))
    try:
        counts = sorted({int(w) for w in args.workers.split(",")})
        with tpch.Cluster(binary, work, workers=max(counts)) as cl:
            t0 = time.perf_counter()
            ds["load"](cl)
            res["load_s"] = time.perf_counter() - t0
        log(f"{ds['name']}: loaded in {res['load_s']:.1f} s")
        ref = ds["reference"]()
        for name, sql in ds["queries"]:
            res["duckdb"][name] = timed(lambda: tpch.run_duckdb(ref, sql), args.reps)
        for w in counts:
            res["workers"][str(w)] = run_cluster(binary, work, ds, w, args, ref)
        ref.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


# A join of TPC-H's two large tables on their key: gathered on one worker,
# or shuffled (hash-partitioned over the workers) by the coordinator's
# thresholds (docs/configuration.md: broadcast_bytes, shuffle_bytes).
MEMORY_JOIN = """SELECT o_orderpriority, count(*) AS n, sum(l_extendedprice) AS price
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
WHERE l_commitdate < l_receiptdate
GROUP BY o_orderpriority ORDER BY o_orderpriority"""
MEMORY_PLANS = {
    "gather": "shuffle_bytes: 1125899906842624\n",
    "shuffle": "broadcast_bytes: 1048576\nshuffle_bytes: -1\n",
}
# The same two plans with every process's DuckDB held to MEMORY_LIMIT
# (config memory_limit): what a join does when it does not fit one worker.
MEMORY_LIMIT = "512MB"


def run_memory(binary, data, args):
    """Peak RSS per worker and time of MEMORY_JOIN gathered vs shuffled,
    each on fresh worker processes (VmHWM is a process's peak), 2 workers."""
    out = {"query": MEMORY_JOIN, "plans": {}}
    work = pathlib.Path(tempfile.mkdtemp(prefix="icefloe-sidebyside-mem-"))
    try:
        with tpch.Cluster(binary, work, workers=2) as cl:
            tpch.load(cl, data, tables=["orders", "lineitem"], log=log)
        ref = tpch.duckdb_on_parquet(data, threads=os.cpu_count())
        want = tpch.run_duckdb(ref, MEMORY_JOIN)
        out["duckdb_s"] = timed(lambda: tpch.run_duckdb(ref, MEMORY_JOIN), args.reps)
        plans = [(name, cfg, False) for name, cfg in MEMORY_PLANS.items()]
        plans += [(f"{name}, memory_limit {MEMORY_LIMIT}", cfg, True) for name, cfg in MEMORY_PLANS.items()]
        for i, (name, cfg, limited) in enumerate(plans):
            path = work / f"plan{i}.yaml"
            path.write_text(cfg + (f"memory_limit: {MEMORY_LIMIT}\n" if limited else ""))
            # The limited plans hold the workers to the limit too: they
            # read the same file.
            opts = {"args": ("--config", str(path))} if limited else {"coordinator_args": ("--config", str(path))}
            with tpch.Cluster(binary, work, workers=2, pin=pins(2, args.pin), **opts) as cl:
                conn = tpcds.connect(cl.uri, args.timeout)
                try:
                    r = {}
                    try:
                        r["answer"] = tpcds.answer(tpch.run_icefloe(conn, MEMORY_JOIN), want, MEMORY_JOIN, ref)
                        r["seconds"] = timed(lambda: tpch.run_icefloe(conn, MEMORY_JOIN), args.reps)
                    except Exception as e:  # noqa: BLE001 - a failure under the limit is a result
                        r["answer"], r["seconds"] = "error: " + str(e).splitlines()[0][:200], float("nan")
                    cur = conn.cursor()
                    cur.execute("EXPLAIN " + MEMORY_JOIN)
                    rows = [tuple(str(v) for v in row) for row in cur.fetchall()]
                    r["strategy"] = next((row[-1] for row in rows if row[0] == "strategy"), "?")
                    cur.close()
                finally:
                    conn.close()
                r["peak_rss"] = cl.peak_rss()
            out["plans"][name] = r
            log(f"memory {name}: {r}")
        ref.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def memory_markdown(m):
    lines = ["", f"A join of `orders` and `lineitem` on the order key (TPC-H SF {m['sf']}, 2 pinned workers, "
             "fresh processes per plan; DuckDB "
             f"{m['duckdb_s']:.2f} s):", "",
             "| plan | time | answer | peak RSS worker 0 | peak RSS worker 1 | coordinator |", "|---|---|---|---|---|---|"]
    for name, r in m["plans"].items():
        rss = r["peak_rss"]
        lines.append(f"| {name}: {r['strategy']} | {r['seconds']:.2f} s | {r['answer']} | {rss['worker0'] / 2**20:.0f} MiB | "
                     f"{rss['worker1'] / 2**20:.0f} MiB | {rss['coordinator'] / 2**20:.0f} MiB |")
    return "\n".join(lines) + "\n"


def summary(res):
    """Totals over the queries every worker count answered right."""
    runs = res["workers"]
    ok = [q for q in res["duckdb"] if all(runs[w].get(q, {}).get("answer") in ("same", "same rows") for w in runs)]
    s = {"queries": len(res["duckdb"]), "answered_right": len(ok), "duckdb_total_s": sum(res["duckdb"][q] for q in ok)}
    for w, rows in runs.items():
        total = sum(rows[q]["seconds"] for q in ok)
        above = sorted(((rows[q]["seconds"] / res["duckdb"][q], q) for q in ok
                        if rows[q]["seconds"] > 3 * res["duckdb"][q]), reverse=True)
        s[w] = {"total_s": total, "ratio": total / s["duckdb_total_s"] if s["duckdb_total_s"] else None,
                "above_3x": [(q, round(r, 1)) for r, q in above],
                "wrong": [q for q, r in rows.items() if r.get("answer") not in ("same", "same rows")],
                "peak_rss_worker_max": max((v or 0) for r in rows.values()
                                           for k, v in r["peak_rss"].items() if k.startswith("worker"))}
        s[w]["moved_bytes"] = sum(rows[q].get("moved_bytes") or 0 for q in ok)
        s[w]["multi_worker"] = sum(1 for q in ok if (rows[q].get("moved_bytes") or 0) > 0)
        s[w]["worker_cpu_s"] = sum(v for q in ok for k, v in rows[q].get("cpu_s", {}).items() if k.startswith("worker"))
        s[w]["coordinator_cpu_s"] = sum(rows[q].get("cpu_s", {}).get("coordinator", 0) for q in ok)
    ws = sorted(runs, key=int)
    if len(ws) > 1 and s[ws[-1]]["total_s"]:
        s["speedup"] = s[ws[0]]["total_s"] / s[ws[-1]]["total_s"]
    if ws:
        s["projection"] = project(s[ws[-1]], int(ws[-1]))
    return s


# The network a projection assumes between workers: 10 Gbit/s, of which a
# transfer gets about 80%.
LINK_BYTES_S = 10e9 / 8 * 0.8


def project(m, measured_workers, counts=(4, 8, 16)):
    """Projects the total time to more workers from the run with
    measured_workers: the workers' CPU divides over the workers (the
    work of a perfect split), the bytes moved between workers grow as the
    share of rows that land on another worker, (n-1)/n, and go over the
    link in parallel, one link per worker; the coordinator's CPU does not
    divide. Each count's figure is the largest of the three — which one
    names the bottleneck. A model, not a measurement: skew, stragglers and
    the per-ticket overhead that grows with the fragments are not in it."""
    n0 = measured_workers
    cpu, coord = m["worker_cpu_s"], m["coordinator_cpu_s"]
    moved_per_share = m["moved_bytes"] / ((n0 - 1) / n0) if n0 > 1 else None
    out = {}
    for n in counts:
        parts = {"workers' CPU": cpu / n, "coordinator": coord}
        if moved_per_share is not None:
            parts["exchanges"] = moved_per_share * (n - 1) / n / (LINK_BYTES_S * n)
        bound = max(parts, key=parts.get)
        out[str(n)] = {"seconds": parts[bound], "bound": bound, "parts": parts}
    return out


def markdown(all_res):
    lines = [f"Measured {all_res['started']} on {all_res['cpus']} CPUs, load average "
             f"{all_res['loadavg_start'][0]:.1f} at the start and {all_res['loadavg_end'][0]:.1f} at the end; "
             f"median of {all_res['reps']} runs per query; workers pinned: {all_res['pin']}.", "",
             "| dataset | workers | icefloe total | DuckDB total | ratio | queries above 3× DuckDB | wrong | peak worker RSS "
             "| moved between workers | queries on >1 worker | workers' CPU | coordinator CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for res in all_res["datasets"]:
        s = res["summary"]
        for w in sorted(res["workers"], key=int):
            x = s[w]
            above = ", ".join(f"{q} ({r}×)" for q, r in x["above_3x"][:8]) or "none"
            if len(x["above_3x"]) > 8:
                above += f", … ({len(x['above_3x'])} in all)"
            lines.append(f"| {res['name']} | {w} | {x['total_s']:.2f} s | {s['duckdb_total_s']:.2f} s | "
                         f"{x['ratio']:.2f}× | {above} | {', '.join(x['wrong']) or 'none'} | "
                         f"{x['peak_rss_worker_max'] / 2**20:.0f} MiB | {x['moved_bytes'] / 2**20:.1f} MiB | "
                         f"{x['multi_worker']} of {s['answered_right']} | {x['worker_cpu_s']:.2f} s | {x['coordinator_cpu_s']:.2f} s |")
    lines.append("")
    for res in all_res["datasets"]:
        s = res["summary"]
        if "speedup" in s:
            ws = sorted(res["workers"], key=int)
            lines.append(f"- {res['name']}: {ws[-1]} pinned workers are {s['speedup']:.2f}× as fast as {ws[0]} "
                         f"(over the {s['answered_right']} of {s['queries']} queries every run answered right).")
    lines += ["", "Projected past the measured workers (project() in bench/sidebyside/bench.py: the workers' CPU "
              "divides, the bytes moved grow as (n-1)/n over one 10 Gbit/s link per worker, the coordinator's CPU "
              "stays; the largest of the three bounds the total):", "",
              "| dataset | measured on | 4 workers | 8 workers | 16 workers |", "|---|---|---|---|---|"]
    for res in all_res["datasets"]:
        s = res["summary"]
        if "projection" not in s:
            continue
        cells = [f"{p['seconds']:.2f} s ({p['bound']})" for p in s["projection"].values()]
        lines.append(f"| {res['name']} | {max(res['workers'], key=int)} workers | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_docs(md):
    doc = ROOT / "docs" / "benchmarks.md"
    text = doc.read_text()
    body = f"{BEGIN}\n{md}{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: body, text, flags=re.S)
    else:
        text += "\n## Side by side: TPC-H and TPC-DS, 1 and 2 pinned workers\n\n`make bench-sidebyside`.\n\n" + body + "\n"
    doc.write_text(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpch-sf", default="1,10", help="comma-separated TPC-H scale factors")
    ap.add_argument("--tpcds-sf", default="1", help="comma-separated TPC-DS scale factors")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin workers to cores")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--queries", default="", help="comma-separated query names to run (e.g. q09,q20); all when empty")
    ap.add_argument("--timeout", default="600s", help="icefloe's statement timeout per run of a query")
    ap.add_argument("--out", default=str(ROOT / "bench" / "sidebyside" / "out" / "results.json"))
    ap.add_argument("--memory-sf", default="", help="TPC-H scale factor of the gather-vs-shuffle memory run "
                    "(default: the largest --tpch-sf; 'none' skips it)")
    ap.add_argument("--no-docs", dest="docs", action="store_false", help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--coordinator-config", default="", help="a config file for the timed clusters' coordinator "
                    "(e.g. broadcast_bytes: 1 and shuffle_bytes: -1 to shuffle what can be)")
    args = ap.parse_args()
    # SIGTERM unwinds like Ctrl-C, so every cluster started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        print("sidebyside: ICEFLOE_BIN is not set", file=sys.stderr)
        return 2
    binary = str(pathlib.Path(binary).resolve())
    if args.pin and not shutil.which("taskset"):
        print("sidebyside: taskset (util-linux) is needed to pin workers; or pass --no-pin", file=sys.stderr)
        return 2
    all_res = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "cpus": os.cpu_count(),
               "reps": args.reps, "pin": args.pin, "loadavg_start": os.getloadavg(), "datasets": []}
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for ds in datasets(args):
        res = run_dataset(binary, ds, args)
        res["summary"] = summary(res)
        all_res["datasets"].append(res)
        out.write_text(json.dumps(all_res, indent=1, default=str))
    msf = args.memory_sf or max(filter(None, args.tpch_sf.split(",")), key=float, default="none")
    if msf != "none":
        tpchgen = str(pathlib.Path(sys.executable).parent / "tpchgen-cli")
        data = tpch.generate(tpchgen, msf, ROOT / "integration" / ".tpch-data" / f"sf{msf}")
        all_res["memory"] = run_memory(binary, data, args)
        all_res["memory"]["sf"] = msf
    all_res["loadavg_end"] = os.getloadavg()
    out.write_text(json.dumps(all_res, indent=1, default=str))
    md = markdown(all_res)
    if "memory" in all_res:
        md += memory_markdown(all_res["memory"])
    print(md)
    if args.docs:
        write_docs(md)
    wrong = [r["name"] for r in all_res["datasets"] for w in r["summary"] if isinstance(r["summary"][w], dict) and "wrong" in r["summary"][w]
             and r["summary"][w]["wrong"]]
    log(f"results in {out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
