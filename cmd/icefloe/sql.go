package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

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
