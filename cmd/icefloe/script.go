package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// defaultSQLPort is the port of an --addr that names none: the port
// `serve` and `coordinator` listen on by default.
const defaultSQLPort = "32010"

// Exit codes of `icefloe sql` besides 0 and 1.
const exitInterrupted = 130 // as a shell reports a command ended by SIGINT

// errInterrupted is the cause of a statement cancelled with Ctrl-C.
var errInterrupted = errors.New("cancelled (Ctrl-C)")

// exitError is an error with the process exit code it asks for.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// addTerminalFlags registers the flags of script and interactive use.
func addTerminalFlags(fs *flag.FlagSet, o *sqlFlags) {
	fs.StringVar(&o.onError, "on-error", "stop", "when a statement of a script fails: stop (exit 1), or continue with the next one (exit 1 at the end)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.history, "history", "", "history file of the interactive mode (default $"+HistoryEnv+", else ~/.icefloe_history; \"-\": none)")
}

func (o *sqlFlags) checkTerminalFlags() error {
	switch o.onError {
	case "stop", "continue":
		return nil
	}
	return fmt.Errorf("unknown --on-error %q (want stop or continue)", o.onError)
}

// withDefaultPort adds the default port to a host without one.
func withDefaultPort(hostport string) string {
	if _, port, err := net.SplitHostPort(hostport); err == nil && port != "" {
		return hostport
	}
	host := strings.TrimSuffix(hostport, ":")
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // a bare IPv6 address
	}
	return host + ":" + defaultSQLPort
}

// runScript runs the statements of a script (or the one statement of the
// command line). A failure names the statement's line when the script
// came from standard input; with --on-error continue the script goes on
// and the run fails at its end. Ctrl-C cancels the running statement and
// ends the run with exit code 130.
func (c *sqlClient) runScript(ctx context.Context, opts sqlFlags, stmts []sqltok.Statement, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	intr := newInterrupts()
	defer intr.stop()
	failed := 0
	for _, st := range stmts {
		err := c.runCancellable(ctx, intr, opts.timeout, c.statement(st.Text), w, out, stderr)
		if err == nil {
			continue
		}
		if errors.Is(err, errInterrupted) {
			return &exitError{code: exitInterrupted, err: err}
		}
		if len(stmts) > 1 || st.Line > 1 {
			err = fmt.Errorf("line %d: %w", st.Line, err)
		}
		if opts.onError == "stop" {
			return err
		}
		failed++
		fmt.Fprintln(stderr, "icefloe: "+err.Error())
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d statements failed", failed, len(stmts))
	}
	return nil
}

// job is one thing to run and print: a statement or a shortcut's calls.
type job func(ctx context.Context, w resultWriter) error

// statement is the job of one SQL statement.
func (c *sqlClient) statement(stmt string) job {
	return func(ctx context.Context, w resultWriter) error { return c.execute(ctx, stmt, w) }
}

// runCancellable runs a job within timeout (0: none) with a progress line
// (when stderr is a terminal) and flushes its output. A Ctrl-C while it
// runs cancels it: the error is then errInterrupted.
func (c *sqlClient) runCancellable(ctx context.Context, intr *interrupts, timeout time.Duration, run job, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := intr.watch(func() { cancel(errInterrupted) })
	defer done()

	prog := startProgress(stderr, out)
	c.progress = prog
	err := c.runStatement(ctx, timeout, run, prog.wrap(w))
	prog.stop()
	c.progress = nil
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil && errors.Is(context.Cause(ctx), errInterrupted) {
		return errInterrupted
	}
	return err
}

// interrupts turns SIGINT into a cancellation of the running statement
// instead of the end of the process.
type interrupts struct {
	ch chan os.Signal
}

func newInterrupts() *interrupts {
	i := &interrupts{ch: make(chan os.Signal, 1)}
	signal.Notify(i.ch, os.Interrupt)
	return i
}

func (i *interrupts) stop() { signal.Stop(i.ch) }

// watch calls cancel on the next SIGINT until the returned func is called.
func (i *interrupts) watch(cancel func()) (done func()) {
	// A Ctrl-C from before the statement started is not for it.
	select {
	case <-i.ch:
	default:
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-i.ch:
			cancel()
		case <-quit:
		}
	}()
	return func() { close(quit); <-finished }
}

// versionText is what --version prints: the binary's version and those of
// the engines it embeds.
func versionText() string {
	return "icefloe " + version() + "\n"
}
