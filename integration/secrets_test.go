package integration

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// planted are distinct secrets, one per form a secret takes in icefloe's
// environment and config.
var planted = map[string]string{
	"ticket key (env)":          "plantedTicketKeyEnv1",
	"bearer token (env)":        "plantedBearerToken2",
	"REST header":               "plantedHeaderValue3",
	"PostgreSQL URL password":   "plantedPgUrlPass4",
	"PostgreSQL key=value":      "plantedPgKvPass5",
	"REST ?token=":              "plantedQueryToken6",
	"OAuth2 credential":         "plantedCredential7",
	"S3 secret key":             "plantedS3Secret8",
	"ticket key (config)":       "plantedTicketKeyCfg9",
	"signature query parameter": "plantedSignature10",
	"REST URL password":         "plantedRestUrlPass11",
	"user password (env)":       "plantedUserPassword12",
	"JWKS URL ?token=":          "plantedJwksToken13",
}

// scan fails the test if out holds a planted secret, as is or escaped.
func scan(t *testing.T, what, out string) {
	t.Helper()
	for name, s := range planted {
		for _, form := range []string{s, url.QueryEscape(s), strings.ToLower(s)} {
			if strings.Contains(out, form) {
				t.Errorf("%s prints the %s:\n%s", what, name, out)
			}
		}
	}
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// runBin runs the binary to its end and returns its output.
func runBin(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// startBin starts a server role with its log going to a file, waits for
// its ready line, and returns the line and a func that stops it (SIGTERM
// to its PID) and returns the whole log.
func startBin(t *testing.T, bin string, env []string, args ...string) (string, func() string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() string {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			f.Close()
		}
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	t.Cleanup(func() { stop() })
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "ready\t{") {
				return line, stop
			}
		}
		if cmd.ProcessState != nil {
			break
		}
	}
	t.Fatalf("%v not ready:\n%s", args, stop())
	return "", nil
}

// TestSecretsNeverPrinted plants a distinct secret in every form the
// environment and the config may hold one, runs every command — each
// one's -h, config check of a good and a bad config, serve, coordinator
// and worker up to their ready lines and shutdown, serve failing on
// catalogs it cannot reach, icefloe sql succeeding and failing — and
// scans every output for the secrets.
func TestSecretsNeverPrinted(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	env := []string{
		"ICEFLOE_TICKET_KEY=" + planted["ticket key (env)"],
		"ICEFLOE_TOKEN=" + planted["bearer token (env)"],
		"PLANTED_TICKET_CFG=" + planted["ticket key (config)"],
		"PLANTED_PG_PASS=" + planted["PostgreSQL URL password"],
		"ICEFLOE_PASSWORD=" + planted["user password (env)"],
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := closedPort(t)
	rest := fmt.Sprintf(`  - name: rest1
    type: rest
    properties:
      uri: http://user:%s@127.0.0.1:%d/cat?token=%s&sig=%s
      credential: client:%s
      header.X-Api-Key: %s
      s3.secret-access-key: %s
`, planted["REST URL password"], dead, planted["REST ?token="], planted["signature query parameter"],
		planted["OAuth2 credential"], planted["REST header"], planted["S3 secret key"])
	pgURL := fmt.Sprintf(`  - name: pgurl
    type: sql
    properties:
      uri: postgres://u:${PLANTED_PG_PASS}@127.0.0.1:%d/db?sslmode=disable
      sql.dialect: postgres
`, dead)
	pgKV := fmt.Sprintf(`  - name: pgkv
    type: sql
    properties:
      uri: "host=127.0.0.1 port=%d user=u password=%s dbname=d sslmode=disable"
      sql.dialect: postgres
`, dead, planted["PostgreSQL key=value"])
	auth := fmt.Sprintf("auth:\n  jwt:\n    jwks_url: https://idp.example.com/keys?token=%s\n    issuer: https://idp.example.com/\n    audience: icefloe\n", planted["JWKS URL ?token="])
	all := write("all.yaml", "ticket_key: ${PLANTED_TICKET_CFG}\n"+auth+"catalogs:\n"+rest+pgURL+pgKV)

	// Help of every command, with the secrets in the environment.
	for _, args := range [][]string{{"-h"}, {"serve", "-h"}, {"coordinator", "-h"}, {"worker", "-h"}, {"sql", "-h"}, {"config"}, {"passwd", "-h"}, {"token", "-h"}} {
		scan(t, "icefloe "+strings.Join(args, " "), runBin(t, bin, env, args...))
	}
	// config check: the effective config, redacted, and a bad config's
	// errors.
	out := runBin(t, bin, env, "config", "check", all)
	scan(t, "config check", out)
	for _, want := range []string{"name: rest1", "header.X-Api-Key: <redacted>", "name: pgkv", "password=<redacted>", "jwks_url: https://idp.example.com/keys"} {
		if !strings.Contains(out, want) {
			t.Errorf("config check lacks %q:\n%s", want, out)
		}
	}
	bad := write("bad.yaml", "workers: -1\nticket_key: ${PLANTED_TICKET_CFG}\nthreads: ${PLANTED_PG_PASS}\ncatalogs:\n"+rest)
	out = runBin(t, bin, env, "config", "check", bad)
	if !strings.Contains(out, "config") {
		t.Errorf("a bad config passed the check:\n%s", out)
	}
	scan(t, "config check of a bad config", out)
	// serve, failing on each catalog it cannot reach.
	for name, cat := range map[string]string{"rest": rest, "pg-url": pgURL, "pg-kv": pgKV} {
		cfg := write(name+".yaml", "catalogs:\n"+cat)
		out := runBin(t, bin, env, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data-"+name))
		if !strings.Contains(out, "icefloe:") {
			t.Errorf("serve with the unreachable %s catalog did not fail:\n%s", name, out)
		}
		scan(t, "serve failing on the "+name+" catalog", out)
	}
	// Start-up and shutdown logs of each role, with a catalog that mounts
	// and holds secrets its kind does not use.
	good := write("good.yaml", fmt.Sprintf(`catalogs:
  - name: lake
    type: sql
    properties:
      uri: file:%s/lake.db
      sql.dialect: sqlite
      warehouse: file://%s/lake-wh
      header.X-Api-Key: %s
      s3.secret-access-key: %s
`, dir, dir, planted["REST header"], planted["S3 secret key"]))
	_, stop := startBin(t, bin, env, "serve", "--config", good, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "serve"))
	scan(t, "serve's log", stop())
	wline, stopW := startBin(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "worker"))
	loc := between(wline, `"worker": "`, `"`)
	cline, stopC := startBin(t, bin, env, "coordinator", "--config", good, "--listen", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "coord"), "--worker", loc)
	addr := strings.TrimPrefix(between(cline, `"coordinator": "`, `"`), "grpc://")
	// icefloe sql with the token from the environment: an answer and an
	// error.
	out = runBin(t, bin, env, "sql", "--addr", addr, "SELECT 41 + 1 AS answer")
	if !strings.Contains(out, "42") {
		t.Errorf("icefloe sql did not answer:\n%s", out)
	}
	scan(t, "icefloe sql", out)
	scan(t, "icefloe sql's error", runBin(t, bin, env, "sql", "--addr", addr, "SELECT * FROM lake.default.missing"))
	scan(t, "icefloe sql's error without a server", runBin(t, bin, env, "sql", "--addr", fmt.Sprintf("127.0.0.1:%d", dead), "SELECT 1"))
	scan(t, "the coordinator's log", stopC())
	scan(t, "the worker's log", stopW())
}

// between returns the text of s between the first open and the next close.
func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, close)
	return v
}
