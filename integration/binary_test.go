package integration

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/readyline"
)

// icefloeBin returns the binary under test: $ICEFLOE_BIN (the Makefile
// sets it to the freshly built one) or one built now.
func icefloeBin(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("ICEFLOE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "icefloe")
	cmd := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", bin, "../cmd/icefloe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// readyLine waits for the "ready" log line and decodes its fields.
func readyLine(t *testing.T, stderr io.Reader, logCopy *bytes.Buffer) map[string]any {
	t.Helper()
	found := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logCopy.WriteString(line + "\n")
			if fields := readyline.Fields(line); fields != nil {
				found <- fields
			}
		}
		close(found)
	}()
	select {
	case f, ok := <-found:
		if !ok {
			t.Fatalf("server exited before it was ready:\n%s", logCopy)
		}
		return f
	case <-time.After(3 * time.Minute):
		t.Fatalf("server not ready after 3 minutes:\n%s", logCopy)
	}
	return nil
}

// TestServeBinary runs the README's run command as a user would (on a free
// port), queries the demo tables with `icefloe sql`, and stops the server
// with SIGINT.
func TestServeBinary(t *testing.T) {
	bin := icefloeBin(t)
	dataDir := t.TempDir()
	srv := exec.Command(bin, "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--workers", "2")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	exited := false
	defer func() {
		if !exited {
			srv.Process.Kill()
			srv.Wait()
		}
	}()
	fields := readyLine(t, stderr, &logs)
	coord, _ := fields["coordinator"].(string)
	workers, _ := fields["workers"].([]any)
	if !strings.HasPrefix(coord, "grpc://127.0.0.1:") || len(workers) != 2 || workers[0] == workers[1] {
		t.Fatalf("ready line must name the coordinator and two distinct workers: %v", fields)
	}
	addr := strings.TrimPrefix(coord, "grpc://")
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"sql", "--addr", addr}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("icefloe sql %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("--format", "csv", "SELECT count(*) AS n FROM orders"); out != "n\n50000\n" {
		t.Fatalf("count over demo orders: %q", out)
	}
	out := run("SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status")
	if !strings.Contains(out, "status") || !strings.Contains(out, "rows)") {
		t.Fatalf("table output: %s", out)
	}
	if out := run("--format", "json", "SELECT 1 AS one"); strings.TrimSpace(out) != `{"one":1}` {
		t.Fatalf("json output: %q", out)
	}
	// Seeding happens once: a restart must not add rows. First stop cleanly.
	if err := srv.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Fatalf("serve exited with %v after SIGINT:\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30s of SIGINT:\n%s", logs.String())
	}
	srv2 := exec.Command(bin, "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--workers", "1")
	stderr2, _ := srv2.StderrPipe()
	if err := srv2.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv2.Process.Signal(syscall.SIGTERM); srv2.Wait() }()
	var logs2 bytes.Buffer
	f2 := readyLine(t, stderr2, &logs2)
	addr = strings.TrimPrefix(f2["coordinator"].(string), "grpc://")
	if out := run("--format", "csv", "SELECT count(*) AS n FROM orders"); out != "n\n50000\n" {
		t.Fatalf("after restart with --demo: %q", out)
	}
}

// startRole starts `icefloe <role> args…` with env added, stops it when
// the test ends, and returns its ready line's fields.
func startRole(t *testing.T, bin string, env []string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	var logs bytes.Buffer
	return readyLine(t, stderr, &logs)
}

// TestSeparateRolesDirectDir: a worker process reads its data dir's
// warehouse with DuckDB's Parquet reader by default, and a coordinator
// process told so (--direct-dir) gathers a query onto it to read there.
func TestSeparateRolesDirectDir(t *testing.T) {
	bin := icefloeBin(t)
	dataDir := t.TempDir()
	env := []string{"ICEFLOE_TICKET_KEY=separate-roles-direct-dir-test-key"}
	w := startRole(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	loc, _ := w["worker"].(string)
	c := startRole(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dataDir,
		"--worker", loc, "--direct-dir", filepath.Join(dataDir, "warehouse"))
	addr := strings.TrimPrefix(c["coordinator"].(string), "grpc://")
	cnxn := adbcConn(t, addr)
	execUpdate(t, cnxn, `CREATE TABLE d (id BIGINT, g VARCHAR)`)
	execUpdate(t, cnxn, `INSERT INTO d VALUES (1, 'a'), (2, 'a'), (3, 'b')`)
	execUpdate(t, cnxn, `INSERT INTO d VALUES (4, 'b'), (5, 'b')`)
	const q = `SELECT g, median(id) FROM d GROUP BY g`
	explain := strings.Join(mustQuery(t, cnxn, "EXPLAIN "+q).rows, "\n")
	if !strings.Contains(explain, "DuckDB's Parquet reader") {
		t.Fatalf("the coordinator did not gather onto a worker reading in place:\n%s", explain)
	}
	wantRows(t, cnxn, q, "a | 1.5", "b | 4")
}
