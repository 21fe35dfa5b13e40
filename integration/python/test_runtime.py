"""system.runtime tables and CALL system.cancel_query through Python ADBC."""

import threading
import time

import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pytest

SLOW = ("SELECT count(*) AS n FROM orders a, orders b, (SELECT amount FROM orders LIMIT 20) c "
        "WHERE a.amount + b.amount + c.amount < 0")


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
                     "JOIN system.runtime.caches c ON c.node = w.address ORDER BY w.address")
    assert got == [("live", "metadata"), ("live", "metadata")]


def test_cancel_query_ends_the_read(uri, conn):
    slow = fsql.connect(uri)
    failed = []

    def run():
        try:
            rows(slow, SLOW)
        except adbc_driver_manager.Error as e:
            failed.append(e)

    t = threading.Thread(target=run)
    t.start()
    try:
        deadline = time.monotonic() + 30
        ids = []
        while not ids and time.monotonic() < deadline:
            ids = rows(conn, "SELECT query_id FROM system.runtime.queries "
                             "WHERE state = 'running' AND sql LIKE '%orders a, orders b%'")
            time.sleep(0.05)
        assert ids, "the slow query never showed as running"
        (qid,), = ids
        assert rows(conn, f"CALL system.cancel_query('{qid}')") == [(qid, "", "cancelled")]
        t.join(30)
        assert not t.is_alive(), "the cancelled query still runs"
        assert failed and "query cancelled by an operator" in str(failed[0]), failed
        assert failed[0].status_code == adbc_driver_manager.AdbcStatusCode.CANCELLED, failed[0].status_code
        with pytest.raises(adbc_driver_manager.Error, match="no running query has this id"):
            rows(conn, f"CALL system.cancel_query('{qid}')")
    finally:
        t.join(30)
        slow.close()
