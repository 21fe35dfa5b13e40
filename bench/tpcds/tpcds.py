"""TPC-DS on icefloe: data, loading, running and answer checking.

Shared by the SF0.1 answer check (check.py, run by integration/tpcds/run)
and the benchmark (bench.py). DuckDB's tpcds extension (PyPI
duckdb-extension-tpcds, matching duckdb, loaded from its package by path)
generates the data (dsdgen) and gives the 99 queries; each table is one
Parquet file, loaded into an Iceberg table through icefloe itself (CREATE
TABLE, ADBC bulk ingest). Answers are compared with DuckDB's on the same
Parquet files as multisets (see compare).
"""

import concurrent.futures
import math
import pathlib
import re
import sys
import threading
from collections import defaultdict
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tpch"))

import tpch  # noqa: E402

REL_TOL = 1e-9
ABS_TOL = 1e-9


# ---- data --------------------------------------------------------------------


def duckdb_tpcds():
    """A DuckDB connection with the tpcds extension loaded from its package."""
    import duckdb
    import duckdb_extension_tpcds

    con = duckdb.connect()
    ext = pathlib.Path(duckdb_extension_tpcds.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "tpcds.duckdb_extension"
    con.execute(f"LOAD '{ext}'")
    return con


def generate(sf, out):
    """Writes the TPC-DS tables at sf as Parquet into out once (a stamp
    marks a complete run); returns the table names and the 99 queries as
    (name, sql) pairs."""
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb_tpcds()
    queries = [(f"q{n:02d}", q.strip().rstrip(";")) for n, q in
               con.execute("SELECT query_nr, query FROM tpcds_queries() ORDER BY query_nr").fetchall()]
    stamp = out / ".complete"
    if not (stamp.exists() and stamp.read_text() == str(sf)):
        stamp.unlink(missing_ok=True)
        con.execute(f"CALL dsdgen(sf={sf})")
        for (t,) in con.execute("SHOW TABLES").fetchall():
            con.execute(f"COPY {t} TO '{out / (t + '.parquet')}' (FORMAT parquet)")
        stamp.write_text(str(sf))
    con.close()
    tables = sorted(p.stem for p in out.glob("*.parquet"))
    return tables, queries


def reference(data, tables, threads=2):
    """DuckDB with one view per table over its Parquet file."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for t in tables:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data / (t + '.parquet')}')")
    return con


def load(srv, data, tables, pieces=1, split_rows=50_000):
    """CREATE TABLE and one ADBC bulk ingest per table; a table of more
    than split_rows rows is ingested in that many appends (so many data
    files, spread over the workers)."""
    conn = srv.connect()
    try:
        for t in tables:
            path = str(data / f"{t}.parquet")
            tpch.update(conn, tpch.ddl(t, pq.read_schema(path)))
            rows = pq.ParquetFile(path).metadata.num_rows
            n = 0
            for piece in _pieces(path, pieces if rows > split_rows else 1):
                cur = conn.cursor()
                n += cur.adbc_ingest(t, piece, mode="append")
                cur.close()
            if n != rows:
                raise RuntimeError(f"ingest {t}: {n} rows, want {rows}")
    finally:
        conn.close()


def _pieces(path, n):
    """n RecordBatchReaders over consecutive row ranges of a Parquet file,
    strings as utf8, in batches of 16 Ki rows (wide tables stay under
    gRPC's 16 MiB message limit)."""
    if n == 1:
        yield tpch.parquet_reader(path, batch_rows=16 * 1024)
        return
    whole = tpch.parquet_reader(path).read_all()
    step = -(-whole.num_rows // n)
    for off in range(0, whole.num_rows, step):
        yield whole.slice(off, step).to_reader(max_chunksize=16 * 1024)


# ---- running -----------------------------------------------------------------


def connect(uri, timeout):
    """A connection whose statements icefloe cancels after timeout (the
    session option statement_timeout, kept in the session cookie)."""
    import adbc_driver_flightsql.dbapi as fsql

    conn = fsql.connect(uri, autocommit=True, db_kwargs={"adbc.flight.sql.rpc.with_cookie_middleware": "true"})
    conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.statement_timeout": timeout})
    return conn


class Partitioned:
    """Runs a query as a client with parallel partitions would: one
    execute_partitions, then every partition (endpoint) read from a thread
    pool, each thread on a connection of its own."""

    def __init__(self, uri, timeout, threads=4):
        self.uri, self.timeout = uri, timeout
        self.conn = connect(uri, timeout)
        self.local = threading.local()
        self.conns = []
        self.lock = threading.Lock()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads)

    def _reader_conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = self.local.conn = connect(self.uri, self.timeout)
            with self.lock:
                self.conns.append(c)
        return c

    def _read(self, part):
        cur = self._reader_conn().cursor()
        try:
            cur.adbc_read_partition(part)
            return cur.fetch_arrow_table()
        finally:
            cur.close()

    def run(self, sql, wait):
        """The answer and the number of partitions; a partition not read
        within wait seconds raises TimeoutError."""
        cur = self.conn.cursor()
        try:
            parts, schema = cur.adbc_execute_partitions(sql)
        finally:
            cur.close()
        futures = [self.pool.submit(self._read, p) for p in parts]
        tables = [f.result(timeout=wait) for f in futures]
        if not tables:
            return schema.empty_table(), 0
        return pa.concat_tables(tables), len(parts)

    def close(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
        for c in [self.conn, *self.conns]:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing after a failure
                pass


# ---- checking ----------------------------------------------------------------

_LIMIT = re.compile(r"\blimit\s+\d+\s*$", re.IGNORECASE)


def without_limit(sql):
    """sql without its final LIMIT n, or None when it has none."""
    s = sql.rstrip().rstrip(";")
    m = _LIMIT.search(s)
    return s[:m.start()].rstrip() if m else None


def _norm_type(t):
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    return t


def _split(row):
    """A row as (exact part, float part): decimals and integers compare by
    value (Decimal('1.50') == 1.5 hashes alike), NULL is None, floats are
    compared within a tolerance apart from the rest."""
    exact, floats = [], []
    for v in row:
        if isinstance(v, float):
            exact.append("<float>" if not math.isnan(v) else "<nan>")
            floats.append(v)
        elif isinstance(v, Decimal):
            exact.append(v.normalize() if v.is_finite() else v)
        else:
            exact.append(v)
    return tuple(exact), floats


def _floats_equal(a, b):
    return all(x == y or (math.isnan(x) and math.isnan(y)) or
               abs(x - y) <= max(ABS_TOL, REL_TOL * max(abs(x), abs(y))) for x, y in zip(a, b))


def _unmatched(got, want):
    """The rows of got (lists of values) that find no partner in want, each
    row of want partnering at most one: a multiset containment check."""
    groups = defaultdict(list)
    for r in want:
        e, f = _split(r)
        groups[e].append(f)
    missing = []
    for r in got:
        e, f = _split(r)
        cands = groups.get(e)
        for i, c in enumerate(cands or ()):
            if _floats_equal(f, c):
                cands.pop(i)
                break
        else:
            missing.append(r)
    return missing


def _rows(t):
    return [tuple(r.values()) for r in t.to_pylist()]


def compare(got, want, want_uncut=None):
    """'' when got (icefloe) answers like want (DuckDB): the same column
    names and types (string kinds alike) and the same rows as a multiset
    (decimals by value, floats within a tolerance, NULLs alike). With
    want_uncut (DuckDB's answer without the query's final LIMIT), ties at
    the cut are accepted: got has want's row count and every row of got is
    in want_uncut. Else a description of the first difference."""
    if got.schema.names != want.schema.names:
        return f"columns: got {got.schema.names}, want {want.schema.names}"
    for g, w in zip(got.schema, want.schema):
        if _norm_type(g.type) != _norm_type(w.type):
            return f"column {g.name}: got type {g.type}, want {w.type}"
    if got.num_rows != want.num_rows:
        return f"got {got.num_rows} rows, want {want.num_rows}"
    gr, wr = _rows(got), _rows(want)
    extra = _unmatched(gr, wr)
    if not extra:
        return ""
    if want_uncut is not None:
        extra = _unmatched(gr, _rows(want_uncut))
        if not extra:
            return ""
        return f"{len(extra)} row(s) not in DuckDB's answer even without the LIMIT, e.g. {extra[0]}"
    missing = _unmatched(wr, gr)
    return f"{len(extra)} row(s) not in DuckDB's answer, e.g. {extra[0]}; {len(missing)} of DuckDB's missing, e.g. {missing[0]}"


def answer(got, want, sql, duck):
    """'same' (rows in order), 'same rows' (compare: as multisets, or ties
    at a final LIMIT, checked against duck's answer without it) or the
    difference."""
    if not tpch.diff(got, want):
        return "same"
    uncut = without_limit(sql)
    d = compare(got, want, duck.execute(uncut).to_arrow_table() if uncut else None)
    return "same rows" if not d else d[:200]
