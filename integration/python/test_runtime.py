"""system.runtime tables and CALL system.cancel_query through Python ADBC."""

import subprocess
import sys
import time

import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pytest

# Aliases no other test uses, so the registry lookup finds this query only.
SLOW = ("SELECT count(*) AS n FROM orders rt_a, orders rt_b, (SELECT amount FROM orders LIMIT 20) rt_c "
        "WHERE rt_a.amount + rt_b.amount + rt_c.amount < 0")

# The slow query runs in a process of its own: the ADBC driver's threads
# then end with that process, not inside pytest's.
SLOW_CLIENT = """
import sys
import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
conn = fsql.connect(sys.argv[1])
try:
    with conn.cursor() as cur:
        cur.execute(sys.argv[2])
        cur.fetchall()
    print("finished", flush=True)
except adbc_driver_manager.Error as e:
    print(e.status_code.name, flush=True)
    print(str(e), flush=True)
"""


def rows(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_queries_table_lists_a_finished_query(conn):
    rows(conn, "SELECT count(*) FROM orders WHERE amount > 777")
    deadline = time.monotonic() + 20
    while True:
        got = rows(conn, "SELECT state, sql, endpoints_done = endpoints_total, rows FROM system.runtime.queries "
                         "WHERE sql LIKE '%amount > ?%' AND state = 'finished' ORDER BY started DESC LIMIT 1")
        if got or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert got == [("finished", "SELECT count(*) FROM orders WHERE amount > ?", True, 1)]


def test_workers_join_caches(conn):
    got = rows(conn, "SELECT w.health, c.cache FROM system.runtime.workers w "
                     "JOIN system.runtime.caches c ON c.node = w.address WHERE c.cache = 'metadata' "
                     "ORDER BY w.address")
    assert got == [("live", "metadata"), ("live", "metadata")]


def test_cancel_query_ends_the_read(uri, conn):
    slow = subprocess.Popen([sys.executable, "-c", SLOW_CLIENT, uri, SLOW],
                            stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        ids = []
        while not ids and time.monotonic() < deadline:
            ids = rows(conn, "SELECT query_id FROM system.runtime.queries "
                             "WHERE state = 'running' AND sql LIKE '%orders rt_a, orders rt_b%'")
            time.sleep(0.05)
        assert ids, "the slow query never showed as running"
        (qid,), = ids
        assert rows(conn, f"CALL system.cancel_query('{qid}')") == [(qid, "", "cancelled")]
        out, _ = slow.communicate(timeout=30)
        lines = out.splitlines()
        assert lines and lines[0] == "CANCELLED", out
        assert "query cancelled by an operator" in out, out
        with pytest.raises(adbc_driver_manager.Error, match="no running query has this id"):
            rows(conn, f"CALL system.cancel_query('{qid}')")
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
