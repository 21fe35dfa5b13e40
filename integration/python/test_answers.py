"""Answers the coordinator gives itself, through Python ADBC: statements
whose answer needs no table data (SELECT 1, SHOW, count(*) from the
manifests, result-cache hits) come back as one endpoint without locations,
which the driver reads from the coordinator over the connection it has,
and no worker is called."""

import adbc_driver_flightsql.dbapi as fsql
import pyarrow.flight as flight

TICKETS = "icefloe_worker_tickets_total"
DASHBOARD = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status"


def rows(conn, q):
    with conn.cursor() as cur:
        cur.execute(q)
        return cur.fetchall()


def endpoints(conn, q):
    with conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(q)
    return [ep for p in partitions for ep in flight.FlightInfo.deserialize(p).endpoints]


def test_local_answers_make_no_worker_call(conn, server):
    want = rows(conn, "SELECT count(*) FROM (SELECT id FROM orders)")
    assert want == [(50_000,)]
    # The result cache keeps the dashboard query's result once read.
    first = rows(conn, DASHBOARD)
    before = server.metric(TICKETS)
    assert before > 0, "reading orders made no worker call: the metric does not count"
    for q, expect in [
        ("SELECT 1 AS one", [(1,)]),
        ("SELECT count(*) FROM orders", want),
        ("SHOW TABLES", None),
        ("EXPLAIN SELECT 1", None),
        (DASHBOARD, first),
    ]:
        eps = endpoints(conn, q)
        assert len(eps) == 1 and not eps[0].locations, (q, eps)
        got = rows(conn, q)
        assert got, q
        if expect is not None:
            assert got == expect, (q, got, expect)
    assert server.metric(TICKETS) == before, "a local answer called a worker"


def test_result_cache_off_per_session(uri, server):
    # The setting lives in the session's cookie: the driver keeps it with
    # its cookie middleware. Also as a session option.
    with fsql.connect(uri, autocommit=True, db_kwargs={
            "adbc.flight.sql.rpc.with_cookie_middleware": "true"}) as conn:
        first = rows(conn, DASHBOARD)
        rows(conn, "SET result_cache = off")
        before = server.metric(TICKETS)
        assert rows(conn, DASHBOARD) == first
        assert server.metric(TICKETS) > before, "with the result cache off the query is read again"
        explain = dict(rows(conn, "EXPLAIN " + DASHBOARD))
        assert explain["result cache"].startswith("off"), explain
        opts = conn.adbc_connection.get_option("adbc.flight.sql.session.options")
        assert "icefloe.result_cache" in opts, opts
        conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.icefloe.result_cache": "on"})
        explain = dict(rows(conn, "EXPLAIN " + DASHBOARD))
        assert explain["result cache"].startswith("hit"), explain
