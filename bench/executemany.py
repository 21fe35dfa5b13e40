"""Batched parameter inserts (reported, not asserted).

N rows of (id BIGINT, label VARCHAR, price DECIMAL(10,2), made TIMESTAMP)
into an empty table, three ways through Python ADBC against one
`icefloe serve` in the same run:

1. `executemany` of a prepared `INSERT … VALUES (?, ?, ?, ?)` (one DoPut of
   all parameter rows: one commit);
2. the same, 100 rows per call (100 commits per 10,000 rows);
3. `adbc_ingest` of the same rows as one Arrow table (the reference).

Run: ICEFLOE_BIN=bin/icefloe integration/.venv/bin/python bench/executemany.py [N]
"""

import datetime
import decimal
import os
import signal
import sys
import tempfile
import time

import adbc_driver_flightsql.dbapi as fsql
import pyarrow as pa

from writes import start

DDL = "(id BIGINT NOT NULL, label VARCHAR, price DECIMAL(10,2), made TIMESTAMP)"


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    t0 = datetime.datetime(2024, 1, 1)
    rows = [(i, f"label {i}", decimal.Decimal(i) / 100, t0 + datetime.timedelta(seconds=i)) for i in range(n)]
    table = pa.table({
        "id": pa.array([r[0] for r in rows], pa.int64()),
        "label": pa.array([r[1] for r in rows]),
        "price": pa.array([r[2] for r in rows], pa.decimal128(10, 2)),
        "made": pa.array([r[3] for r in rows], pa.timestamp("us")),
    })
    with tempfile.TemporaryDirectory() as d:
        proc, uri = start(os.environ["ICEFLOE_BIN"], d, 2)
        try:
            with fsql.connect(uri, autocommit=True) as c, c.cursor() as cur:
                out = {}
                for name, run in [
                    ("executemany, one call", lambda t: cur.executemany(f"INSERT INTO {t} VALUES (?, ?, ?, ?)", rows)),
                    ("executemany, 100 rows per call", lambda t: [
                        cur.executemany(f"INSERT INTO {t} VALUES (?, ?, ?, ?)", rows[i:i + 100])
                        for i in range(0, n, 100)]),
                    ("adbc_ingest", lambda t: cur.adbc_ingest(t, table, mode="append")),
                ]:
                    t = f"bench_{len(out)}"
                    cur.execute(f"CREATE TABLE {t} {DDL}")
                    start_t = time.monotonic()
                    run(t)
                    took = time.monotonic() - start_t
                    cur.execute(f"SELECT count(*) FROM {t}")
                    assert cur.fetchall() == [(n,)]
                    out[name] = took
                ref = out["adbc_ingest"]
                print(f"| way ({n} rows) | time | rows/s | vs adbc_ingest |")
                print("|---|---|---|---|")
                for name, took in out.items():
                    print(f"| {name} | {took:.2f} s | {n / took:,.0f} | {took / ref:.2f}× |")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)


if __name__ == "__main__":
    main()
