"""Writes the TPC-H sections of docs/benchmarks.md and the chart from a
bench.py results file.

The sections sit between `<!-- tpch:begin -->` and `<!-- tpch:end -->`
(appended at the end of the file the first time); nothing else in the file
is touched. The hand-written analysis in bench/tpch/notes.md is copied in
under the tables. The chart (per-query medians, log scale) is
docs/benchmarks-tpch.png.

Run: PY report.py RESULTS.json [--doc docs/benchmarks.md] [--before BEFORE.json]
"""

import argparse
import json
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BEGIN, END = "<!-- tpch:begin -->", "<!-- tpch:end -->"
PEERS = [("icefloe", "icefloe (Flight SQL, 2 workers)"), ("duckdb", "DuckDB on Parquet"),
         ("pyiceberg", "pyiceberg + DuckDB"), ("spark", "Spark local[2]")]


def med(q, k):
    v = q.get(k) or {}
    return v.get("median")


def fmt_s(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return f"{a / b:.2f}×"


def chart(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(res["queries"])
    present = [(k, label) for k, label in PEERS if any(med(res["queries"][n], k) for n in names)]
    width = 0.8 / max(1, len(present))
    fig, ax = plt.subplots(figsize=(14, 5))
    for i, (k, label) in enumerate(present):
        xs = [j + (i - (len(present) - 1) / 2) * width for j in range(len(names))]
        ys = [med(res["queries"][n], k) or 0 for n in names]
        ax.bar(xs, ys, width, label=label)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([n.upper() for n in names])
    ax.set_yscale("log")
    ax.set_ylabel("seconds, median of %d (log scale)" % res["reps"])
    ax.set_title(f"TPC-H SF{res['sf']}: per-query wall time on {res['cpus']} cores")
    ax.legend(loc="upper center", ncol=len(present), bbox_to_anchor=(0.5, -0.08))
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def section(res, chart_rel, before=None):
    qs = res["queries"]
    L = []
    L.append("## TPC-H")
    L.append("")
    L.append(f"Scale factor {res['sf']} ({res['rows']['lineitem']:,} lineitem rows, "
             f"{sum(res['parquet_bytes'].values()) / 1e6:.0f} MB of Parquet from `tpchgen-cli`), "
             f"measured {res['started']} on {res['cpus']} cores shared with other work "
             f"(absolute times are rough; the ratios are taken in the same run). Regenerate with "
             f"`make bench-tpch SF={res['sf']}` (`bench/tpch/`; `make bench` runs it too).")
    if len(res.get("runs", [])) > 1:
        L.append("")
        L.append("These figures combine runs started " + ", ".join(res["runs"]) + " (later runs add the "
                 "parts an earlier one lacked or replace them: see `report.py`'s merge).")
    L.append("")
    L.append("- **icefloe**: `icefloe serve --workers 2`; tables loaded through icefloe "
             "(CREATE TABLE, then ADBC bulk ingest), `lineitem` and `orders` `PARTITIONED BY` "
             "year of their date; the 22 queries (`bench/tpch/queries/`) through Python ADBC, which "
             "pulls all endpoints in parallel. Every answer is checked against DuckDB on the Parquet "
             "files (ordered rows, floats to 1e-9 relative, decimals exact) before it is timed. The same "
             "check runs at SF0.1 in `make test` (`integration/tpch/run`: the 22 answers plus all of "
             "`lineitem` through both endpoint modes; no timing asserted).")
    L.append("- **DuckDB on Parquet**: DuckDB 1.5.6 (Python), 2 threads, views over `read_parquet` of "
             "the generated files: the ceiling on this machine.")
    L.append("- **pyiceberg + DuckDB**: pyiceberg 0.10 `scan().to_arrow()` of each table the query "
             "names (the same Iceberg tables, through the same SQLite catalog), registered in DuckDB, "
             "then the query: what a Python user does today.")
    L.append("- **Spark**: pyspark 3.5.7, `local[2]`, 4 GB driver, Iceberg 1.10.1 runtime, "
             "`JdbcCatalog` over icefloe's SQLite catalog file; session start-up not counted"
             + (f" ({res['notes']['spark_startup']:.0f} s)." if res["notes"].get("spark_startup") else "."))
    if res["notes"].get("spark"):
        L.append(f"  Spark did not complete: {res['notes']['spark']}")
    L.append("")
    L.append(f"Median of {res['reps']} runs, seconds; ratio = icefloe time / peer time (below 1 means "
             "icefloe is faster).")
    L.append("")
    L.append("| query | icefloe | DuckDB | pyiceberg+DuckDB | Spark | vs DuckDB | vs pyiceberg | vs Spark | answer |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    tot = {k: 0.0 for k, _ in PEERS}
    complete = {k: True for k, _ in PEERS}
    for n, q in qs.items():
        m = {k: med(q, k) for k, _ in PEERS}
        for k in tot:
            if m[k] is None:
                complete[k] = False
            else:
                tot[k] += m[k]
        ice = q.get("icefloe", {})
        ans = "error" if "error" in ice else ("right" if ice.get("checked") else "WRONG")
        L.append(f"| {n.upper()} | {fmt_s(m['icefloe'])} | {fmt_s(m['duckdb'])} | {fmt_s(m['pyiceberg'])} | "
                 f"{fmt_s(m['spark'])} | {ratio(m['icefloe'], m['duckdb'])} | {ratio(m['icefloe'], m['pyiceberg'])} | "
                 f"{ratio(m['icefloe'], m['spark'])} | {ans} |")
    T = {k: (tot[k] if complete[k] else None) for k in tot}
    L.append(f"| **total** | **{fmt_s(T['icefloe'])}** | {fmt_s(T['duckdb'])} | {fmt_s(T['pyiceberg'])} | "
             f"{fmt_s(T['spark'])} | **{ratio(T['icefloe'], T['duckdb'])}** | **{ratio(T['icefloe'], T['pyiceberg'])}** | "
             f"**{ratio(T['icefloe'], T['spark'])}** | {len(qs) - len(res.get('wrong', []))}/{len(qs)} right |")
    L.append("")
    L.append(f"![per-query times]({chart_rel})")
    L.append("")
    L.append("Aims (figures, not assertions):")
    L.append("")
    wrong = res.get("wrong", [])
    L.append(f"- every answer right: {'yes' if not wrong else 'NO: ' + ', '.join(wrong)};")
    if T["icefloe"] and T["duckdb"]:
        r = T["icefloe"] / T["duckdb"]
        L.append(f"- total within 2× of DuckDB on Parquet: {'yes' if r <= 2 else 'no'} ({r:.1f}×"
                 + ("" if r <= 2 else f", {r / 2:.1f}× over the aim") + ");")
    for k, label in (("pyiceberg", "pyiceberg + DuckDB"), ("spark", "Spark")):
        if T["icefloe"] and T[k]:
            r = T["icefloe"] / T[k]
            L.append(f"- faster than {label}: {'yes' if r < 1 else 'no'} ({r:.2f}× its time);")
    L.append("")
    if res.get("load"):
        L.append("Loading (CREATE TABLE + ADBC bulk ingest per table, one run): " + ", ".join(
            f"{t} {s:.1f} s" for t, s in res["load"].items()) + ".")
        L.append("")
    w = res.get("writes")
    if w:
        mb = w["bytes"] / 1e6
        L.append("### TPC-H writes")
        L.append("")
        L.append(f"`lineitem` ({w['rows']:,} rows, {mb:.0f} MB of Arrow), each into a table partitioned by "
                 "`year(l_shipdate)`, one run each:")
        L.append("")
        L.append("| write | time | rows/s | MB/s | vs pyiceberg append |")
        L.append("|---|---|---|---|---|")
        for key, label in (("ingest", "ADBC bulk ingest (`adbc_ingest`, 64 Ki-row batches)"),
                           ("ctas", "`CREATE TABLE … AS SELECT * FROM lineitem` (2 workers)"),
                           ("pyiceberg_append", "pyiceberg `create_table` + `append` of the same Arrow table")):
            s = w[key]
            L.append(f"| {label} | {s:.2f} s | {w['rows'] / s / 1e6:.2f} M | {mb / s:.0f} | "
                     f"{ratio(s, w['pyiceberg_append'])} |")
        L.append("")
    sc = res.get("scan")
    if sc:
        duck = next(x for x in sc if x["workers"] is None)
        drate = duck["rows"] / duck["median"]
        L.append("## Scan and transfer")
        L.append("")
        L.append(f"`SELECT * FROM lineitem` (SF{res['sf']}, {duck['rows']:,} rows, "
                 f"{duck['bytes'] / 1e6:.0f} MB as Arrow) pulled by Python ADBC into one Arrow table, "
                 f"median of {res['reps']}; MB are the Arrow table's bytes. *Parallel* lets ADBC pull every "
                 "endpoint at once from the workers; *single endpoint* is the proxied mode "
                 "(`x-icefloe-single-endpoint: true`: one endpoint, the coordinator relays the workers' "
                 "streams); DuckDB reads the Parquet file into Arrow in-process (2 threads).")
        L.append("")
        L.append("| how | workers | endpoints | time | M rows/s | MB/s | vs DuckDB |")
        L.append("|---|---|---|---|---|---|---|")
        for x in sc:
            if "error" in x:
                L.append(f"| {x['how']} | {x['workers']} | – | failed: {x['error'][:120]} | – | – | – |")
                continue
            r = x["rows"] / x["median"]
            L.append(f"| {x['how']} | {x['workers'] or '–'} | {x.get('endpoints', '–')} | {x['median']:.2f} s | "
                     f"{r / 1e6:.2f} | {x['bytes'] / x['median'] / 1e6:.0f} | {r / drate:.0%} |")
        L.append("")
        par = [x for x in sc if x["how"].startswith("parallel") and "error" not in x]
        one = [x for x in sc if x["how"].startswith("single") and "error" not in x]
        if par:
            best = min(par, key=lambda x: x["median"])
            L.append(f"Aims: parallel pull ≥ 50% of DuckDB's Parquet-to-Arrow rate: best "
                     f"{best['rows'] / best['median'] / drate:.0%} ({best['workers']} workers). Parallel pull "
                     "faster than one endpoint (speed-up = single-endpoint time / parallel time): " + ", ".join(
                         f"{p['workers']} worker{'s' if p['workers'] > 1 else ''} {o['median'] / p['median']:.2f}×"
                         for p, o in zip(par, one)) + ".")
            L.append("")
    notes = HERE / "notes.md"
    if notes.exists():
        L.append(notes.read_text().strip())
        L.append("")
    if before:
        L.append(before)
        L.append("")
    return "\n".join(L).rstrip() + "\n"


def merge(runs):
    """One results dict from several runs of bench.py on the same SF (e.g.
    the peers of a later run added to the queries of an earlier one): later
    runs add per-query entries and top-level parts the earlier ones lack or
    replace them."""
    res = runs[0]
    res["runs"] = [r.get("started") for r in runs]
    for r in runs[1:]:
        for n, q in r.get("queries", {}).items():
            res["queries"].setdefault(n, {}).update(q)
        for k, v in r.items():
            if k in ("queries", "wrong"):
                continue
            if k == "notes":
                res["notes"].update(v)
            elif k in ("scan", "writes", "profile", "load") or k not in res:
                res[k] = v
        res["wrong"] = sorted(set(res.get("wrong", [])) | set(r.get("wrong", [])))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", help="results files; later ones add to earlier ones")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "benchmarks.md"))
    a = ap.parse_args()
    res = merge([json.loads(pathlib.Path(p).read_text()) for p in a.results])
    doc = pathlib.Path(a.doc)
    png = doc.parent / "benchmarks-tpch.png"
    chart(res, png)
    body = f"{BEGIN}\n{section(res, png.name)}{END}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: body, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    doc.write_text(text)
    print(f"wrote {doc} and {png}")


if __name__ == "__main__":
    main()
