"""Write benchmark (reported, not asserted).

1. bulk ingest of N generated rows through ADBC (adbc_ingest) into an
   unpartitioned table: MB/s of Arrow data;
2. INSERT … SELECT of those N rows into a day-partitioned table with the
   workers of `icefloe serve` (2 by default);
3. pyiceberg `append` of the same Arrow data into an identically
   partitioned table through the same SQLite catalog.

Run: ICEFLOE_BIN=bin/icefloe integration/.venv-interop/bin/python bench/writes.py [N]
(the interop suite's virtualenv has pyiceberg, pyarrow and ADBC; see
integration/interop/run).
"""

import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pyarrow.compute as pc
import pyarrow as pa


def start(binary, data_dir, workers):
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
                             "--workers", str(workers)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    ready, got = {}, threading.Event()

    def pump():
        for line in proc.stderr:
            i = line.find("ready\t{")
            if i >= 0 and not got.is_set():
                ready.update(json.loads(line[i + len("ready\t"):]))
                got.set()
        got.set()

    threading.Thread(target=pump, daemon=True).start()
    if not got.wait(120) or not ready:
        proc.kill()
        raise RuntimeError("icefloe serve did not start")
    return proc, ready["coordinator"]


def data(n):
    base = int(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1_000_000)
    span = 365 * 86_400_000_000
    r1 = pc.random(n, initializer=1)
    r2 = pc.random(n, initializer=2)
    r3 = pc.random(n, initializer=3)
    ts = pc.add(pc.cast(pc.floor(pc.multiply(r1, span)), pa.int64()), base)
    kinds = pa.array(["view", "click", "cart", "buy"])
    idx = pc.cast(pc.floor(pc.multiply(r2, 4)), pa.int64())
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "ts": ts.cast(pa.timestamp("us", tz="UTC")),
        "kind": pc.take(kinds, idx),
        "value": pc.multiply(r3, 100),
    })


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    workers = int(os.environ.get("WORKERS", "2"))
    binary = os.environ["ICEFLOE_BIN"]
    import adbc_driver_flightsql.dbapi as fsql
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import DayTransform

    tbl = data(n)
    mb = tbl.nbytes / 1e6
    with tempfile.TemporaryDirectory(prefix="icefloe-bench-") as d:
        proc, uri = start(binary, d, workers)
        try:
            conn = fsql.connect(uri, autocommit=True)
            cur = conn.cursor()
            cur.execute("CREATE TABLE src (id BIGINT, ts TIMESTAMPTZ, kind VARCHAR, value DOUBLE) "
                        "WITH ('write.target-file-size-bytes' = '33554432')")
            t0 = time.perf_counter()
            rdr = pa.RecordBatchReader.from_batches(tbl.schema, tbl.to_batches(max_chunksize=65536))
            rows = cur.adbc_ingest("src", rdr, mode="append")
            ingest = time.perf_counter() - t0
            assert rows == n, rows
            cur.execute("CREATE TABLE dst (id BIGINT, ts TIMESTAMPTZ, kind VARCHAR, value DOUBLE) "
                        "PARTITIONED BY (day(ts))")
            t0 = time.perf_counter()
            cur.execute("INSERT INTO dst SELECT * FROM src")
            insert = time.perf_counter() - t0
            cur.execute("SELECT count(*) FROM dst")
            assert cur.fetchone()[0] == n
            cur.close()
            conn.close()

            cat = SqlCatalog("local", uri=f"sqlite:///{d}/catalog.db", warehouse=f"file://{d}/warehouse")
            py = cat.create_table(("default", "py_dst"), schema=tbl.schema)
            with py.update_spec() as u:
                u.add_field("ts", DayTransform(), "ts_day")
            py = cat.load_table(("default", "py_dst"))
            t0 = time.perf_counter()
            py.append(tbl)
            pyappend = time.perf_counter() - t0
            assert len(cat.load_table(("default", "py_dst")).scan(selected_fields=("id",)).to_arrow()) == n
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    print(f"rows: {n}, Arrow size: {mb:.0f} MB, workers: {workers}, cores: {os.cpu_count()}")
    print(f"bulk ingest (ADBC adbc_ingest, unpartitioned): {ingest:.2f} s, {mb / ingest:.1f} MB/s, {n / ingest / 1e6:.2f} M rows/s")
    print(f"INSERT … SELECT into day(ts) table: {insert:.2f} s, {n / insert / 1e6:.2f} M rows/s")
    print(f"pyiceberg append into day(ts) table: {pyappend:.2f} s, {n / pyappend / 1e6:.2f} M rows/s")
    print(f"ratio INSERT … SELECT / pyiceberg append time: {insert / pyappend:.2f}")


if __name__ == "__main__":
    main()
