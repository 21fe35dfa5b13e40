"""Fixtures of the pyiceberg interop suite: one `icefloe serve --demo` on
free ports over a fresh data directory, and a pyiceberg SqlCatalog opened on
the same SQLite catalog file (`<data-dir>/catalog.db`, catalog `local`,
warehouse `<data-dir>/warehouse`)."""

import json
import os
import signal
import subprocess
import tempfile
import threading

import pytest


def _start(data_dir, workers=2):
    binary = os.environ.get("ICEFLOE_BIN")
    if not binary:
        raise RuntimeError("ICEFLOE_BIN is not set: run this suite through ./run or make test")
    proc = subprocess.Popen(
        [binary, "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
         "--workers", str(workers)],
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
    return proc, ready["coordinator"]


@pytest.fixture(scope="session")
def data_dir():
    with tempfile.TemporaryDirectory(prefix="icefloe-interop-") as d:
        yield d


@pytest.fixture(scope="session")
def uri(data_dir):
    proc, coordinator = _start(data_dir)
    try:
        yield coordinator
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture()
def conn(uri):
    import adbc_driver_flightsql.dbapi as fsql

    c = fsql.connect(uri, autocommit=True)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def pycat(data_dir, uri):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("local", uri=f"sqlite:///{data_dir}/catalog.db",
                      warehouse=f"file://{data_dir}/warehouse")
