package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/tlsconf"
)

// binRun runs the binary with env added; it returns what it printed and
// whether it succeeded.
func binRun(t *testing.T, bin string, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSecureBinary starts with auth and TLS the way the README does:
// `icefloe passwd` for the hashes, a config with auth:, `serve --tls`,
// then `icefloe sql` with --tls-ca and --user, --token or $ICEFLOE_TOKEN.
func TestSecureBinary(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	auditFile := filepath.Join(dir, "audit.jsonl")
	writeBinaryConfig(t, bin, cfg, auditFile)
	checkBinaryRefusals(t, bin, dir, cfg)

	data := filepath.Join(dir, "data")
	ready := startRole(t, bin, nil, "serve", "--demo", "--tls", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data)
	coord, _ := ready["coordinator"].(string)
	workers, _ := ready["workers"].([]any)
	if !strings.HasPrefix(coord, "grpc+tls://127.0.0.1:") || len(workers) != 2 || !strings.HasPrefix(fmt.Sprint(workers[0]), "grpc+tls://") {
		t.Fatalf("ready line %v: want grpc+tls:// everywhere", ready)
	}
	ca := filepath.Join(data, "tls", "ca.pem")
	sql := func(env []string, args ...string) (string, error) {
		return binRun(t, bin, env, "", append([]string{"sql", "--addr", coord, "--tls-ca", ca, "--format", "csv"}, args...)...)
	}
	const count = "SELECT count(*) AS n FROM orders"
	if out, err := sql(nil, count); err == nil || !strings.Contains(out, "authentication required") {
		t.Fatalf("no credentials: %v\n%s", err, out)
	}
	if out, err := sql(nil, "--user", "bob", "--password", "nope", count); err == nil || !strings.Contains(out, "wrong user name or password") {
		t.Fatalf("wrong password: %v\n%s", err, out)
	}
	if out, err := binRun(t, bin, nil, "", "sql", "--addr", coord, "--user", "bob", "--password", "bob-pw", count); err == nil || !strings.Contains(out, "certificate") {
		t.Fatalf("a server certificate from an unknown CA was accepted: %v\n%s", err, out)
	}
	// Two-phase over both workers: the final worker pulls its partials
	// from the other over TLS with the cluster token.
	if out, err := sql([]string{"ICEFLOE_PASSWORD=bob-pw"}, "--user", "bob", count); err != nil || out != "n\n50000\n" {
		t.Fatalf("bob: %v\n%s", err, out)
	}
	if out, err := sql(nil, "--user", "bob", "--password", "bob-pw", "DROP TABLE orders"); err == nil || !strings.Contains(out, "no DROP privilege on table local.default.orders") {
		t.Fatalf("bob dropping a table: %v\n%s", err, out)
	}
	tok, err := binRun(t, bin, nil, "", "token", "--config", cfg, "--user", "bob", "--ttl", "10m")
	if err != nil {
		t.Fatalf("icefloe token: %v\n%s", err, tok)
	}
	token := strings.TrimSpace(strings.SplitN(tok, "\n", 2)[0])
	if out, err := sql(nil, "--token", token, count); err != nil || out != "n\n50000\n" {
		t.Fatalf("--token: %v\n%s", err, out)
	}
	secretEnv := []string{"ICEFLOE_TOKEN=" + token, "ICEFLOE_PASSWORD=bob-pw"}
	if out, err := sql(secretEnv, count); err != nil || out != "n\n50000\n" {
		t.Fatalf("$ICEFLOE_TOKEN: %v\n%s", err, out)
	}
	if out, _ := binRun(t, bin, secretEnv, "", "sql", "-h"); strings.Contains(out, token) || strings.Contains(out, "bob-pw") || !strings.Contains(out, "-user") {
		t.Fatalf("sql -h shows a secret or lacks --user:\n%s", out)
	}
	raw, err := os.ReadFile(auditFile)
	if err != nil || !bytes.Contains(raw, []byte(`"principal":"bob"`)) || !bytes.Contains(raw, []byte(`"code":"PermissionDenied"`)) || bytes.Contains(raw, []byte("bob-pw")) || bytes.Contains(raw, []byte(token)) {
		t.Fatalf("audit file (%v):\n%s", err, raw)
	}
}

// writeBinaryConfig writes TestSecureBinary's config: a cluster key, an
// admin and bob (a reader of local.default) with bcrypt hashes icefloe
// passwd made, and the audit file.
func writeBinaryConfig(t *testing.T, bin, cfg, auditFile string) {
	t.Helper()
	hash := func(pw string) string {
		out, err := binRun(t, bin, nil, pw+"\n", "passwd")
		if err != nil || !strings.HasPrefix(out, "$2") {
			t.Fatalf("icefloe passwd: %v: %s", err, out)
		}
		return strings.TrimSpace(out)
	}
	writeFile(t, cfg, fmt.Sprintf(`ticket_key: binary-test-cluster-key
auth:
  users:
    - name: admin
      password_hash: %q
      roles: [admin]
    - name: bob
      password_hash: %q
      roles: [reader]
  roles:
    - name: reader
      grants:
        - privileges: [SELECT]
          on: local.default
audit:
  file: %s
`, hash("admin-pw"), hash("bob-pw"), auditFile))
}

// checkBinaryRefusals: config check redacts the password hashes, and
// serve without auth refuses a wildcard listen.
func checkBinaryRefusals(t *testing.T, bin, dir, cfg string) {
	t.Helper()
	if out, err := binRun(t, bin, nil, "", "config", "check", cfg); err != nil || strings.Contains(out, "$2") || !strings.Contains(out, "password_hash: <redacted>") {
		t.Fatalf("config check shows a password hash or failed: %v\n%s", err, out)
	}
	// Without auth, only loopback: a wildcard listen needs the flag.
	if out, err := binRun(t, bin, nil, "", "serve", "--listen", "0.0.0.0:0", "--data-dir", filepath.Join(dir, "open")); err == nil || !strings.Contains(out, "--insecure-no-auth") {
		t.Fatalf("serve on 0.0.0.0 without auth: %v\n%s", err, out)
	}
}

// TestSecureSeparateRoles runs a worker and a coordinator as separate
// processes sharing a config with auth and TLS certificate files.
func TestSecureSeparateRoles(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	files, err := tlsconf.Dev(filepath.Join(dir, "certs"), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := binRun(t, bin, nil, "carol-pw\n", "passwd")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "icefloe.yaml")
	writeFile(t, cfg, fmt.Sprintf(`ticket_key: separate-secure-roles
auth:
  users:
    - name: carol
      password_hash: %q
      roles: [admin]
tls:
  cert_file: %s
  key_file: %s
  ca_file: %s
`, strings.TrimSpace(out), files.CertFile, files.KeyFile, files.CAFile))
	data := filepath.Join(dir, "data")
	w := startRole(t, bin, nil, "worker", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data)
	loc, _ := w["worker"].(string)
	if !strings.HasPrefix(loc, "grpc+tls://") {
		t.Fatalf("worker location %q", loc)
	}
	c := startRole(t, bin, nil, "coordinator", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data,
		"--worker", strings.TrimPrefix(loc, "grpc+tls://"))
	coord, _ := c["coordinator"].(string)
	sql := func(q string) (string, error) {
		return binRun(t, bin, []string{"ICEFLOE_PASSWORD=carol-pw"}, "", "sql", "--addr", coord, "--tls-ca", files.CAFile, "--user", "carol", "--format", "csv", q)
	}
	// The coordinator finds the worker live over TLS (health), writes
	// through it with the cluster token, and the client pulls from it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := sql("CREATE TABLE t AS SELECT 1 AS a UNION ALL SELECT 2")
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !strings.Contains(out, "no worker") {
			t.Fatalf("CTAS: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := sql("SELECT sum(a) AS s FROM t"); err != nil || out != "s\n3\n" {
		t.Fatalf("query: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
