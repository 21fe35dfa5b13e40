"""TPC-H on icefloe: data, loading, queries and answer checking.

Shared by the SF0.1 smoke run (smoke.py, run by integration/tpch/run) and the
benchmark (bench.py). Data comes from `tpchgen-cli` (Parquet, one file per
table), is loaded into Iceberg tables through icefloe itself (CREATE TABLE
with the TPC-H types, `lineitem` and `orders` PARTITIONED BY year of their
date, then ADBC bulk ingest), and every query's answer is compared with
DuckDB's answer on the same Parquet files: same column names and types, same
rows in order, floats within a relative tolerance of 1e-9, everything else
(decimals included) exact.
"""

import json
import math
import os
import pathlib
import signal
import subprocess
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
QUERIES = HERE / "queries"
TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]
PARTITIONS = {"lineitem": "year(l_shipdate)", "orders": "year(o_orderdate)"}
REL_TOL = 1e-9


def queries():
    """The 22 queries as (name, sql), q01 … q22."""
    out = []
    for p in sorted(QUERIES.glob("q*.sql")):
        out.append((p.stem, p.read_text().strip().rstrip(";")))
    return out


def generate(tpchgen, sf, out_dir):
    """Writes the TPC-H tables at scale factor sf as Parquet into out_dir,
    once: a complete earlier generation (marked by a stamp file) is reused."""
    out = pathlib.Path(out_dir)
    stamp = out / ".complete"
    if stamp.exists() and stamp.read_text() == str(sf):
        return out
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([tpchgen, "parquet", "-s", str(sf), "-o", str(out), "--overwrite"], check=True,
                   stdout=subprocess.DEVNULL)
    for t in TABLES:
        if not (out / f"{t}.parquet").exists():
            raise RuntimeError(f"tpchgen-cli wrote no {t}.parquet")
    stamp.write_text(str(sf))
    return out


def parquet_path(data_dir, table):
    return str(pathlib.Path(data_dir) / f"{table}.parquet")


# ---- the server --------------------------------------------------------------


class Server:
    """`icefloe serve` on a free port, stopped by stop(). args are more
    flags; session=(catalog, schema) is every connection's default."""

    def __init__(self, binary, data_dir, workers=2, env=None, args=(), session=None):
        e = dict(os.environ)
        e.update(env or {})
        self.session = session
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), "--workers", str(workers), *args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=e)
        self.log = []
        ready = _ready_fields(self.proc, "icefloe serve", self.log)
        self.uri = ready["coordinator"]
        self.data_dir = pathlib.Path(data_dir)

    def connect(self, single_endpoint=False):
        import adbc_driver_flightsql.dbapi as fsql

        db = {}
        if single_endpoint:
            db["adbc.flight.sql.rpc.call_header.x-icefloe-single-endpoint"] = "true"
        if self.session:
            # The session (its catalog and schema) lives in a cookie.
            db["adbc.flight.sql.rpc.with_cookie_middleware"] = "true"
        conn = fsql.connect(self.uri, autocommit=True, **({"db_kwargs": db} if db else {}))
        if self.session:
            conn.adbc_current_catalog, conn.adbc_current_db_schema = self.session
        return conn

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _ready_fields(proc, what, log, timeout=180):
    """Reads proc's stderr on a thread into log and returns the fields of
    its JSON `ready` line (a zap console line `… ready\t{…}`)."""
    ready, got = {}, threading.Event()

    def pump():
        for line in proc.stderr:
            log.append(line.rstrip("\n"))
            i = line.find("ready\t{")
            if i >= 0 and not got.is_set():
                try:
                    ready.update(json.loads(line[i + len("ready\t"):]))
                except ValueError:
                    pass
                got.set()
        got.set()

    threading.Thread(target=pump, daemon=True).start()
    if not got.wait(timeout) or not ready:
        proc.kill()
        raise RuntimeError(f"{what} did not become ready:\n" + "\n".join(log[-30:]))
    return ready


def peak_rss_bytes(pid):
    """The process's peak resident set (VmHWM) in bytes, or None."""
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Cluster:
    """`icefloe coordinator` and `workers` `icefloe worker` processes on
    free ports over one data folder, stopped by stop(). pin, when set,
    lists one CPU list per worker (taskset -c), e.g. ["0", "1"]; the
    coordinator is not pinned. Has the same connect()/uri as Server."""

    def __init__(self, binary, data_dir, workers=2, pin=None, env=None, args=(), coordinator_args=(), session=None):
        e = dict(os.environ)
        e.setdefault("ICEFLOE_TICKET_KEY", os.urandom(16).hex())
        e.update(env or {})
        self.session = session
        self.data_dir = pathlib.Path(data_dir)
        self.log = []
        self.workers = []
        try:
            addrs = []
            for i in range(workers):
                cmd = [binary, "worker", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), *args]
                if pin:
                    cmd = ["taskset", "-c", pin[i % len(pin)], *cmd]
                w = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=e)
                self.workers.append(w)
                addrs.append(_ready_fields(w, f"worker {i}", self.log)["worker"])
            # The workers share this host and data folder, so they read the
            # local warehouse in place: --direct-dir tells the coordinator,
            # which then gathers onto one worker reading the files with
            # DuckDB's Parquet reader, as `serve` does (docs/configuration.md).
            cmd = [binary, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
                   "--direct-dir", str(self.data_dir / "warehouse"), *args, *coordinator_args]
            for a in addrs:
                cmd += ["--worker", a]
            self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=e)
            self.uri = _ready_fields(self.proc, "coordinator", self.log)["coordinator"]
        except BaseException:
            self.stop()
            raise

    connect = Server.connect

    def peak_rss(self):
        """{'coordinator': bytes, 'worker0': bytes, …} of VmHWM so far."""
        out = {"coordinator": peak_rss_bytes(self.proc.pid)} if hasattr(self, "proc") else {}
        for i, w in enumerate(self.workers):
            out[f"worker{i}"] = peak_rss_bytes(w.pid)
        return out

    def stop(self):
        procs = ([self.proc] if hasattr(self, "proc") else []) + self.workers
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class S3:
    """A versitygw S3 gateway (ICEFLOE_VERSITYGW, see scripts/ensure-versitygw)
    over a local folder with one bucket, stopped by stop(); config() is an
    icefloe config mounting an SQL catalog whose warehouse is on it."""

    ACCESS, SECRET, BUCKET = "icefloe-bench", "icefloe-bench-secret", "warehouse"

    def __init__(self, binary, root):
        import socket

        self.root = pathlib.Path(root)
        # The posix backend serves each folder of its root as a bucket.
        (self.root / "objects" / self.BUCKET).mkdir(parents=True, exist_ok=True)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [binary, "--access", self.ACCESS, "--secret", self.SECRET, "--port", f"127.0.0.1:{port}", "posix",
             str(self.root / "objects")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("versitygw did not come up")
                time.sleep(0.1)

    def config(self, name="s3"):
        """Writes and returns the path of an icefloe config with the catalog."""
        path = self.root / "icefloe.yaml"
        path.write_text(json.dumps({"catalogs": [{"name": name, "type": "sql", "properties": {
            "uri": f"file:{self.root / 'catalog.db'}?_pragma=busy_timeout(5000)", "sql.dialect": "sqlite",
            "warehouse": f"s3://{self.BUCKET}/wh", "s3.endpoint": self.endpoint, "s3.region": "us-east-1",
            "s3.access-key-id": self.ACCESS, "s3.secret-access-key": self.SECRET}}]}))
        return str(path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


# ---- loading -----------------------------------------------------------------


def _sql_type(t):
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "VARCHAR"
    if pa.types.is_floating(t):
        return "DOUBLE"
    raise ValueError(f"no SQL type for {t}")


def _arrow_type(t):
    """The type the ingest stream carries: plain utf8 for every string kind."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    return t


def ddl(table, schema):
    cols = ", ".join(f"{f.name} {_sql_type(f.type)}{'' if f.nullable else ' NOT NULL'}" for f in schema)
    part = f" PARTITIONED BY ({PARTITIONS[table]})" if table in PARTITIONS else ""
    return f"CREATE TABLE {table} ({cols}){part}"


def parquet_reader(path, batch_rows=64 * 1024):
    """A RecordBatchReader over a Parquet file, strings as utf8, in batches
    that stay under gRPC's 16 MiB message limit (64 Ki lineitem rows ≈ 8 MB)."""
    f = pq.ParquetFile(path)
    src = f.schema_arrow
    target = pa.schema([pa.field(x.name, _arrow_type(x.type), x.nullable) for x in src])

    def batches():
        for b in f.iter_batches(batch_size=batch_rows):
            yield b.cast(target)

    return pa.RecordBatchReader.from_batches(target, batches())


def load(server, data_dir, tables=TABLES, log=print):
    """Creates and fills the TPC-H tables through icefloe: CREATE TABLE, then
    one ADBC bulk ingest (mode append) per table. Returns {table: seconds}."""
    took = {}
    conn = server.connect()
    try:
        for t in tables:
            path = parquet_path(data_dir, t)
            update(conn, f"DROP TABLE IF EXISTS {t}")
            update(conn, ddl(t, pq.read_schema(path)))
            t0 = time.perf_counter()
            cur = conn.cursor()
            n = cur.adbc_ingest(t, parquet_reader(path), mode="append")
            cur.close()
            took[t] = time.perf_counter() - t0
            want = pq.ParquetFile(path).metadata.num_rows
            if n != want:
                raise RuntimeError(f"ingest {t}: {n} rows, want {want}")
            log(f"loaded {t}: {want} rows in {took[t]:.2f} s")
    finally:
        conn.close()
    return took


def update(conn, sql):
    """Runs a statement that returns no rows (DDL, DML) as a Flight SQL
    update on a fresh cursor, so the driver pulls no result stream."""
    cur = conn.cursor()
    try:
        st = cur.adbc_statement
        st.set_sql_query(sql)
        return st.execute_update()
    finally:
        cur.close()


# ---- running -----------------------------------------------------------------


def run_icefloe(conn, sql):
    """Runs sql through Flight SQL; the ADBC driver pulls every endpoint in
    parallel."""
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return cur.fetch_arrow_table()
    finally:
        cur.close()


def duckdb_on_parquet(data_dir, threads=2):
    """A DuckDB connection with one view per TPC-H table over its Parquet
    file (the reference and the 'DuckDB on Parquet' peer)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{parquet_path(data_dir, t)}')")
    return con


def run_duckdb(con, sql):
    return con.execute(sql).to_arrow_table()


# ---- checking ----------------------------------------------------------------


def _norm_type(t):
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    return t


def _cell_equal(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= REL_TOL * max(abs(a), abs(b))
    return a == b


def diff(got, want):
    """'' when got (icefloe) answers like want (the reference): the same
    column names and types (string kinds alike), the same rows in order,
    floats within REL_TOL, everything else exact; else a description."""
    if got.schema.names != want.schema.names:
        return f"columns: got {got.schema.names}, want {want.schema.names}"
    for g, w in zip(got.schema, want.schema):
        if _norm_type(g.type) != _norm_type(w.type):
            return f"column {g.name}: got type {g.type}, want {w.type}"
    gr, wr = got.to_pylist(), want.to_pylist()
    if len(gr) != len(wr):
        return f"got {len(gr)} rows, want {len(wr)}"
    for i, (g, w) in enumerate(zip(gr, wr)):
        for k in w:
            if not _cell_equal(g[k], w[k]):
                return f"row {i} column {k}: got {g[k]!r}, want {w[k]!r}\n  got  {g}\n  want {w}"
    return ""
