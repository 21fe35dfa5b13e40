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

	"github.com/icefloe/icefloe/internal/sqltok"
)

// HistoryEnv names the history file of the interactive mode.
const HistoryEnv = "ICEFLOE_HISTORY"

const replHelp = `Statements end with ';' and may span lines. Ctrl-C cancels the running
statement (or clears the input), Ctrl-D or \q quits. Tab completes keywords,
tables and columns; Up/Down and Ctrl-R search the history.

  \l              list catalogs            (Flight SQL GetCatalogs)
  \dn             list schemas             (GetDbSchemas)
  \dt [PATTERN]   list tables, LIKE pattern (GetTables); also .tables
  \d TABLE        describe a table's columns (GetTables with schemas); also .schema TABLE
  \q              quit; also .quit, exit, quit
  \?              this help; also .help
`

// repl reads statements from the terminal with line editing, history and
// completion, runs each at its ';' and goes on after errors. The prompt
// names the session's catalog and schema.
func (c *sqlClient) repl(ctx context.Context, opts sqlFlags, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	line.SetTabCompletionStyle(liner.TabPrints)
	hist := historyPath(opts)
	loadHistory(line, hist)

	names := c.sessionName(ctx, opts)
	comp := &completer{}
	comp.load(ctx, c)
	line.SetWordCompleter(comp.complete)

	intr := newInterrupts()
	defer intr.stop()
	prompt := names + "> "
	cont := strings.Repeat(" ", max(len(names)-2, 0)) + "-> "
	var buf strings.Builder
	for {
		p := prompt
		if buf.Len() > 0 {
			p = cont
		}
		text, err := line.Prompt(p)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			buf.Reset() // Ctrl-C at the prompt drops the input
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(out)
			return out.Flush()
		case err != nil:
			return fmt.Errorf("read the terminal: %w", err)
		}
		if buf.Len() == 0 {
			if cmd, ok := shortcut(text); ok {
				line.AppendHistory(strings.TrimSpace(text))
				saveHistory(line, hist)
				if cmd.quit {
					return out.Flush()
				}
				if err := c.runShortcut(ctx, intr, opts, cmd, w, out, stderr); err != nil {
					printREPLError(stderr, err)
				}
				continue
			}
		}
		buf.WriteString(text)
		buf.WriteByte('\n')
		stmts, rest, ok := completeStatements(buf.String())
		if !ok {
			continue
		}
		// liner's history is one line an entry.
		line.AppendHistory(strings.Join(strings.Fields(strings.TrimSuffix(buf.String(), rest)), " "))
		saveHistory(line, hist)
		buf.Reset()
		buf.WriteString(strings.TrimLeft(rest, " \t\r\n"))
		for _, st := range stmts {
			err := c.runCancellable(ctx, intr, opts.timeout, c.statement(st.Text), w, out, stderr)
			if err != nil {
				printREPLError(stderr, err)
				continue
			}
			if sqltok.FirstWord(st.Text) != "SELECT" {
				comp.load(ctx, c) // DDL may have made or dropped tables
			}
		}
	}
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
