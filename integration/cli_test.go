package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is `icefloe sql` on a pseudo-terminal: what it printed and a
// way to type.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // offset after the last expect
	done chan error
}

func startTerminal(t *testing.T, bin string, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), append([]string{"TERM=xterm"}, env...)...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
	})
	return term
}

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.pty.WriteString(s); err != nil {
		term.t.Fatalf("type %q: %v", s, err)
	}
}

// expect waits for re to match what was printed since the last expect
// and returns the text up to the end of the match.
func (term *terminal) expect(re string, within time.Duration) string {
	term.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for {
		term.mu.Lock()
		text := term.out.String()[term.seen:]
		term.mu.Unlock()
		if loc := rx.FindStringIndex(text); loc != nil {
			term.seen += loc[1]
			return text[:loc[1]]
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("no %q within %s; the terminal shows:\n%s", re, within, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exit waits for the process to end and returns its exit code.
func (term *terminal) exit(within time.Duration) int {
	term.t.Helper()
	select {
	case err := <-term.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			term.t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		term.t.Fatalf("still running after %s:\n%s", within, term.out.String())
	}
	return -1
}

// startDemo starts `serve --demo` and returns the coordinator's host:port.
func startDemo(t *testing.T, bin string) string {
	t.Helper()
	f := startRole(t, bin, nil, "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workers", "2")
	return strings.TrimPrefix(f["coordinator"].(string), "grpc://")
}

// TestSQLInteractive drives `icefloe sql` on a terminal as a person does:
// the prompt, a statement over two lines, an error and going on, a
// shortcut, completion, the progress line, Ctrl-C cancelling a long query
// with the prompt coming back, and the history file read by the next run,
// whose prompt names the schema it was given.
func TestSQLInteractive(t *testing.T) {
	bin := icefloeBin(t)
	addr := startDemo(t, bin)
	hist := filepath.Join(t.TempDir(), "history")
	term := startTerminal(t, bin, nil, "sql", "--addr", addr, "--history", hist)
	term.expect(`local\.default> $`, 30*time.Second)

	term.send("SELECT 40 +\r")
	term.expect(`-> $`, 15*time.Second)
	term.send("2 AS answer;\r")
	out := term.expect(`local\.default> $`, 30*time.Second)
	if !strings.Contains(out, "answer") || !strings.Contains(out, "42") || !strings.Contains(out, "(1 row)") {
		t.Fatalf("the two-line statement's result:\n%s", out)
	}

	term.send("SELECT nope FROM orders;\r")
	out = term.expect(`local\.default> $`, 30*time.Second)
	if !strings.Contains(out, "ERROR:") || !strings.Contains(out, "nope") {
		t.Fatalf("the error:\n%s", out)
	}

	// The shortcuts run the SHOW and DESCRIBE statements they stand for.
	for _, sc := range []struct{ typed, want string }{
		{`\dt`, `(?m)^ name *\n-+\n(?s:.*) orders *\n`},
		{`.tables ord%`, `(?m)^ name *\n-+\n orders *\n\(1 row\)`},
		{`\d orders`, `(?m)^ column_name .*\n(?s:.*)^ customer_id +\| BIGINT +\| YES`},
		{`\l`, `(?m)^ Catalog *\n-+\n local *\n\(1 row\)`},
		{`.catalogs`, `(?m)^ Catalog *\n-+\n local *\n`},
		{`\dn def%`, `(?m)^ Schema *\n-+\n default *\n\(1 row\)`},
		{`\?`, `\\dt \[PATTERN\] +SHOW TABLES`},
		{`\nope`, `ERROR: .*unknown command \\nope`},
	} {
		term.send(sc.typed + "\r")
		out = strings.ReplaceAll(term.expect(`local\.default> $`, 30*time.Second), "\r\n", "\n")
		if !regexp.MustCompile(sc.want).MatchString(out) {
			t.Fatalf("%s: no %q in\n%s", sc.typed, sc.want, out)
		}
	}

	term.send("CREATE SCHEMA sales;\r")
	if out := term.expect(`local\.default> $`, 30*time.Second); !strings.Contains(out, "rows affected") {
		t.Fatalf("CREATE SCHEMA:\n%s", out)
	}

	// Tab completes a table name.
	term.send("SELECT count(*) AS c FROM local.default.ord\t")
	term.expect(`FROM local\.default\.orders`, 15*time.Second)
	term.send(";\r")
	out = term.expect(`local\.default> $`, 30*time.Second)
	if !strings.Contains(out, "50000") {
		t.Fatalf("completed statement:\n%s", out)
	}

	// A long query shows its progress; Ctrl-C cancels it and the prompt
	// comes back, ready for the next statement.
	term.send(slowQuery + ";\r")
	term.expect(`endpoints \d+/\d+ · [0-9.]+m?s elapsed`, 30*time.Second)
	start := time.Now()
	term.send("\x03")
	out = term.expect(`local\.default> $`, 15*time.Second)
	if !strings.Contains(out, "cancelled") {
		t.Fatalf("after Ctrl-C:\n%s", out)
	}
	t.Logf("prompt back %s after Ctrl-C", time.Since(start))
	term.send("SELECT 'still here' AS s;\r")
	if out := term.expect(`local\.default> $`, 30*time.Second); !strings.Contains(out, "still here") {
		t.Fatalf("after the cancelled query:\n%s", out)
	}

	term.send(`\q` + "\r")
	if code := term.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after \\q", code)
	}
	saved, err := os.ReadFile(hist)
	if err != nil || !strings.Contains(string(saved), "SELECT 40 + 2 AS answer;") {
		t.Fatalf("history file: %v\n%s", err, saved)
	}

	// The next run reads the history: Up recalls the last entries. Its
	// prompt names the session's schema.
	term = startTerminal(t, bin, nil, "sql", "--addr", addr, "--history", hist, "--schema", "sales")
	term.expect(`local\.sales> $`, 30*time.Second)
	term.send("\x1b[A\x1b[A")
	term.expect(`SELECT 'still here' AS s;`, 15*time.Second)
	term.send("\r")
	if out := term.expect(`local\.sales> $`, 30*time.Second); !strings.Contains(out, "still here") {
		t.Fatalf("the recalled statement:\n%s", out)
	}
	term.send("\x04") // Ctrl-D
	if code := term.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
}

// TestSQLScript: script mode as a shell uses it: --on-error, errors naming
// the statement's line, exit codes (130 after Ctrl-C), --version, -h and
// --addr without a port.
func TestSQLScript(t *testing.T) {
	bin := icefloeBin(t)
	addr := startDemo(t, bin)
	script := "SELECT 1 AS a;\n\nSELECT nope\n  FROM orders;\nSELECT 2 AS b;\n"
	sqlRun := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"sql", "--addr", addr}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}

	out, errOut, code := sqlRun(script)
	if code != 1 || !strings.Contains(errOut, "icefloe: line 3: ") || strings.Contains(out, " b\n") {
		t.Fatalf("--on-error stop: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = sqlRun(script, "--on-error", "continue")
	if code != 1 || !strings.Contains(errOut, "icefloe: line 3: ") || !strings.Contains(errOut, "1 of 3 statements failed") ||
		!strings.Contains(out, " a\n") || !strings.Contains(out, " b\n") {
		t.Fatalf("--on-error continue: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := sqlRun("SELECT 1;", "--on-error", "maybe"); code != 1 || !strings.Contains(errOut, "--on-error") {
		t.Fatalf("bad --on-error: exit %d: %s", code, errOut)
	}

	// Ctrl-C (SIGINT) in script mode cancels the statement and exits 130.
	cmd := exec.Command(bin, "sql", "--addr", addr)
	cmd.Stdin = strings.NewReader(slowQuery + ";\nSELECT 3;\n")
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 130 || !strings.Contains(errBuf.String(), "cancelled") {
			t.Fatalf("after SIGINT: %v, stderr %q; want exit 130", err, errBuf.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still running 15s after SIGINT")
	}

	if out, _, code := sqlRun("", "--version"); code != 0 || !regexp.MustCompile(`^icefloe \S+ \(.*duckdb-go v`).MatchString(out) {
		t.Fatalf("--version: exit %d: %q", code, out)
	}
	if _, errOut, code := sqlRun("", "-h"); code != 0 || !strings.Contains(errOut, "--on-error") && !strings.Contains(errOut, "-on-error") {
		t.Fatalf("-h: exit %d: %s", code, errOut)
	}
	// A host alone dials the default port, not 443.
	cmd = exec.Command(bin, "sql", "--addr", "127.0.0.2", "--timeout", "5s", "SELECT 1")
	b, _ := cmd.CombinedOutput()
	if !strings.Contains(string(b), "127.0.0.2:32010") {
		t.Fatalf("--addr 127.0.0.2: %s", b)
	}
}
