package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
)

// Defaults for Options.
const (
	DefaultMemoryLimit = "2GB"
)

// Options configure one embedded database.
type Options struct {
	// Threads DuckDB may use; 0 means the number of CPUs.
	Threads int
	// MemoryLimit is DuckDB's memory_limit, e.g. "2GB".
	MemoryLimit string
	// MaxTempDirSize is DuckDB's max_temp_directory_size in bytes: how
	// much the engine may spill to TempDir before a statement fails with
	// an out-of-disk error; 0 keeps DuckDB's default (90% of the free
	// disk).
	MaxTempDirSize int64
	// TempDir is the private spill folder. It is created with mode 0700
	// and emptied at Open of what a process that ended without Close left
	// there (unless another live engine holds it). Empty means a new
	// folder under os.TempDir that Close removes; Open then also removes
	// the folders there of engines whose process ended without Close.
	TempDir string
	// ReadDirs are local directories (absolute paths) whose files the
	// engine's own SQL may read with read_parquet although external access
	// is off (DuckDB's allowed_directories): local warehouses, whose data
	// files workers then scan with DuckDB's Parquet reader. Client SQL
	// never gets there: the planner refuses table functions.
	ReadDirs []string
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Threads < 0 {
		errs = append(errs, fmt.Errorf("engine: threads must be >= 0, got %d", o.Threads))
	}
	if err := validateMemoryLimit(o.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	if o.MaxTempDirSize < 0 {
		errs = append(errs, fmt.Errorf("engine: max temp directory size must be >= 0, got %d", o.MaxTempDirSize))
	}
	if strings.ContainsAny(o.TempDir, "'\\") {
		errs = append(errs, errors.New("engine: temp dir has a quote"))
	}
	for _, d := range o.ReadDirs {
		if !filepath.IsAbs(d) || strings.ContainsAny(d, "'\\") {
			errs = append(errs, fmt.Errorf("engine: read dir %q is not an absolute path without quotes", d))
		}
	}
	return errors.Join(errs...)
}

// Engine is one locked-down in-memory DuckDB database.
type Engine struct {
	db        *sql.DB
	boot      *sql.Conn
	readDirs  []string // cleaned, each ending in a separator
	tempDir   string
	ownTemp   bool
	spillLock *os.File // held while the engine runs (spill.go)
	viewCount atomic.Int64
	memLimit  int64 // memory_limit in bytes
}

// MemoryLimit is the engine's DuckDB memory_limit in bytes.
func (e *Engine) MemoryLimit() int64 { return e.memLimit }

// Open starts a database and applies the lockdown on a bootstrap
// connection, in the order DuckDB accepts it.
func Open(ctx context.Context, o Options) (*Engine, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Threads == 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.MemoryLimit == "" {
		o.MemoryLimit = DefaultMemoryLimit
	}
	e := &Engine{tempDir: o.TempDir}
	e.memLimit, _ = ParseMemoryLimit(o.MemoryLimit) // Validate checked it
	if e.tempDir == "" {
		dir, err := os.MkdirTemp("", spillPattern)
		if err != nil {
			return nil, fmt.Errorf("engine: spill folder: %w", err)
		}
		e.tempDir, e.ownTemp = dir, true
	} else if err := os.MkdirAll(e.tempDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: spill folder: %w", err)
	}
	lock, err := claimSpill(e.tempDir)
	if err != nil {
		e.cleanup()
		return nil, err
	}
	e.spillLock = lock
	if e.ownTemp {
		reclaimSpills(e.tempDir)
	}
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("engine: open duckdb: %w", err)
	}
	e.db = sql.OpenDB(connector)
	boot, err := e.db.Conn(ctx)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("engine: bootstrap connection: %w", err)
	}
	e.boot = boot
	if err := registerStreams(boot); err != nil {
		e.Close()
		return nil, err
	}
	settings := []string{
		fmt.Sprintf("SET threads = %d", o.Threads),
		fmt.Sprintf("SET memory_limit = '%s'", o.MemoryLimit),
		fmt.Sprintf("SET temp_directory = '%s'", e.tempDir),
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
		"SET GLOBAL TimeZone = 'UTC'",
	}
	if o.MaxTempDirSize > 0 {
		settings = append(settings, fmt.Sprintf("SET max_temp_directory_size = '%dB'", o.MaxTempDirSize))
	}
	if len(o.ReadDirs) > 0 {
		quoted := make([]string, len(o.ReadDirs))
		for i, d := range o.ReadDirs {
			d = filepath.Clean(d) + string(filepath.Separator)
			e.readDirs = append(e.readDirs, d)
			quoted[i] = QuoteString(d)
		}
		settings = append(settings, "SET allowed_directories = ["+strings.Join(quoted, ", ")+"]",
			// Footers of the (immutable) files read directly are parsed
			// once, not at every query; DuckDB checks the file's
			// modification time before using a cached footer.
			"SET parquet_metadata_cache = true")
	}
	settings = append(settings,
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	)
	for _, s := range settings {
		if _, err := boot.ExecContext(ctx, s); err != nil {
			e.Close()
			return nil, fmt.Errorf("engine: lockdown %q: %w", s, err)
		}
	}
	return e, nil
}

// CanRead tells whether the engine's own SQL may read the local file at
// path (absolute, under one of Options.ReadDirs).
func (e *Engine) CanRead(path string) bool { return Under(path, e.readDirs) }

// Under tells whether path is an absolute, clean path inside one of dirs
// (absolute directories, with or without a trailing separator).
func Under(path string, dirs []string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	for _, d := range dirs {
		if strings.HasPrefix(path, filepath.Clean(d)+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// ReadDirs are the directories CanRead allows, each ending in a separator.
func (e *Engine) ReadDirs() []string { return e.readDirs }

// Close closes the database and removes a spill folder it created.
func (e *Engine) Close() error {
	var err error
	if e.boot != nil {
		err = e.boot.Close()
	}
	if e.db != nil {
		err = errors.Join(err, e.db.Close())
	}
	e.cleanup()
	return err
}

func (e *Engine) cleanup() {
	if e.ownTemp {
		os.RemoveAll(e.tempDir)
	}
	if e.spillLock != nil {
		e.spillLock.Close()
		e.spillLock = nil
	}
}

// Conn is one connection: its temp tables are private to it. A Conn is not
// safe for concurrent use.
type Conn struct {
	e     *Engine
	c     *sql.Conn
	arrow *duckdb.Arrow
	held  []func()
	raw   bindings.Connection // the C connection (raw.go)
	// kept are the statements QueryKept prepared, by text.
	kept map[string]keptStatement
}

// Conn returns a new connection; the caller closes it.
func (e *Engine) Conn(ctx context.Context) (*Conn, error) {
	c, err := e.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("engine: connection: %w", err)
	}
	conn := &Conn{e: e, c: c}
	err = c.Raw(func(dc any) error {
		var err error
		if conn.arrow, err = duckdb.NewArrowFromConn(dc.(driver.Conn)); err != nil {
			return err
		}
		conn.raw, err = rawConn(dc)
		return err
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("engine: arrow interface: %w", err)
	}
	return conn, nil
}

// Close returns the connection; its temp tables are dropped.
func (c *Conn) Close() error {
	for q, k := range c.kept {
		bindings.DestroyPrepare(&k.st)
		delete(c.kept, q)
	}
	// Temp tables must not outlive the session that made them: sql.DB pools
	// connections, so drop them by closing the driver connection for good.
	_ = c.c.Raw(func(any) error { return driver.ErrBadConn })
	err := c.c.Close()
	for _, release := range c.held {
		release()
	}
	c.held = nil
	return err
}

// Holds tells whether the connection holds anything for Close to release
// (Hold).
func (c *Conn) Holds() bool { return len(c.held) > 0 }

// Hold has Close call release once the connection is closed: for what the
// connection's views read lazily, such as the cached data files behind a
// view over read_parquet, which must outlive every query on them.
func (c *Conn) Hold(release func()) { c.held = append(c.held, release) }

// DB is the connection for database/sql use.
func (c *Conn) DB() *sql.Conn { return c.c }

// Exec runs one statement that returns no rows; text that is not exactly
// one statement is refused (ErrStatement) before anything runs. It is for
// SQL icefloe builds; statements with client text go through ExecChecked.
func (c *Conn) Exec(ctx context.Context, query string, args ...any) error {
	return c.Prepared(ctx, AnyStatement, query, func(st *duckdb.Stmt) error {
		_, err := st.ExecContext(ctx, namedArgs(args))
		return err
	})
}

// ExecChecked runs query, which holds client text, after DuckDB's parser
// confirmed it is exactly one statement of the given kind (see Prepared).
func (c *Conn) ExecChecked(ctx context.Context, kind duckdb.StmtType, query string, args ...any) error {
	return c.Prepared(ctx, kind, query, func(st *duckdb.Stmt) error {
		_, err := st.ExecContext(ctx, namedArgs(args))
		return err
	})
}

func namedArgs(args []any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// LoadTable reads rdr to its end into a new temp table called name (a
// plain identifier chosen by the caller, not client input). Loading into a
// table rather than querying a registered Arrow view keeps every optimizer
// correct (duckdb/duckdb#17012) and lets the table be scanned more than
// once (duckdb/duckdb#19040).
func (c *Conn) LoadTable(ctx context.Context, name string, rdr array.RecordReader) error {
	view := fmt.Sprintf("__icefloe_in_%d", c.e.viewCount.Add(1))
	release, err := c.arrow.RegisterView(rdr, view)
	if err != nil {
		return fmt.Errorf("engine: register arrow stream: %w", err)
	}
	err = c.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM %s", Quote(name), view))
	if dropErr := c.Exec(ctx, "DROP VIEW IF EXISTS "+view); err == nil && dropErr != nil {
		err = dropErr
	}
	release()
	return err
}

// Quote quotes an identifier for DuckDB.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteString quotes a string literal for DuckDB.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// WithoutExcerpt drops the excerpt of the SQL text ("LINE 1: …" and its
// caret) DuckDB appends to a message: when the SQL is icefloe's rewrite of
// a client's statement, the excerpt shows what the client never wrote.
func WithoutExcerpt(msg string) string {
	if i := strings.Index(msg, "\nLINE "); i >= 0 {
		msg = strings.TrimRight(msg[:i], "\n")
	}
	return msg
}
