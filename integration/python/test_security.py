"""Authentication, TLS and tickets through Python ADBC (the Go driver it
wraps) and pyarrow's Flight client, against `icefloe serve --tls` with
users from its config."""

import base64
import subprocess

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import SECURE_USERS, binary

TLS_ROOT_CERTS = adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value
AUTHORIZATION = adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value
ORDERS = "SELECT id, status FROM orders"


def connect(srv, user=None, password=None, token=None):
    kw = {TLS_ROOT_CERTS: srv.ca_pem}
    if user is not None:
        kw["username"], kw["password"] = user, password
    if token is not None:
        kw[AUTHORIZATION] = "Bearer " + token
    return fsql.connect(srv.coordinator, db_kwargs=kw, autocommit=True)


def login(srv, user):
    return connect(srv, user, SECURE_USERS[user][0])


def token(srv, user, ttl):
    out = subprocess.run([binary(), "token", "--config", srv.config, "--user", user, "--ttl=" + ttl],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def tamper(tok):
    head, payload, sig = tok.split(".")
    flipped = ("B" if payload[3] == "A" else "A")
    return ".".join([head, payload[:3] + flipped + payload[4:], sig])


def status(exc):
    return getattr(exc, "status_code", None)


def run(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def test_unauthenticated_at_the_coordinator(secure_server):
    with pytest.raises(adbc_driver_manager.Error) as e:
        with connect(secure_server) as c:
            run(c, ORDERS)
    assert status(e.value) == adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED, e.value
    assert "authentication required" in str(e.value)
    with pytest.raises(adbc_driver_manager.Error) as e:
        connect(secure_server, "alice", "wrong").close()
    assert status(e.value) == adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED, e.value
    assert "wrong user name or password" in str(e.value)
    for bad in (token(secure_server, "alice", "-2m"), tamper(token(secure_server, "alice", "10m"))):
        with pytest.raises(adbc_driver_manager.Error) as e:
            with connect(secure_server, token=bad) as c:
                run(c, ORDERS)
        assert status(e.value) == adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED, e.value


def worker_endpoint(srv, user="alice"):
    with login(srv, user) as c, c.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(ORDERS)
    (ep,) = flight.FlightInfo.deserialize(partitions[0]).endpoints
    return ep


def worker_client(srv, ep):
    return flight.FlightClient(ep.locations[0].uri.decode(), tls_root_certs=srv.ca_pem.encode())


def basic(user, password):
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def test_unauthenticated_at_a_worker(secure_server):
    ep = worker_endpoint(secure_server)
    assert ep.locations[0].uri.decode().startswith("grpc+tls://")
    cl = worker_client(secure_server, ep)
    headers = {
        "no credentials": [],
        "wrong password": [(b"authorization", basic("alice", "wrong"))],
        "expired token": [(b"authorization", b"Bearer " + token(secure_server, "alice", "-2m").encode())],
        "tampered token": [(b"authorization", b"Bearer " + tamper(token(secure_server, "alice", "10m")).encode())],
    }
    for what, h in headers.items():
        opts = flight.FlightCallOptions(headers=h)
        with pytest.raises(flight.FlightUnauthenticatedError):
            cl.do_get(ep.ticket, options=opts).read_all()
        with pytest.raises(flight.FlightUnauthenticatedError):
            writer, reader = cl.do_put(flight.FlightDescriptor.for_command(ep.ticket.ticket),
                                       pa.schema([("x", pa.int64())]), options=opts)
            writer.close()
    ok = flight.FlightCallOptions(headers=[(b"authorization", basic("alice", "alice-pw"))])
    assert cl.do_get(ep.ticket, options=ok).read_all().num_rows > 0


def test_partitions_over_tls_workers(secure_server):
    with login(secure_server, "alice") as c, c.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(ORDERS)
        owners = {flight.FlightInfo.deserialize(p).endpoints[0].locations[0].uri.decode() for p in partitions}
        assert len(owners) >= 2, owners
        assert all(o.startswith("grpc+tls://") for o in owners)
        rows = 0
        for p in partitions:
            cur.adbc_read_partition(p)
            rows += cur.fetch_arrow_table().num_rows
    assert rows == 50_000


def test_ticket_replayed_by_another_principal(secure_server):
    with login(secure_server, "alice") as alice, alice.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions(ORDERS)
    with login(secure_server, "bob") as bob, bob.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error) as e:
            cur.adbc_read_partition(partitions[0])
            cur.fetch_arrow_table()
    assert status(e.value) == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED, e.value
    assert "another principal" in str(e.value)


def test_grants_and_browsing(secure_server):
    with login(secure_server, "root") as root:
        run(root, "CREATE SCHEMA IF NOT EXISTS private")
        run(root, "CREATE TABLE IF NOT EXISTS private.salaries (name VARCHAR, pay DOUBLE)")
    with login(secure_server, "alice") as alice:
        assert run(alice, "SELECT count(*) AS n FROM orders").column("n").to_pylist() == [50_000]
        for sql in ("SELECT * FROM private.salaries",
                    "SELECT * FROM orders WHERE customer_id IN (SELECT 1 FROM private.salaries)",
                    "INSERT INTO orders SELECT * FROM orders LIMIT 1"):
            with pytest.raises(adbc_driver_manager.Error) as e:
                run(alice, sql)
            assert status(e.value) == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED, (sql, e.value)
            assert "permission denied" in str(e.value)
        objects = alice.adbc_get_objects(depth="tables").read_all().to_pylist()
        schemas = {s["db_schema_name"]: [t["table_name"] for t in s["db_schema_tables"] or []]
                   for cat in objects for s in cat["catalog_db_schemas"] or []}
        assert "private" not in schemas and "default" in schemas, schemas
        assert "orders" in schemas["default"]


def test_sqlalchemy_logs_in_through_the_proxy(secure_server):
    # flightsql-dbapi reads only endpoints[0]: the coordinator's
    # single-endpoint mode pulls the workers as the logged-in user. It
    # cannot be given a CA, so it skips verifying the dev certificate.
    import flightsql.sqlalchemy  # noqa: F401 - registers datafusion+flightsql
    import sqlalchemy as sa

    url = (f"datafusion+flightsql://alice:alice-pw@{secure_server.host_port}"
           "?disable_server_verification=true&x-icefloe-single-endpoint=true")
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            assert c.execute(sa.text("SELECT count(*) FROM orders")).scalar() == 50_000
        assert "private" not in sa.inspect(eng).get_schema_names()
    finally:
        eng.dispose()
    # flightsql-dbapi logs in when the engine is made.
    with pytest.raises(Exception, match="wrong user name or password"):
        wrong = sa.create_engine(url.replace("alice-pw", "nope"))
        with wrong.connect() as c:
            c.execute(sa.text("SELECT 1"))
