"""Python ADBC (adbc-driver-flightsql) against icefloe, as users drive it."""

import concurrent.futures
import threading
import time
import uuid

import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as flight
import pytest

ORDERS = "SELECT id, customer_id, status FROM orders"


def sorted_table(t, key="id"):
    return t.sort_by([(key, "ascending")])


def reference_orders(conn):
    # ORDER BY makes the query one endpoint (a different plan): the
    # differential reference for the multi-endpoint scan.
    with conn.cursor() as cur:
        cur.execute(ORDERS + " ORDER BY id")
        return cur.fetch_arrow_table()


def test_connect_and_select_one(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT 1 AS one")
        assert cur.fetchall() == [(1,)]


def test_execute_multi_endpoint(conn):
    with conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(ORDERS)
        assert len(partitions) >= 2, "orders must plan into several endpoints"
        cur.execute(ORDERS)
        got = cur.fetch_arrow_table()
    assert got.num_rows == 50_000
    want = reference_orders(conn)
    assert sorted_table(got).equals(want)
    assert got.column("id").to_pylist() != [] and sorted(got.column("id").to_pylist()) == list(range(1, 50_001))


def test_partitions_from_thread_pool(conn, uri, server):
    with conn.cursor() as cur:
        partitions, schema = cur.adbc_execute_partitions(ORDERS)
    assert len(partitions) >= 2
    owners = set()
    for p in partitions:
        # A partition is a serialised FlightInfo with one endpoint.
        (ep,) = flight.FlightInfo.deserialize(p).endpoints
        assert ep.locations, "every worker endpoint names its worker"
        owners.add(ep.locations[0].uri.decode())
    assert len(owners) >= 2, f"endpoints must spread over the workers: {owners}"
    assert owners <= set(server.workers), (owners, server.workers)

    def read(p):
        # One connection per thread: partitions are plain bytes any
        # connection (or process) can read.
        with fsql.connect(uri, autocommit=True) as c, c.cursor() as cur:
            cur.adbc_read_partition(p)
            return cur.fetch_arrow_table()

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(read, partitions))
    for t in parts:
        assert t.schema.equals(schema)
    whole = pa.concat_tables(parts)
    assert whole.num_rows == 50_000
    assert sorted_table(whole).equals(reference_orders(conn))


def test_get_objects_every_depth(conn):
    objs = conn.adbc_get_objects(depth="catalogs").read_all().to_pylist()
    assert "local" in [o["catalog_name"] for o in objs]

    objs = conn.adbc_get_objects(depth="db_schemas", catalog_filter="local").read_all().to_pylist()
    (local,) = objs
    assert "default" in [s["db_schema_name"] for s in local["catalog_db_schemas"]]

    objs = conn.adbc_get_objects(depth="tables", catalog_filter="local", db_schema_filter="default").read_all().to_pylist()
    tables = {t["table_name"]: t for t in objs[0]["catalog_db_schemas"][0]["db_schema_tables"]}
    assert {"orders", "customers", "events"} <= set(tables)
    assert tables["orders"]["table_type"] == "TABLE"

    objs = conn.adbc_get_objects(depth="all", catalog_filter="local", db_schema_filter="default",
                                 table_name_filter="orders").read_all().to_pylist()
    (orders,) = objs[0]["catalog_db_schemas"][0]["db_schema_tables"]
    cols = [(c["column_name"], c["ordinal_position"]) for c in orders["table_columns"]]
    assert cols == [("id", 1), ("customer_id", 2), ("status", 3), ("amount", 4),
                    ("ordered_at", 5), ("ordered_on", 6)]

    # columns depth equals all.
    objs2 = conn.adbc_get_objects(depth="columns", catalog_filter="local", db_schema_filter="default",
                                  table_name_filter="orders").read_all().to_pylist()
    assert objs2 == objs


def test_get_table_schema(conn):
    sc = conn.adbc_get_table_schema("orders", catalog_filter="local", db_schema_filter="default")
    assert sc.names == ["id", "customer_id", "status", "amount", "ordered_at", "ordered_on"]
    assert sc.field("id").type == pa.int64() and not sc.field("id").nullable
    assert sc.field("amount").type == pa.decimal128(12, 2)
    assert sc.field("ordered_at").type == pa.timestamp("us", tz="UTC")
    assert sc.field("ordered_on").type == pa.date32()


def test_query_parameters(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) AS n FROM orders WHERE customer_id = 7 AND status = 'shipped'")
        want = cur.fetchall()
        cur.execute("SELECT count(*) AS n FROM orders WHERE customer_id = ? AND status = ?", (7, "shipped"))
        assert cur.fetchall() == want
        # The same statement again with other values.
        cur.execute("SELECT count(*) AS n FROM orders WHERE customer_id = ? AND status = ?", (8, "shipped"))
        other = cur.fetchall()
        cur.execute("SELECT count(*) AS n FROM orders WHERE customer_id = 8 AND status = 'shipped'")
        assert cur.fetchall() == other
        # Values that would break naive splicing stay values.
        cur.execute("SELECT ? AS s, ? AS n, ? AS b", ("it's; DROP TABLE orders --", 2.5, None))
        assert cur.fetchall() == [("it's; DROP TABLE orders --", 2.5, None)]
        cur.execute("SELECT id FROM orders WHERE ordered_on = ? ORDER BY id LIMIT 3",
                    (pa.scalar(__import__("datetime").date(2024, 1, 2)),))
        rows = cur.fetchall()
        assert len(rows) == 3


def test_executemany_insert(conn):
    name = "py_many_" + uuid.uuid4().hex[:8]
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id BIGINT NOT NULL, label VARCHAR, price DECIMAL(10,2))")
        cur.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)",
                        [(1, "one", 1.5), (2, "two", None), (3, None, 3.25)])
        cur.execute(f"INSERT INTO {name} (id, label) VALUES (?, ?)", (4, "four"))
        cur.execute(f"SELECT id, label, CAST(price AS DOUBLE) AS price FROM {name} ORDER BY id")
        assert cur.fetchall() == [(1, "one", 1.5), (2, "two", None), (3, None, 3.25), (4, "four", None)]
        with pytest.raises(fsql.Error) as e:
            cur.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", [(None, "x", 1)])
        assert "NOT NULL" in str(e.value)
        cur.execute(f"DROP TABLE {name}")


def test_errors_carry_our_message(conn):
    with conn.cursor() as cur:
        with pytest.raises(fsql.ProgrammingError) as e:
            cur.execute("SELECT * FROM no_such_table_xyz")
        assert "no_such_table_xyz" in str(e.value)
        assert "does not exist" in str(e.value)
        with pytest.raises(fsql.Error) as e:
            cur.execute("SELEC 1")
        assert "syntax error" in str(e.value).lower()
        with pytest.raises(fsql.Error) as e:
            cur.execute("SELECT * FROM read_csv('/etc/passwd')")
        assert "read_csv" in str(e.value)


def test_session_options(uri):
    # catalog/schema session options set the defaults for unqualified names.
    # The session lives in a cookie: the driver keeps it with its cookie
    # middleware.
    with fsql.connect(uri, autocommit=True, db_kwargs={
            "adbc.flight.sql.rpc.with_cookie_middleware": "true"}) as c, c.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS local.py_sess")
        c.adbc_connection.set_options(**{"adbc.flight.sql.session.option.schema": "py_sess"})
        cur.execute("CREATE TABLE IF NOT EXISTS local.py_sess.only_here (x INTEGER)")
        cur.execute("INSERT INTO only_here VALUES (42)")
        cur.execute("SELECT x FROM only_here")
        assert cur.fetchall() == [(42,)]
        opts = c.adbc_connection.get_option("adbc.flight.sql.session.options")
        assert "py_sess" in opts and "local" in opts


# A cross join of 50k × 50k with a hash per pair: minutes of work.
CROSS_JOIN = "SELECT sum(hash(a.id * b.customer_id)) AS h FROM orders a, orders b"


def _count(server, needle, after):
    return sum(needle in line for line in server._log[after:])


def _long_query_cancel(c, server, needle, q=CROSS_JOIN, cancelled=1):
    mark = server.log_mark()
    cur = c.cursor()
    outcome = {}

    def run():
        try:
            cur.execute(q)
            outcome["table"] = cur.fetch_arrow_table()
        except Exception as e:  # noqa: BLE001 - the cancellation is the point
            outcome["error"] = e

    cpu0 = server.cpu_seconds()
    t = threading.Thread(target=run)
    t.start()
    # Wait until the server is busy with the query (a worker's DuckDB is
    # burning CPU), so the cancel hits a running fragment.
    deadline = time.monotonic() + 90
    while server.cpu_seconds() - cpu0 < 1.5:
        assert time.monotonic() < deadline, "the long query never got going"
        assert t.is_alive(), f"the long query ended early: {outcome}"
        time.sleep(0.1)
    assert t.is_alive(), f"the long query ended early: {outcome}"
    started = time.monotonic()
    cur.adbc_cancel()
    t.join(30)
    assert not t.is_alive(), "the client call did not end after adbc_cancel"
    assert "error" in outcome, outcome
    assert isinstance(outcome["error"], adbc_driver_manager.Error)
    assert "cancel" in str(outcome["error"]).lower()
    for n in needle:
        assert server.wait_log(n, after=mark, timeout=20), f"no {n!r} in the server log:\n{server.log()[-4000:]}"
    # Every fragment that was running logs its cancelled DoGet.
    deadline = time.monotonic() + 20
    while _count(server, "worker: DoGet cancelled", mark) < cancelled and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _count(server, "worker: DoGet cancelled", mark) >= cancelled, server.log()[-4000:]
    assert time.monotonic() - started < 25
    # And the work really stopped: the server goes (nearly) idle.
    time.sleep(0.5)
    c1 = server.cpu_seconds()
    time.sleep(2.0)
    busy = server.cpu_seconds() - c1
    assert busy < 0.5, f"the server still used {busy:.2f}s of CPU in 2s after the cancel"
    cur.close()


def test_cancel_stops_the_workers(conn, server):
    _long_query_cancel(conn, server, ["worker: DoGet cancelled"])
    # The cluster still answers afterwards.
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM orders")
        assert cur.fetchall() == [(50_000,)]


def test_cancel_stops_the_coordinator_proxy(proxy_conn, server):
    _long_query_cancel(proxy_conn, server, ["flightsql: proxy stream cancelled", "worker: DoGet cancelled"])


def _heavy(depth):
    # At most 4 deep: the planner refuses repeat() nested deeper (each
    # level's value-size guard copies its argument).
    e = "status || id"
    for _ in range(depth):
        e = f"md5(repeat({e}, 800))"
    return e


def _plan(cur, q):
    """The strategy, endpoints and child fragments EXPLAIN gives for q."""
    cur.execute("EXPLAIN " + q)
    rows = cur.fetchall()
    strategy = next((v for k, v in rows if k == "strategy"), "")
    eps = [v for k, v in rows if k.startswith("endpoint ")]
    children = sum(int(v.rsplit(", ", 1)[1].split()[0]) for v in eps)
    return strategy, len(eps), children


def test_cancel_stops_two_phase_partials(conn, server):
    # Partial aggregates that each compute for seconds: adbc_cancel before
    # any batch stops the final fragment and every partial it pulls.
    q = f"SELECT status, count(*) AS n FROM orders WHERE {_heavy(4)} LIKE 'zz%' GROUP BY status"
    with conn.cursor() as cur:
        strategy, endpoints, children = _plan(cur, q)
    assert strategy.startswith("two-phase") and endpoints == 1 and children >= 2, (strategy, endpoints, children)
    _long_query_cancel(conn, server, ["worker: DoGet cancelled"], q=q, cancelled=1 + children)


def test_early_close_stops_every_endpoint(conn, server):
    # 100 million joined rows over several endpoints: read one batch, close
    # the reader, and every worker stream stops (their first batches come
    # as DuckDB computes them, not after the whole result).
    q = "SELECT a.id, b.id AS c, md5(a.status || b.id) AS h FROM orders a, customers b"
    with conn.cursor() as cur:
        strategy, endpoints, _ = _plan(cur, q)
        assert strategy.startswith("scatter") and endpoints >= 2, (strategy, endpoints)
        # What a tenth of the whole join costs the server, measured here.
        cpu0 = server.cpu_seconds()
        cur.execute("SELECT count(*), max(md5(a.status || b.id)) FROM orders a, customers b WHERE a.id <= 5000")
        assert cur.fetchall()[0][0] == 5000 * 2000
        tenth = server.cpu_seconds() - cpu0
        mark = server.log_mark()
        cpu0 = server.cpu_seconds()
        cur.execute(q)
        rdr = cur.fetch_record_batch()
        assert rdr.read_next_batch().num_rows > 0
        rdr.close()
    deadline = time.monotonic() + 20
    while _count(server, "worker: DoGet cancelled", mark) < endpoints and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _count(server, "worker: DoGet cancelled", mark) >= endpoints, server.log()[-4000:]
    time.sleep(0.5)
    c1 = server.cpu_seconds()
    time.sleep(2.0)
    assert server.cpu_seconds() - c1 < 0.5, "the server still works after the close"
    used = server.cpu_seconds() - cpu0
    assert used < tenth, f"one batch cost {used:.2f} CPU s, a tenth of the join {tenth:.2f}"


def test_single_endpoint_mode(proxy_conn, conn):
    with proxy_conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(ORDERS)
        assert len(partitions) == 1
        (ep,) = flight.FlightInfo.deserialize(partitions[0]).endpoints
        assert ep.locations == []
        cur.execute(ORDERS)
        got = cur.fetch_arrow_table()
    assert sorted_table(got).equals(reference_orders(conn))
