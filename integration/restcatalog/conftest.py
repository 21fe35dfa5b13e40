"""Fixtures of the REST catalog suite: one `icefloe serve --tls` with its
REST catalog on a free port, users and grants from its config, and
helpers to reach it through pyiceberg and ADBC."""

import importlib.util
import os
import tempfile

import pytest

# Users: name -> (password, roles). The roles' grants are in ROLES.
USERS = {
    "root": ("root-pw", ["admin"]),
    "reader": ("reader-pw", ["reader"]),
    "writer": ("writer-pw", ["writer"]),
    "deleter": ("deleter-pw", ["deleter"]),
    "outsider": ("outsider-pw", ["outsider"]),
    "creator": ("creator-pw", ["creator"]),
    "placer": ("placer-pw", ["placer"]),
    "filtered": ("filtered-pw", ["filtered"]),
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
    - name: creator
      grants:
        - privileges: [ALL]
          on: local.rt
    - name: placer
      grants:
        - privileges: [ALL, LOCATION]
          on: local.rt
    - name: filtered
      grants:
        - privileges: [SELECT]
          on: local.rt.filtered
          where: id < 3
          masks:
            - {column: s, expr: "'x'"}
        - privileges: [SELECT]
          on: local.rt.whole
"""


def _python_suite():
    """The Python client suite's conftest (integration/python), whose
    server start and stop this suite shares."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "conftest.py")
    spec = importlib.util.spec_from_file_location("icefloe_python_suite", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_py = _python_suite()
binary = _py.binary


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="icefloe-rest-") as d:
        cfg = os.path.join(d, "icefloe.yaml")
        users = "".join(
            f"    - name: {name}\n      password_hash: \"{_py._hash(pw)}\"\n      roles: [{', '.join(roles)}]\n"
            for name, (pw, roles) in USERS.items())
        with open(cfg, "w") as f:
            f.write("ticket_key: rest-catalog-suite\nauth:\n  users:\n" + users + ROLES)
        data = os.path.join(d, "data")
        srv = _py._start(data, extra=("--tls", "--config", cfg, "--rest-addr", "127.0.0.1:0"))
        srv.config, srv.data, srv.rest = cfg, data, srv.fields["rest"]
        srv.ca_file = os.path.join(data, "tls", "ca.pem")
        # pyiceberg's HTTP client (requests) trusts the development CA.
        os.environ["REQUESTS_CA_BUNDLE"] = srv.ca_file
        with open(srv.ca_file) as f:
            srv.ca_pem = f.read()
        try:
            yield srv
        finally:
            _py._stop(srv)


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
