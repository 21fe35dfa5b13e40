"""Incremental execution (adbc.statement.exec.incremental) through Python
ADBC: a CREATE TABLE … AS that runs for seconds reports its progress
(adbc.statement.exec.progress) while adbc_execute_partitions polls it."""

import os
import tempfile
import threading
import time

import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pytest

from conftest import _start, _stop

INCREMENTAL = adbc_driver_manager.StatementOptions.INCREMENTAL.value
PROGRESS = adbc_driver_manager.StatementOptions.PROGRESS.value

# Each row costs a worker a hash over some 20 kB; with one fragment at a
# time per worker, the table's four groups are read in two rounds of
# seconds each, longer than the driver's first polls.
COST = "md5(repeat(CAST(k AS VARCHAR), 4000))"
FILES, ROWS = 8, 24000


@pytest.fixture(scope="module")
def slow_server():
    with tempfile.TemporaryDirectory(prefix="icefloe-py-progress-") as d:
        cfg = os.path.join(d, "icefloe.yaml")
        with open(cfg, "w") as f:
            f.write("limits:\n  max_running_fragments: 1\n")
        srv = _start(os.path.join(d, "data"), extra=("--config", cfg))
        try:
            yield srv
        finally:
            _stop(srv)


def test_incremental_write_reports_progress(slow_server):
    conn = fsql.connect(slow_server.coordinator, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE pwork (k BIGINT)")
            for i in range(FILES):
                cur.execute(f"INSERT INTO pwork SELECT range + {i * ROWS} FROM range({ROWS})")
        cur = conn.cursor()
        cur.adbc_statement.set_options(**{INCREMENTAL: "true"})
        seen, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                p = cur.adbc_statement.get_option_float(PROGRESS)
                if not seen or seen[-1] != p:
                    seen.append(p)
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        sql = f"CREATE TABLE phashed AS SELECT k, {COST} AS h FROM pwork"
        counts, final = [], None
        try:
            while True:
                parts, _ = cur.adbc_execute_partitions(sql)
                if not parts:
                    break
                counts.append(cur.rowcount)
                final = cur.adbc_statement.get_option_float(PROGRESS)
        finally:
            stop.set()
            sampler.join()
        cur.close()
        assert counts == [FILES * ROWS], counts
        assert final == 1.0, (final, seen)
        assert seen == sorted(seen) and any(0 < p < 1 for p in seen), seen
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM phashed")
            assert cur.fetchone()[0] == FILES * ROWS
    finally:
        conn.close()
