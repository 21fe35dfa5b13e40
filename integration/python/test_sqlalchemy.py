"""SQLAlchemy (and so Superset) through flightsql-dbapi.

flightsql-dbapi reads only endpoints[0] of a FlightInfo, on the connection
it has: it works through the coordinator's single-endpoint mode, which the
URL selects (every query parameter it does not know becomes a call header).
"""

import flightsql
import flightsql.sqlalchemy  # noqa: F401 - registers datafusion+flightsql
import pyarrow as pa
import pytest
import sqlalchemy as sa


@pytest.fixture()
def engine(server):
    url = f"datafusion+flightsql://{server.host_port}?insecure=true&x-icefloe-single-endpoint=true"
    eng = sa.create_engine(url)
    try:
        yield eng
    finally:
        eng.dispose()


def test_select_one(engine):
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT 1")).scalar() == 1


def test_reflection(engine):
    insp = sa.inspect(engine)
    assert "default" in insp.get_schema_names()
    assert {"orders", "customers", "events"} <= set(insp.get_table_names())
    cols = {c["name"]: c for c in insp.get_columns("orders")}
    assert list(cols) == ["id", "customer_id", "status", "amount", "ordered_at", "ordered_on"]
    orders = sa.Table("orders", sa.MetaData(), autoload_with=engine)
    assert [c.name for c in orders.columns] == list(cols)


def test_query_reads_every_endpoint(engine):
    orders = sa.Table("orders", sa.MetaData(), autoload_with=engine)
    with engine.connect() as c:
        # A multi-endpoint scan: without single-endpoint mode this client
        # would see only the first worker's share.
        ids = [r[0] for r in c.execute(sa.select(orders.c.id))]
        assert len(ids) == 50_000 and sorted(ids) == list(range(1, 50_001))
        q = (sa.select(orders.c.status, sa.func.count().label("n"))
             .where(orders.c.customer_id < 100)
             .group_by(orders.c.status).order_by(orders.c.status))
        rows = c.execute(q).fetchall()
        assert sum(n for _, n in rows) == c.execute(
            sa.text("SELECT count(*) FROM orders WHERE customer_id < 100")).scalar()


def test_without_single_endpoint_mode_the_error_says_why(server):
    # What the mode is for: the plain client DoGets endpoint 0 on the
    # coordinator, which tells it that a worker serves that ticket.
    client = flightsql.FlightSQLClient(host="127.0.0.1", port=int(server.host_port.split(":")[1]), insecure=True)
    conn = flightsql.connect(client)
    try:
        cur = conn.cursor()
        with pytest.raises(pa.ArrowException) as e:
            cur.execute("SELECT id FROM orders")
        assert "served by a worker" in str(e.value)
    finally:
        conn.close()
