package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runExit runs the binary with env added and returns its stdout, stderr
// and exit code (-1: it did not exit within a minute).
func runExit(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		code = -1
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestStartupErrors: every start-up failure of serve, coordinator and
// worker, from the binary: exit 1, one line on stderr naming the cause,
// never a panic.
func TestStartupErrors(t *testing.T) {
	bin := icefloeBin(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, text)
		return p
	}
	key := []string{"ICEFLOE_TICKET_KEY=startup-errors-test-key-0123456789"}
	busy := taken.Addr().String()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"serve port taken", nil, []string{"serve", "--listen", busy}, []string{"cannot listen on " + busy, "in use", "--listen"}},
		{"coordinator port taken", key, []string{"coordinator", "--listen", busy, "--worker", deadAddr}, []string{"cannot listen on " + busy, "in use"}},
		{"worker port taken", key, []string{"worker", "--listen", busy}, []string{"cannot listen on " + busy, "in use"}},
		{"bad port", nil, []string{"serve", "--listen", "127.0.0.1:99999"}, []string{"--listen", "99999", "0 to 65535"}},
		{"bad memory_limit", nil, []string{"serve", "--config", file("mem.yaml", "memory_limit: 4 gigs\n")}, []string{"memory_limit", "4 gigs", "unknown unit"}},
		{"unreachable catalog", nil, []string{"serve", "--config", file("rest.yaml",
			fmt.Sprintf("catalogs:\n  - name: lake\n    type: rest\n    properties:\n      uri: http://%s\n", deadAddr))}, []string{"lake", "unreachable", deadAddr}},
		{"missing TLS files", nil, []string{"serve", "--config", file("tls.yaml",
			"tls:\n  cert_file: "+filepath.Join(dir, "none.pem")+"\n  key_file: "+filepath.Join(dir, "none.key")+"\n")}, []string{"tls", "none.pem"}},
		{"worker without key", nil, []string{"worker", "--listen", "127.0.0.1:0"}, []string{"ticket key is required", "ICEFLOE_TICKET_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--data-dir", filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")))
			_, stderr, code := runExit(t, bin, tc.env, args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "icefloe: ") {
				t.Fatalf("exit %d, want 1 and one line on stderr starting icefloe:, got:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("%q does not name %q", lines[0], w)
				}
			}
		})
	}
}

// TestHelpExitsZero: -h of every command prints its flags and exits 0.
func TestHelpExitsZero(t *testing.T) {
	bin := icefloeBin(t)
	for _, cmd := range []string{"serve", "coordinator", "worker", "sql"} {
		_, stderr, code := runExit(t, bin, nil, cmd, "-h")
		if code != 0 || !strings.Contains(stderr, "-listen") && !strings.Contains(stderr, "-addr") {
			t.Errorf("%s -h: exit %d\n%s", cmd, code, stderr)
		}
	}
}

// TestConfigCheck: config check refuses bad values and unknown keys (with
// the nearest key) and prints the effective config, defaults applied and
// secrets redacted.
func TestConfigCheck(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	check := func(text string, env ...string) (string, string, int) {
		p := filepath.Join(dir, "c.yaml")
		writeFile(t, p, text)
		return runExit(t, bin, env, "config", "check", p)
	}
	for _, tc := range []struct{ text, want string }{
		{"memory_limit: 4 gigs\n", `memory_limit: not a size: "4 gigs"`},
		{"memory_limit: 4KB\n", "below the minimum"},
		{"memroy_limit: 4GB\n", `unknown key "memroy_limit" (did you mean "memory_limit"?)`},
		{"catalogs:\n  - name: x\n    type: sql\n    propertes: {}\n", `unknown key "catalogs[0].propertes" (did you mean "properties"?)`},
		{"auth:\n  users: []\n  token_tll: 1h\n", `"auth.token_tll" (did you mean "token_ttl"?)`},
		{"ticket_ttl: 5 minutes\n", `line 1: ticket_ttl: "5 minutes" is not a duration`},
		{"listen: localhost\n", `listen: "localhost" is not host:port`},
		{"worker_addresses: [\"http://w:1\"]\n", "worker_addresses[0]"},
		{"workers: ${ICEFLOE_SURELY_UNSET}\n", "ICEFLOE_SURELY_UNSET"},
	} {
		_, stderr, code := check(tc.text)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("config check of %q: exit %d, stderr %q; want 1 and %q", tc.text, code, stderr, tc.want)
		}
	}

	// A ${VAR} in a comment is not expanded; values are, numbers too.
	out, stderr, code := check(`# a comment may say ${NOT_SET_ANYWHERE}
ticket_key: ${CHECK_KEY}
workers: ${CHECK_WORKERS}
catalogs:
  - name: lake
    type: rest
    properties:
      uri: http://catalog:8181
      credential: ${CHECK_KEY}
`, "CHECK_KEY=very-secret-key-value", "CHECK_WORKERS=3")
	if code != 0 {
		t.Fatalf("config check: exit %d: %s", code, stderr)
	}
	if strings.Contains(out, "very-secret-key-value") {
		t.Fatalf("a secret is printed:\n%s", out)
	}
	for _, want := range []string{"listen: 127.0.0.1:32010", "data_dir: ./icefloe-data", "workers: 3",
		"each DuckDB takes its share of limits.memory_budget", "metadata_cache_bytes: 268435456", "ticket_ttl: 5m0s", "ticket_key: <redacted>", "uri: http://catalog:8181"} {
		if !strings.Contains(out, want) {
			t.Errorf("effective config lacks %q:\n%s", want, out)
		}
	}
}
