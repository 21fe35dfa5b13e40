"""Fixtures of the Python client suite: one `icefloe serve --demo` per test
session, on free ports, stopped at the end.

The binary is $ICEFLOE_BIN (the Makefile sets it). The server prints a
"ready" log line whose JSON names the coordinator and the workers; its log
is kept so tests can assert on what the server did (e.g. a cancelled
stream).
"""

import json
import os
import signal
import subprocess
import tempfile
import threading
import time

import pytest


class Server:
    def __init__(self, proc, fields, log_lines):
        self.proc = proc
        self.fields = fields
        self._log = log_lines
        self.coordinator = fields["coordinator"]  # grpc://127.0.0.1:PORT (grpc+tls:// with TLS)
        self.workers = fields["workers"]
        self.host_port = self.coordinator.split("://", 1)[1]

    def log(self):
        return "\n".join(self._log)

    def wait_log(self, needle, after=0, timeout=20.0):
        """Waits until a log line after index `after` contains needle."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(needle in line for line in self._log[after:]):
                return True
            time.sleep(0.1)
        return False

    def log_mark(self):
        return len(self._log)

    def metric(self, name):
        """The sum of a metric's samples on the server's /metrics."""
        import urllib.request
        with urllib.request.urlopen(f"http://{self.fields['http']}/metrics", timeout=10) as r:
            text = r.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def cpu_seconds(self):
        """CPU time the server process has used (user + system), from /proc."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")


def binary():
    b = os.environ.get("ICEFLOE_BIN")
    if not b:
        raise RuntimeError("ICEFLOE_BIN is not set: run this suite through ./run or make test")
    return b


def _start(data_dir, workers=2, extra=()):
    proc = subprocess.Popen(
        [binary(), "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
         "--workers", str(workers), "--http-addr", "127.0.0.1:0", *extra],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = []
    ready = {}
    got = threading.Event()

    def pump():
        for line in proc.stderr:
            line = line.rstrip("\n")
            lines.append(line)
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
    return Server(proc, ready, lines)


def _fixture_tables(data_dir):
    """Writes the tables SQL cannot create (fixture.fixed_t: fixed[4],
    fixture.ns_t: timestamp_ns) into data_dir's catalog (integration/fixture)."""
    root = os.environ.get("REPO_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    subprocess.run(["go", "run", "-tags", os.environ.get("GO_TAGS", "duckdb_arrow"), "./integration/fixture", data_dir],
                   cwd=root, check=True)


def _stop(srv):
    srv.proc.send_signal(signal.SIGINT)
    try:
        srv.proc.wait(30)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait()


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory(prefix="icefloe-py-") as d:
        _fixture_tables(d)
        srv = _start(d)
        try:
            yield srv
        finally:
            _stop(srv)


# Users of the secure server: name -> (password, roles).
SECURE_USERS = {"alice": ("alice-pw", ["reader"]), "bob": ("bob-pw", ["reader"]), "root": ("root-pw", ["admin"])}


def _hash(password):
    out = subprocess.run([binary(), "passwd"], input=password + "\n", capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.fixture(scope="session")
def secure_server():
    """`icefloe serve --tls` with users and grants in its config: TLS on
    every listener with a throwaway CA (data dir tls/ca.pem)."""
    with tempfile.TemporaryDirectory(prefix="icefloe-py-secure-") as d:
        cfg = os.path.join(d, "icefloe.yaml")
        users = "".join(
            f"    - name: {name}\n      password_hash: \"{_hash(pw)}\"\n      roles: [{', '.join(roles)}]\n"
            for name, (pw, roles) in SECURE_USERS.items())
        with open(cfg, "w") as f:
            f.write("ticket_key: python-secure-suite\nauth:\n  users:\n" + users +
                    "  roles:\n    - name: reader\n      grants:\n        - privileges: [SELECT]\n          on: local.default\n")
        data = os.path.join(d, "data")
        srv = _start(data, extra=("--tls", "--config", cfg))
        srv.config = cfg
        with open(os.path.join(data, "tls", "ca.pem")) as f:
            srv.ca_pem = f.read()
        try:
            yield srv
        finally:
            _stop(srv)


@pytest.fixture(scope="session")
def uri(server):
    return server.coordinator


@pytest.fixture()
def conn(uri):
    import adbc_driver_flightsql.dbapi as fsql

    c = fsql.connect(uri, autocommit=True)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture()
def proxy_conn(uri):
    """A connection in single-endpoint mode (call header)."""
    import adbc_driver_flightsql.dbapi as fsql

    c = fsql.connect(uri, autocommit=True, db_kwargs={
        "adbc.flight.sql.rpc.call_header.x-icefloe-single-endpoint": "true"})
    try:
        yield c
    finally:
        c.close()
