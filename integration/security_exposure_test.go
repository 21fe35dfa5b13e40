package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// httpDo sends one request to the listener at addr with the Host header
// given ("" for addr itself) and basic credentials of user ("" for
// none), and returns the status and body.
func httpDo(t *testing.T, method, addr, host, user string, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+addr+"/", body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.URL.Path = "/cancel"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if p, ok := hdr["path"]; ok {
		req.URL.Path = p
	}
	for k, v := range hdr {
		if k != "path" {
			req.Header.Set(k, v)
		}
	}
	if host != "" {
		req.Host = host
	}
	if user != "" {
		req.SetBasicAuth(user, securePasswords[user])
	}
	cl := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStatusPageRefusesOtherHosts: a page of another name resolving to
// the status page's listener (DNS rebinding) can neither read the page
// nor cancel with the token it would read there; the listener's own
// addresses can.
func TestStatusPageRefusesOtherHosts(t *testing.T) {
	s := StartCluster(t, Demo(), Workers(1))
	addr := statusListener(t, s.Coordinator)
	_, port, _ := net.SplitHostPort(addr)
	id, done := runSlow(t, adbcConn(t, s.Addr()), adbcConn(t, s.Addr()))

	code, body := httpDo(t, "GET", addr, "", "", nil, nil)
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("the page at its own address: %d, token %v", code, m)
	}
	token := m[1]
	rebind := "rebind.example:" + port
	if code, body := httpDo(t, "GET", addr, rebind, "", nil, nil); code != http.StatusForbidden || strings.Contains(body, id) {
		t.Fatalf("the page for Host %s: %d, want 403", rebind, code)
	}
	form := url.Values{"query_id": {id}, "token": {token}}
	if code, _ := httpDo(t, "POST", addr, rebind, "", form, map[string]string{"Origin": "http://" + rebind}); code != http.StatusForbidden {
		t.Fatalf("a cancel from Host %s with the page's token: %d, want 403", rebind, code)
	}
	if code, _ := httpDo(t, "GET", addr, "localhost:"+port, "", nil, nil); code != http.StatusOK {
		t.Fatalf("the page for Host localhost: %d", code)
	}
	select {
	case err := <-done:
		t.Fatalf("the query ended before the page's own cancel: %v", err)
	default:
	}
	if code, _ := httpDo(t, "POST", addr, "", "", form, map[string]string{"Origin": "http://" + addr}); code != http.StatusSeeOther {
		t.Fatalf("the page's own cancel: %d, want 303", code)
	}
	select {
	case err := <-done:
		wantLimit(t, "query cancelled from the page", err, codes.Canceled, "cancelled")
	case <-time.After(2 * time.Minute):
		t.Fatal("the query cancelled from the page still runs")
	}
}

// startOrExit starts the binary and reports whether it got ready (then
// stopped at the test's end) or exited, and what it logged.
func startOrExit(t *testing.T, bin string, env []string, args ...string) (ready bool, logs string) {
	t.Helper()
	r, readyc := spawn(t, bin, env, args...)
	select {
	case <-readyc:
		return true, r.log()
	case <-r.exited:
		return false, r.log()
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v neither ready nor gone after 2 minutes:\n%s", args, r.log())
	}
	return false, ""
}

// TestHTTPListenerNeedsAuthOffLoopback: without authentication, an HTTP
// listener on a non-loopback address (its status page lists and cancels
// every statement) is refused as the Flight listener is, unless
// --insecure-no-auth.
func TestHTTPListenerNeedsAuthOffLoopback(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	ready, logs := startOrExit(t, bin, nil, "serve", "--listen", "127.0.0.1:0", "--http-addr", "0.0.0.0:0", "--data-dir", filepath.Join(dir, "a"))
	if ready || !strings.Contains(logs, "--http-addr 0.0.0.0:0 is not a loopback address") || !strings.Contains(logs, "--insecure-no-auth") {
		t.Fatalf("serve --http-addr 0.0.0.0:0 without auth: ready %t\n%s", ready, logs)
	}
	ready, logs = startOrExit(t, bin, nil, "serve", "--listen", "127.0.0.1:0", "--http-addr", "0.0.0.0:0", "--insecure-no-auth", "--data-dir", filepath.Join(dir, "b"))
	if !ready || !strings.Contains(logs, "authentication is off on a non-loopback address") {
		t.Fatalf("with --insecure-no-auth: ready %t\n%s", ready, logs)
	}
}

// TestProfilesNeedAdmin: with authentication on, the profiles on the
// HTTP listener are served to an admin only, as the status page beside
// them is served only to authenticated callers.
func TestProfilesNeedAdmin(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	var users strings.Builder
	for name, role := range map[string]string{"root": "admin", "bob": "reader"} {
		users.WriteString(fmt.Sprintf("    - name: %s\n      password_hash: %q\n      roles: [%s]\n", name, bcryptHash(t, securePasswords[name]), role))
	}
	writeFile(t, cfg, "ticket_key: profiles-test-key\nauth:\n  users:\n"+users.String()+
		"  roles:\n    - name: reader\n      grants:\n        - privileges: [SELECT]\n          on: local.default\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startProc(t, bin, []string{"ICEFLOE_PPROF=" + addr}, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--workers", "1")
	cmdline := map[string]string{"path": "/debug/pprof/cmdline"}
	for user, want := range map[string]int{"": http.StatusUnauthorized, "bob": http.StatusForbidden, "root": http.StatusOK} {
		if code, body := httpDo(t, "GET", addr, "", user, nil, cmdline); code != want {
			t.Errorf("profiles as %q: %d, want %d\n%.200s", user, code, want, body)
		}
	}
	if code, _ := httpDo(t, "GET", addr, "", "", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("the status page without credentials: %d, want 401", code)
	}
	if code, _ := httpDo(t, "GET", addr, "rebind.example", "root", nil, cmdline); code != http.StatusForbidden {
		t.Errorf("profiles for another Host: %d, want 403", code)
	}
}
