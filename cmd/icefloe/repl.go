package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// HistoryEnv names the history file of the interactive mode.
const HistoryEnv = "ICEFLOE_HISTORY"

const replHelp = `Statements end with ';' and may span lines. Ctrl-C cancels the running
statement (or clears the input), Ctrl-D or \q quits. Tab completes keywords,
tables and columns; Up/Down and Ctrl-R search the history.

  \l              SHOW CATALOGS; also .catalogs, .databases
  \dn [PATTERN]   SHOW SCHEMAS [LIKE PATTERN]
  \dt [PATTERN]   SHOW TABLES [LIKE PATTERN]; schema.PATTERN: another schema's; also .tables
  \d TABLE        DESCRIBE TABLE; also .schema TABLE (\d alone: SHOW TABLES)
  \q              quit; also .quit, exit, quit
  \?              this help; also .help
`

// replSession is the state of an interactive session.
type replSession struct {
	c      *sqlClient
	opts   sqlFlags
	line   *liner.State
	hist   string
	comp   *completer
	intr   *interrupts
	w      resultWriter
	out    *bufio.Writer
	stderr io.Writer
	buf    strings.Builder // the statement typed so far
}

// repl reads statements from the terminal with line editing, history and
// completion, runs each at its ';' and goes on after errors. The prompt
// names the session's catalog and schema.
func (c *sqlClient) repl(ctx context.Context, opts sqlFlags, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	s := &replSession{c: c, opts: opts, line: liner.NewLiner(), hist: historyPath(opts), comp: &completer{},
		intr: newInterrupts(), w: w, out: out, stderr: stderr}
	defer s.line.Close()
	defer s.intr.stop()
	s.line.SetCtrlCAborts(true)
	s.line.SetTabCompletionStyle(liner.TabPrints)
	loadHistory(s.line, s.hist)
	s.comp.load(ctx, c)
	s.line.SetWordCompleter(s.comp.complete)

	names := c.sessionName(ctx, opts)
	prompt := names + "> "
	cont := strings.Repeat(" ", max(len(names)-2, 0)) + "-> "
	for {
		p := prompt
		if s.buf.Len() > 0 {
			p = cont
		}
		text, err := s.line.Prompt(p)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			s.buf.Reset() // Ctrl-C at the prompt drops the input
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(out)
			return out.Flush()
		case err != nil:
			return fmt.Errorf("read the terminal: %w", err)
		}
		if quit := s.enter(ctx, text); quit {
			return out.Flush()
		}
	}
}

// enter takes one typed line: a shortcut, or SQL that runs once a ';'
// ends a statement. It reports whether the session ends.
func (s *replSession) enter(ctx context.Context, text string) (quit bool) {
	if s.buf.Len() == 0 {
		if cmd, ok := shortcut(text); ok {
			s.remember(text)
			if cmd.quit {
				return true
			}
			if err := s.c.runShortcut(ctx, s.intr, s.opts, cmd, s.w, s.out, s.stderr); err != nil {
				printREPLError(s.stderr, err)
			}
			return false
		}
	}
	s.buf.WriteString(text)
	s.buf.WriteByte('\n')
	stmts, rest, ok := completeStatements(s.buf.String())
	if !ok {
		return false
	}
	s.remember(strings.TrimSuffix(s.buf.String(), rest))
	s.buf.Reset()
	s.buf.WriteString(strings.TrimLeft(rest, " \t\r\n"))
	for _, st := range stmts {
		err := s.c.runCancellable(ctx, s.intr, s.opts.timeout, s.c.statement(st.Text), s.w, s.out, s.stderr)
		if err != nil {
			printREPLError(s.stderr, err)
			continue
		}
		if p, err := parse.Parse(st.Text); err != nil || !p.Info().Rows {
			s.comp.load(ctx, s.c) // an update may have made or dropped tables
		}
	}
	return false
}

// remember adds an entry to the history and saves it. liner keeps one
// line an entry: the lines of a statement are joined with spaces.
func (s *replSession) remember(entry string) {
	entry = strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(entry))
	if entry == "" {
		return
	}
	s.line.AppendHistory(entry)
	saveHistory(s.line, s.hist)
}

func printREPLError(stderr io.Writer, err error) {
	fmt.Fprintln(stderr, "ERROR: "+err.Error())
}

// completeStatements returns the statements of input that a ';' ended and
// the text after the last ';'; ok is false while no statement is complete
// (no ';' outside quotes and comments yet, or an unterminated literal).
func completeStatements(input string) (stmts []sqltok.Statement, rest string, ok bool) {
	toks, err := sqltok.Tokenize(input)
	if err != nil {
		return nil, "", false
	}
	end := -1
	for _, t := range toks {
		if t.IsOp(";") {
			end = t.End
		}
	}
	if end < 0 {
		return nil, "", false
	}
	return sqltok.SplitLines(input[:end]), input[end:], true
}

// historyPath is the history file: --history, $ICEFLOE_HISTORY or
// ~/.icefloe_history; "" for none.
func historyPath(o sqlFlags) string {
	p := o.history
	if p == "" {
		p = os.Getenv(HistoryEnv)
	}
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		p = filepath.Join(home, ".icefloe_history")
	}
	if p == "-" {
		return ""
	}
	return p
}

func loadHistory(line *liner.State, path string) {
	if path == "" {
		return
	}
	if f, err := os.Open(path); err == nil {
		_, _ = line.ReadHistory(f)
		f.Close()
	}
}

// saveHistory rewrites the history file (mode 0600: statements may hold
// literals worth keeping private), best effort.
func saveHistory(line *liner.State, path string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = line.WriteHistory(f)
}
