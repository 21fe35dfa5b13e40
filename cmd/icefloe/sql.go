package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// Defaults of `icefloe sql`.
const (
	defaultSQLAddr   = "127.0.0.1:32010"
	defaultSQLFormat = "table"

	// AddrEnv, when set, replaces defaultSQLAddr as the default of --addr.
	AddrEnv = "ICEFLOE_ADDR"

	// endpointQueue is how many batches each endpoint's stream may read
	// ahead of the printer.
	endpointQueue = 8
	// maxRecvBytes bounds one gRPC message (one Arrow batch) from a server.
	maxRecvBytes = 1 << 30
	// closeTimeout bounds the best-effort cleanup calls (ClosePreparedStatement,
	// CloseSession) that run after a statement's own context may have ended.
	closeTimeout = 5 * time.Second
)

// errSchemaMismatch is returned when an endpoint streams a schema other than
// the FlightInfo's.
var errSchemaMismatch = errors.New("schema mismatch")

const sqlUsage = `usage: icefloe sql [flags] [STATEMENT]

Runs SQL against an icefloe coordinator over Arrow Flight SQL and prints the
results. With no STATEMENT, statements are read from standard input,
separated by ';' -- interactively, with a prompt, line editing, history and
completion, when standard input is a terminal (type \? there for help).
Every statement is prepared; one whose result has no columns runs as an
update and prints the number of rows affected. Ctrl-C cancels the running
statement.

--addr takes host[:port] (plaintext), grpc://host[:port] or
grpc+tls://host[:port]; the port defaults to 32010.

flags:
`

// sqlFlags are the parsed flags of `icefloe sql`.
type sqlFlags struct {
	addr    string
	format  string
	catalog string
	schema  string
	timeout time.Duration
	// Credentials (sqlauth.go).
	token, user, password string
	tlsCA                 string
	// Script and terminal behaviour (script.go, repl.go).
	onError     string
	history     string
	version     bool
	interactive bool
}

// runSQL is the `icefloe sql` command. Results go to stdout. A failed
// statement stops the run (unless --on-error continue); the returned
// error's text is the server's status message, after the statement's line
// when the statements came from a script (the caller prints it and exits
// non-zero).
func runSQL(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runSQLAlloc(ctx, memory.DefaultAllocator, args, stdin, stdout, stderr)
}

// runSQLAlloc is runSQL with the allocator of the Arrow streams it reads.
func runSQLAlloc(ctx context.Context, alloc memory.Allocator, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	opts, stmts, err := parseSQLArgs(args, stdin, stderr)
	if err != nil {
		return err
	}
	if opts.version {
		_, err := io.WriteString(stdout, versionText())
		return err
	}
	if len(stmts) == 0 && !opts.interactive {
		return nil
	}

	c, err := dialSQL(ctx, alloc, opts)
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.login(ctx, opts); err != nil {
		return err
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	w, err := newResultWriter(opts.format, out, stderr)
	if err != nil {
		return err
	}

	if opts.catalog != "" || opts.schema != "" {
		if err := c.setSession(ctx, opts); err != nil {
			return err
		}
		defer c.closeSession(ctx)
	}

	if opts.interactive {
		return c.repl(ctx, opts, w, out, stderr)
	}
	return c.runScript(ctx, opts, stmts, w, out, stderr)
}

// parseSQLArgs parses the flags and gathers the statements to run, from the
// positional arguments or else from stdin. Flags may follow the statement.
func parseSQLArgs(args []string, stdin io.Reader, stderr io.Writer) (sqlFlags, []sqltok.Statement, error) {
	var o sqlFlags
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := defaultSQLAddr
	if v := os.Getenv(AddrEnv); v != "" {
		addr = v
	}
	fs.StringVar(&o.addr, "addr", addr, "coordinator address, host[:port] ($"+AddrEnv+" when set)")
	fs.StringVar(&o.format, "format", defaultSQLFormat, "output format: table, csv or json (JSON Lines)")
	fs.StringVar(&o.catalog, "catalog", "", "session catalog (Flight SQL session option)")
	fs.StringVar(&o.schema, "schema", "", "session schema (Flight SQL session option)")
	fs.DurationVar(&o.timeout, "timeout", 0, "time limit of each statement, e.g. 30s (0: none)")
	addAuthFlags(fs, &o)
	addTerminalFlags(fs, &o)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sqlUsage)
		fs.PrintDefaults()
	}

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}

	switch o.format {
	case "table", "csv", "json":
	default:
		return o, nil, fmt.Errorf("unknown --format %q (want table, csv or json)", o.format)
	}
	if o.timeout < 0 {
		return o, nil, fmt.Errorf("negative --timeout %s", o.timeout)
	}
	if err := o.checkTerminalFlags(); err != nil {
		return o, nil, err
	}
	if err := o.credentials(terminalPrompt(stderr)); err != nil {
		return o, nil, err
	}

	var script string
	switch len(positional) {
	case 0:
		if stdin == nil {
			return o, nil, errors.New("no statement given")
		}
		if isTerminal(stdin) && isTerminal(os.Stdout) {
			// liner edits on the process's own terminal; with stdout
			// redirected, stdin is read as a script.
			o.interactive = true
			return o, nil, nil
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return o, nil, fmt.Errorf("read statements: %w", err)
		}
		script = string(b)
	case 1:
		script = positional[0]
	default:
		return o, nil, fmt.Errorf("expected one SQL statement, got %d arguments (quote the statement)", len(positional))
	}
	return o, sqltok.SplitLines(script), nil
}

// sqlClient is one connection to a coordinator plus the worker connections
// its endpoints lead to.
type sqlClient struct {
	alloc   memory.Allocator
	cl      *flightsql.Client
	cookies flight.CookieMiddleware
	auth    *bearer
	// workers are the clients of the locations endpoints lead to.
	workers *flightclient.Pool
	// progress counts the running statement's endpoints (nil: none shown).
	progress *progress
}

func dialSQL(ctx context.Context, alloc memory.Allocator, o sqlFlags) (*sqlClient, error) {
	tlsCfg, err := clientTLS(o.tlsCA)
	if err != nil {
		return nil, err
	}
	target, useTLS, err := parseAddr(o.addr)
	if err != nil {
		return nil, err
	}
	auth := &bearer{}
	if o.token != "" {
		auth.set(o.token)
	}
	opts := flightclient.Options{TLS: tlsCfg, MaxRecvBytes: maxRecvBytes, Authorization: auth.authorization}
	// The coordinator keeps session options under a cookie.
	cookies := flight.NewCookieMiddleware()
	coordOpts := opts
	coordOpts.Middleware = []flight.ClientMiddleware{flight.CreateClientMiddleware(cookies)}
	fc, err := flightclient.DialTarget(target, useTLS, coordOpts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.addr, err)
	}
	cl := &flightsql.Client{Client: fc, Alloc: alloc}
	return &sqlClient{
		alloc:   alloc,
		cl:      cl,
		cookies: cookies,
		auth:    auth,
		workers: flightclient.NewPool(opts, 0),
	}, nil
}

func (c *sqlClient) close() {
	_ = c.workers.Close()
	_ = c.cl.Close()
}

// parseAddr turns --addr into a gRPC target and whether it uses TLS:
// host:port is plaintext, a URL names its scheme.
func parseAddr(addr string) (target string, useTLS bool, err error) {
	if !strings.Contains(addr, "://") {
		return withDefaultPort(addr), false, nil
	}
	target, useTLS, err = flightclient.Parse(addr)
	if err != nil {
		return "", false, fmt.Errorf("bad --addr: %w", err)
	}
	return withDefaultPort(target), useTLS, nil
}

// clientTLS is the TLS configuration of grpc+tls servers: the system's
// roots, or the CAs of --tls-ca.
func clientTLS(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// setSession sets the catalog and schema session options.
func (c *sqlClient) setSession(ctx context.Context, o sqlFlags) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	opts := map[string]any{}
	if o.catalog != "" {
		opts["catalog"] = o.catalog
	}
	if o.schema != "" {
		opts["schema"] = o.schema
	}
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		return err
	}
	var header, trailer metadata.MD
	res, err := c.cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: vals},
		grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		return fmt.Errorf("set session options: %w", rpcErr(err))
	}
	// The cookie middleware can miss the cookie of a streaming call whose
	// context ends as it completes (arrow-go reads headers only when it wins
	// that race), so hand it the session cookie here too.
	if h, ok := c.cookies.(flight.ClientHeadersMiddleware); ok {
		h.HeadersReceived(ctx, metadata.Join(header, trailer))
	}
	if errs := res.GetErrors(); len(errs) > 0 {
		names := make([]string, 0, len(errs))
		for name := range errs {
			names = append(names, name)
		}
		sort.Strings(names)
		msgs := make([]string, len(names))
		for i, name := range names {
			msgs[i] = fmt.Sprintf("%s=%v: %s", name, opts[name], errs[name].GetValue())
		}
		return fmt.Errorf("server rejected session options: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// closeSession ends the session, best effort.
func (c *sqlClient) closeSession(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	_, _ = c.cl.CloseSession(ctx, &flight.CloseSessionRequest{})
}

// runStatement runs a job (a statement: c.statement) within timeout (0:
// none).
func (c *sqlClient) runStatement(ctx context.Context, timeout time.Duration, run job, w resultWriter) error {
	if timeout <= 0 {
		return run(ctx, w)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := run(ctx, w)
	if dl, _ := ctx.Deadline(); err != nil && !time.Now().Before(dl) {
		// Whatever failed first (a server noticing the deadline resets its
		// stream), the cause is the time limit.
		return &statusError{st: status.Newf(codes.DeadlineExceeded, "statement exceeded --timeout %s", timeout)}
	}
	return err
}

// execute prepares stmt and runs it as a query or, when the server marks it
// an update or its dataset schema has no columns, as an update.
func (c *sqlClient) execute(ctx context.Context, stmt string, w resultWriter) error {
	prep, err := c.cl.Prepare(ctx, stmt)
	if err != nil {
		return rpcErr(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = prep.Close(cctx)
	}()

	update, ok := prep.IsUpdate()
	if !ok {
		ds := prep.DatasetSchema()
		update = ds == nil || ds.NumFields() == 0
	}
	if polled, err := c.executePolled(ctx, prep, update, w); polled || err != nil {
		return err
	}
	// A server without incremental execution (poll.go).
	if update {
		n, err := prep.ExecuteUpdate(ctx)
		if err != nil {
			return rpcErr(err)
		}
		return w.affected(n)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		return rpcErr(err)
	}
	return c.result(ctx, prep, info, w)
}

// result reads a query's FlightInfo: its schema, then its endpoints.
func (c *sqlClient) result(ctx context.Context, prep *flightsql.PreparedStatement, info *flight.FlightInfo, w resultWriter) (err error) {
	schema := prep.DatasetSchema()
	if len(info.GetSchema()) > 0 {
		if schema, err = flight.DeserializeSchema(info.GetSchema(), c.alloc); err != nil {
			return fmt.Errorf("read result schema: %w", err)
		}
	}
	if schema == nil {
		return errors.New("server sent no result schema")
	}
	return c.fetch(ctx, info.GetEndpoint(), schema, w)
}

// fetch pulls all endpoints in parallel and writes their batches in endpoint
// order. The first error cancels every stream.
func (c *sqlClient) fetch(ctx context.Context, eps []*flight.FlightEndpoint, schema *arrow.Schema, w resultWriter) error {
	if err := w.begin(schema); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}

	c.progress.endpoints(len(eps))
	chs := make([]chan arrow.RecordBatch, len(eps))
	for i, ep := range eps {
		chs[i] = make(chan arrow.RecordBatch, endpointQueue)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.pull(ctx, i, ep, schema, chs[i]); err != nil {
				fail(err)
			}
			c.progress.endpointDone()
			close(chs[i])
		}()
	}

	// Drain every channel even after a failure so producers never block.
	for _, ch := range chs {
		for rec := range ch {
			if ctx.Err() == nil {
				if err := w.write(rec); err != nil {
					fail(err)
				}
			}
			rec.Release()
		}
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.end()
}

// pull streams one endpoint into out (the receiver releases the batches).
// It tries the endpoint's locations in order, moving to the next one only
// while no row has arrived; an endpoint without locations (or with the
// reuse-connection location) is read from the coordinator.
func (c *sqlClient) pull(ctx context.Context, idx int, ep *flight.FlightEndpoint, schema *arrow.Schema, out chan<- arrow.RecordBatch) error {
	if ep.GetTicket() == nil {
		return fmt.Errorf("endpoint %d: no ticket", idx)
	}
	var locs, reuse []string
	for _, l := range ep.GetLocation() {
		if l.GetUri() == flight.LocationReuseConnection {
			reuse = []string{""}
			continue
		}
		locs = append(locs, l.GetUri())
	}
	locs = append(locs, reuse...) // the coordinator only after the others
	if len(locs) == 0 {
		locs = []string{""}
	}
	err := c.workers.Pull(ctx, locs, ep.GetTicket().GetTicket(), flightclient.PullOptions{
		Allocator: c.alloc,
		Client: func(loc string) (flight.Client, bool) {
			return c.cl.Client, loc == ""
		},
		CheckSchema: func(got *arrow.Schema) error {
			if !sameSchema(schema, got) {
				return fmt.Errorf("%w: result has %s, stream has %s", errSchemaMismatch, schemaText(schema), schemaText(got))
			}
			return nil
		},
	}, flightclient.SendTo(ctx, out, flightclient.Batch))
	var pe *flightclient.PullError
	if !errors.As(err, &pe) {
		return err
	}
	var b strings.Builder
	for i, a := range pe.Attempts {
		name := a.Location
		if name == "" {
			name = "coordinator"
		}
		if i == len(pe.Attempts)-1 {
			// The last attempt decided: its error is the one wrapped.
			return fmt.Errorf("endpoint %d: %s%s: %w", idx, b.String(), name, rpcErr(a.Err))
		}
		fmt.Fprintf(&b, "%s: %v; ", name, rpcErr(a.Err))
	}
	return fmt.Errorf("endpoint %d: %w", idx, err)
}

// sameSchema compares names, types and nullability, ignoring metadata, as
// the ADBC and JDBC drivers do.
func sameSchema(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func schemaText(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		null := ""
		if !f.Nullable {
			null = " not null"
		}
		parts[i] = fmt.Sprintf("%s %s%s", f.Name, f.Type, null)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// statusError shows a gRPC status as its message alone.
type statusError struct{ st *status.Status }

func (e *statusError) Error() string {
	if msg := e.st.Message(); msg != "" {
		return msg
	}
	return e.st.Code().String()
}

func (e *statusError) GRPCStatus() *status.Status { return e.st }

// rpcErr replaces an error that carries a gRPC status (possibly wrapped, e.g.
// by the IPC reader) with one whose text is the status message.
func rpcErr(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if _, ok := se.(*statusError); ok {
		return err
	}
	return &statusError{st: se.GRPCStatus()}
}

// resultWriter prints statement results in one format.
type resultWriter interface {
	// begin starts a result with the given columns.
	begin(schema *arrow.Schema) error
	// write prints (or buffers) a batch; the caller keeps ownership.
	write(rec arrow.RecordBatch) error
	// end finishes the result begun last.
	end() error
	// affected reports an update's row count (-1: unknown).
	affected(n int64) error
}

func newResultWriter(format string, out, stderr io.Writer) (resultWriter, error) {
	switch format {
	case "table":
		return &tableWriter{out: out}, nil
	case "csv":
		return &csvWriter{out: out, stderr: stderr}, nil
	case "json":
		return &jsonWriter{out: out}, nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

func affectedText(n int64) string {
	switch {
	case n < 0:
		return "OK"
	case n == 1:
		return "1 row affected"
	}
	return fmt.Sprintf("%d rows affected", n)
}

// csvWriter prints RFC 4180 CSV with a header line; NULL is an empty field.
// An update's row count goes to stderr, keeping stdout CSV.
type csvWriter struct {
	out    io.Writer
	stderr io.Writer
	w      *csv.Writer
}

func (c *csvWriter) begin(schema *arrow.Schema) error {
	c.w = csv.NewWriter(c.out)
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return c.w.Write(names)
}

func (c *csvWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	row := make([]string, len(cols))
	for r := range int(rec.NumRows()) {
		for i, col := range cols {
			if col.IsNull(r) {
				row[i] = ""
			} else {
				row[i] = cellText(col, r)
			}
		}
		if err := c.w.Write(row); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) end() error {
	c.w.Flush()
	return c.w.Error()
}

func (c *csvWriter) affected(n int64) error {
	_, err := io.WriteString(c.stderr, affectedText(n)+"\n")
	return err
}

// jsonWriter prints one JSON object per row (JSON Lines), keys in column
// order. An update prints {"rows_affected": N}.
type jsonWriter struct {
	out   io.Writer
	names [][]byte // JSON-encoded column names
	buf   []byte
}

func (j *jsonWriter) begin(schema *arrow.Schema) error {
	j.names = make([][]byte, schema.NumFields())
	for i, f := range schema.Fields() {
		j.names[i] = appendJSONString(nil, f.Name)
	}
	return nil
}

func (j *jsonWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for r := range int(rec.NumRows()) {
		b := append(j.buf[:0], '{')
		for i, col := range cols {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, j.names[i]...)
			b = append(b, ':')
			b = appendJSONValue(b, col, r)
		}
		b = append(b, '}', '\n')
		if _, err := j.out.Write(b); err != nil {
			return err
		}
		j.buf = b
	}
	return nil
}

func (j *jsonWriter) end() error { return nil }

func (j *jsonWriter) affected(n int64) error {
	_, err := fmt.Fprintf(j.out, "{\"rows_affected\":%d}\n", n)
	return err
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	case arrow.DICTIONARY:
		return isNumeric(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// escapeControl makes a table cell one line: \n, \r, \t and other control
// characters are written as escapes, and so is a backslash.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cellText is the text of the non-null value arr[i]: decimals exact at their
// scale, timestamps ISO 8601 (with the offset when the type has a zone),
// dates YYYY-MM-DD, binary as \x hex, lists, structs and maps as JSON.
func cellText(arr arrow.Array, i int) string {
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float16:
		return formatFloat(float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return formatFloat(float64(a.Value(i)), 32)
	case *array.Float64:
		return formatFloat(a.Value(i), 64)
	case *array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return decimalText(arr, i)
	case array.StringLike:
		return a.Value(i)
	case interface{ Value(int) []byte }:
		return `\x` + hex.EncodeToString(a.Value(i))
	case *array.Date32:
		return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format(time.DateOnly)
	case *array.Date64:
		return time.UnixMilli(int64(a.Value(i))).UTC().Format(time.DateOnly)
	case *array.Time32:
		return timeOfDay(int64(a.Value(i)) * int64(a.DataType().(*arrow.Time32Type).Unit.Multiplier()))
	case *array.Time64:
		return timeOfDay(int64(a.Value(i)) * int64(a.DataType().(*arrow.Time64Type).Unit.Multiplier()))
	case *array.Timestamp:
		return timestampText(int64(a.Value(i)), a.DataType().(*arrow.TimestampType))
	case *array.Dictionary:
		return cellText(a.Dictionary(), a.GetValueIndex(i))
	case *array.Map, array.ListLike, *array.Struct:
		return string(appendJSONValue(nil, arr, i))
	}
	return arr.ValueStr(i)
}

func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'g', -1, bits)
}

// decimalText formats a decimal array's value exactly, with all the digits
// of its scale (12.50 for decimal(12,2)).
func decimalText(arr arrow.Array, i int) string {
	var n *big.Int
	switch a := arr.(type) {
	case *array.Decimal32:
		n = big.NewInt(int64(a.Value(i)))
	case *array.Decimal64:
		n = big.NewInt(int64(a.Value(i)))
	case *array.Decimal128:
		n = a.Value(i).BigInt()
	case *array.Decimal256:
		n = a.Value(i).BigInt()
	default:
		return arr.ValueStr(i)
	}
	scale := int(arr.DataType().(arrow.DecimalType).GetScale())
	digits := new(big.Int).Abs(n).String()
	switch {
	case scale < 0:
		if digits != "0" {
			digits += strings.Repeat("0", -scale)
		}
	case scale > 0:
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if n.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// timeOfDay formats nanoseconds since midnight as HH:MM:SS[.fraction].
func timeOfDay(ns int64) string {
	return time.Unix(0, ns).UTC().Format("15:04:05.999999999")
}

func timestampText(v int64, t *arrow.TimestampType) string {
	var tm time.Time
	switch t.Unit {
	case arrow.Second:
		tm = time.Unix(v, 0)
	case arrow.Millisecond:
		tm = time.UnixMilli(v)
	case arrow.Microsecond:
		tm = time.UnixMicro(v)
	default:
		tm = time.Unix(0, v)
	}
	if t.TimeZone == "" {
		return tm.UTC().Format("2006-01-02T15:04:05.999999999")
	}
	loc, err := t.GetZone()
	if err != nil {
		loc = time.UTC
	}
	return tm.In(loc).Format("2006-01-02T15:04:05.999999999Z07:00")
}

// appendJSONValue appends arr[i] as JSON: null, true/false, numbers
// (decimals exact), strings (temporal and binary values in their text form),
// arrays for lists, objects for structs and maps (keys as text).
func appendJSONValue(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64,
		*array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return append(b, cellText(arr, i)...)
	case *array.Float16, *array.Float32, *array.Float64:
		s := cellText(arr, i)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return appendJSONString(b, s)
		}
		return append(b, s...)
	case *array.Dictionary:
		return appendJSONValue(b, a.Dictionary(), a.GetValueIndex(i))
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		b = append(b, '{')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			key := "null"
			if !keys.IsNull(int(j)) {
				key = cellText(keys, int(j))
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			b = appendJSONValue(b, items, int(j))
		}
		return append(b, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		values := a.ListValues()
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = appendJSONValue(b, values, int(j))
		}
		return append(b, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := range a.NumField() {
			if f > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Field(f).Name)
			b = append(b, ':')
			b = appendJSONValue(b, a.Field(f), i)
		}
		return append(b, '}')
	}
	return appendJSONString(b, cellText(arr, i))
}

// appendJSONString appends s as a JSON string without HTML escaping;
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			b = append(b, `\u`...)
			b = append(b, hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
