"""Fixtures of the REST catalog suite: one `icefloe serve --tls` with its
REST catalog on a free port, users and grants from its config, and
helpers to reach it through pyiceberg and ADBC."""

import json
import os
import signal
import subprocess
import tempfile
import threading

import pytest

# Users: name -> (password, roles). The roles' grants are in ROLES.
USERS = {
    "root": ("root-pw", ["admin"]),
    "reader": ("reader-pw", ["reader"]),
    "writer": ("writer-pw", ["writer"]),
    "deleter": ("deleter-pw", ["deleter"]),
    "outsider": ("outsider-pw", ["outsider"]),
}
ROLES = """  roles:
    - name: reader
      grants:
        - privileges: [SELECT]
          on: local.rt
    - name: writer
      grants:
        - privileges: [SELECT, INSERT]
          on: local.rt
    - name: deleter
      grants:
        - privileges: [SELECT, DELETE]
          on: local.rt
    - name: outsider
      grants:
        - privileges: [SELECT]
          on: local.default
"""


def binary():
    b = os.environ.get("ICEFLOE_BIN")
    if not b:
        raise RuntimeError("ICEFLOE_BIN is not set: run this suite through ./run or make test")
    return b


def _hash(password):
    out = subprocess.run([binary(), "passwd"], input=password + "\n", capture_output=True, text=True, check=True)
    return out.stdout.strip()


class Server:
    pass


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="icefloe-rest-") as d:
        cfg = os.path.join(d, "icefloe.yaml")
        users = "".join(
            f"    - name: {name}\n      password_hash: \"{_hash(pw)}\"\n      roles: [{', '.join(roles)}]\n"
            for name, (pw, roles) in USERS.items())
        with open(cfg, "w") as f:
            f.write("ticket_key: rest-catalog-suite\nauth:\n  users:\n" + users + ROLES)
        data = os.path.join(d, "data")
        proc = subprocess.Popen(
            [binary(), "serve", "--demo", "--tls", "--config", cfg, "--listen", "127.0.0.1:0",
             "--rest-addr", "127.0.0.1:0", "--data-dir", data, "--workers", "2"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        lines, ready, got = [], {}, threading.Event()

        def pump():
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                i = line.find("ready\t{")
                if i >= 0 and not got.is_set():
                    try:
                        ready.update(json.loads(line[i + len("ready\t"):]))
                        got.set()
                    except ValueError:
                        pass
            got.set()

        threading.Thread(target=pump, daemon=True).start()
        if not got.wait(180) or not ready:
            proc.kill()
            raise RuntimeError("icefloe serve did not become ready:\n" + "\n".join(lines))
        srv = Server()
        srv.proc, srv.config, srv.data = proc, cfg, data
        srv.coordinator, srv.rest = ready["coordinator"], ready["rest"]
        srv.ca_file = os.path.join(data, "tls", "ca.pem")
        # pyiceberg's HTTP client (requests) trusts the development CA.
        os.environ["REQUESTS_CA_BUNDLE"] = srv.ca_file
        with open(srv.ca_file) as f:
            srv.ca_pem = f.read()
        srv.log = lines
        try:
            yield srv
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def rest_catalog(srv, user=None, token=None, **extra):
    """A pyiceberg REST catalog of icefloe's `local` catalog, as `user`
    (OAuth2 client credentials) or with a bearer token."""
    from pyiceberg.catalog import load_catalog

    props = {"type": "rest", "uri": srv.rest, "warehouse": "local"}
    if user is not None:
        props["credential"] = f"{user}:{USERS[user][0]}"
    if token is not None:
        props["token"] = token
    props.update(extra)
    return load_catalog("icefloe", **props)


def sql(srv, user="root"):
    """An ADBC connection to the coordinator as user."""
    import adbc_driver_flightsql
    import adbc_driver_flightsql.dbapi as fsql

    kw = {adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value: srv.ca_pem,
          "username": user, "password": USERS[user][0]}
    return fsql.connect(srv.coordinator, db_kwargs=kw, autocommit=True)


def run_sql(srv, text, user="root"):
    with sql(srv, user) as c, c.cursor() as cur:
        cur.execute(text)
        return cur.fetchall() if cur.description else None


@pytest.fixture(scope="session")
def schema(server):
    """The schema local.rt, made by the admin."""
    run_sql(server, "CREATE SCHEMA IF NOT EXISTS local.rt")
    return "rt"
