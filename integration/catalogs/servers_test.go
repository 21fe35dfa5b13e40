//go:build catalogs

package catalogs

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/integration/testproc"
)

// env names what ./run installed.
var (
	restJar   = os.Getenv("ICEFLOE_REST_JAR")
	venv      = os.Getenv("ICEFLOE_CATALOGS_VENV")
	pgBin     = os.Getenv("ICEFLOE_PG_BIN")
	repoRoot  = os.Getenv("REPO_ROOT")
	needed    = map[string]string{"ICEFLOE_REST_JAR": restJar, "ICEFLOE_CATALOGS_VENV": venv, "ICEFLOE_PG_BIN": pgBin}
	pyEngine  = "engine.py"
	startWait = 90 * time.Second
)

func TestMain(m *testing.M) {
	for k, v := range needed {
		if v == "" {
			fmt.Fprintf(os.Stderr, "catalogs: %s is not set; run ./run\n", k)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

func freePort(t testing.TB) int { return testproc.FreePort(t) }

// waitHTTP polls url until it answers at all.
func waitHTTP(t testing.TB, url string, exited <-chan struct{}, log *testproc.Log) {
	t.Helper()
	testproc.WaitHTTP(t, url, exited, log, startWait)
}

// startREST runs the Iceberg REST reference server (JDBC catalog on
// in-memory SQLite) over a file warehouse and returns its base URI and
// the warehouse path.
func startREST(t testing.TB) (uri, warehouse string) {
	t.Helper()
	warehouse = t.TempDir()
	port := freePort(t)
	cmd := exec.Command("java", "-jar", restJar)
	cmd.Env = append(os.Environ(),
		"CATALOG_WAREHOUSE=file://"+warehouse,
		"CATALOG_REST_PORT="+strconv.Itoa(port),
	)
	log, exited := testproc.Start(t, cmd)
	uri = fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, uri+"/v1/config", exited, log)
	return uri, warehouse
}

// startMoto runs moto's server (S3 and Glue on one port) and creates
// bucket.
func startMoto(t testing.TB, bucket string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(filepath.Join(venv, "bin", "moto_server"), "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	log, exited := testproc.Start(t, cmd)
	uri := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, uri+"/moto-api/", exited, log)
	req, _ := http.NewRequest(http.MethodPut, uri+"/"+bucket, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket: %s", resp.Status)
	}
	return uri
}

// startPostgres runs a throwaway PostgreSQL cluster as the postgres user
// in a temp directory and returns a DSN for database postgres.
func startPostgres(t testing.TB) (dsn string, port int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "icefloe-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	asPostgres := func(args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
		return exec.Command(args[0], args[1:]...)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	if out, err := asPostgres(filepath.Join(pgBin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	port = freePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	if out, err := asPostgres(filepath.Join(pgBin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		asPostgres(filepath.Join(pgBin, "pg_ctl"), "-D", data, "-m", "immediate", "stop").Run()
	})
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), port
}

// pyiceberg runs engine.py (pyiceberg, "another engine") with args and a
// JSON catalog config, and returns its stdout.
func pyiceberg(t testing.TB, catalogJSON string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), append([]string{pyEngine, catalogJSON}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyiceberg %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}
