package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/internal/flightclient"
)

// revokeConfig is a config with users (name → password and roles) and a
// reader role that may read the demo tables.
func revokeConfig(t *testing.T, path string, users map[string][2]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("ticket_key: revoke-test-cluster-key\nauth:\n  users:\n")
	for name, u := range users {
		fmt.Fprintf(&b, "    - name: %s\n      password_hash: %q\n      roles: [%s]\n", name, bcryptHash(t, u[0]), u[1])
	}
	b.WriteString("  roles:\n    - name: reader\n      grants:\n        - privileges: [SELECT]\n          on: local.default\n")
	writeFile(t, path, b.String())
}

// bcryptHash is a password's hash for a config's auth.users.
func bcryptHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// handshake logs in at a Flight location with a password (as the JDBC
// driver and `icefloe sql` do) and returns the bearer token answered, or
// sends a bearer token and returns the error.
func handshake(t *testing.T, loc, authorization string) (string, error) {
	t.Helper()
	cl, err := flightclient.Dial(loc, flightclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(call(authorization), time.Minute)
	defer cancel()
	hs, err := cl.Handshake(ctx)
	if err != nil {
		return "", err
	}
	_ = hs.CloseSend()
	if _, err := hs.Recv(); err != nil && !strings.Contains(err.Error(), "EOF") {
		return "", err
	}
	hdr, err := hs.Header()
	if err != nil {
		return "", err
	}
	if v := hdr.Get("authorization"); len(v) == 1 {
		return strings.TrimPrefix(v[0], "Bearer "), nil
	}
	return "", nil
}

// bearerQuery runs q through the Go ADBC driver sending token.
func bearerQuery(t *testing.T, addr, token, q string) (result, error) {
	t.Helper()
	db, err := adbcflight.NewDriver(nil).NewDatabase(map[string]string{
		adbc.OptionKeyURI: "grpc://" + addr, adbcflight.OptionAuthorizationHeader: "Bearer " + token})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cnxn, err := db.Open(context.Background())
	if err != nil {
		return result{}, err
	}
	defer cnxn.Close()
	return query(t, cnxn, q)
}

// TestTokensFollowTheConfig: a token names its user's entry as the
// config had it at login. After the coordinator restarts with the same
// key and a changed config, the token of a removed user, of a demoted
// admin and of a user whose password changed are refused, at the
// coordinator and at a worker process that has the new config, while a
// fresh login gets what the new entry grants.
func TestTokensFollowTheConfig(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	data := filepath.Join(dir, "data")
	revokeConfig(t, cfg, map[string][2]string{
		"ada": {"ada-pw", "admin"}, "bob": {"bob-pw", "reader"}, "cy": {"cy-pw", "reader"}})
	serve := func() *role {
		return startProc(t, bin, nil, "serve", "--demo", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data, "--workers", "1")
	}
	s := serve()
	loc := s.field("coordinator")
	tokens := map[string]string{}
	for user, pw := range map[string]string{"ada": "ada-pw", "bob": "bob-pw", "cy": "cy-pw"} {
		tok, err := handshake(t, loc, basic(user, pw))
		if err != nil || tok == "" {
			t.Fatalf("log in as %s: %q %v", user, tok, err)
		}
		tokens[user] = tok
	}
	const count, workers = "SELECT count(*) FROM orders", "SELECT count(*) FROM system.runtime.workers"
	for user, tok := range tokens {
		if _, err := bearerQuery(t, s.addr(), tok, count); err != nil {
			t.Fatalf("%s's token before the change: %v", user, err)
		}
	}
	if _, err := bearerQuery(t, s.addr(), tokens["ada"], workers); err != nil {
		t.Fatalf("ada as admin: %v", err)
	}

	// bob is removed, ada demoted to reader, cy's password changed.
	s.signal(syscall.SIGTERM)
	if err := s.waitExit(time.Minute); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
	revokeConfig(t, cfg, map[string][2]string{"ada": {"ada-pw", "reader"}, "cy": {"cy-new-pw", "reader"}})
	s = serve()
	loc = s.field("coordinator")
	for user, tok := range tokens {
		_, err := bearerQuery(t, s.addr(), tok, count)
		wantADBC(t, user+"'s old token after the change", err, adbc.StatusUnauthenticated, "log in again")
	}
	if _, err := bearerQuery(t, s.addr(), tokens["ada"], workers); err == nil {
		t.Fatal("the demoted admin's old token still reads system.runtime.workers")
	}
	fresh, err := handshake(t, loc, basic("ada", "ada-pw"))
	if err != nil {
		t.Fatalf("ada logs in again: %v", err)
	}
	if _, err := bearerQuery(t, s.addr(), fresh, count); err != nil {
		t.Fatalf("ada's fresh token: %v", err)
	}
	_, err = bearerQuery(t, s.addr(), fresh, workers)
	wantADBC(t, "ada's fresh token reading the workers", err, adbc.StatusUnauthorized, "admin")
	if _, err := handshake(t, loc, basic("cy", "cy-pw")); err == nil {
		t.Fatal("cy's old password still logs in")
	}
	if _, err := handshake(t, loc, basic("bob", "bob-pw")); err == nil {
		t.Fatal("removed bob still logs in")
	}

	// A worker process with the new config reaches the same verdicts on
	// its own: it verifies tokens locally.
	w := startProc(t, bin, nil, "worker", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "worker"))
	for user, tok := range tokens {
		_, err := handshake(t, w.field("worker"), "Bearer "+tok)
		wantCode(t, user+"'s old token at the worker", err, codes.Unauthenticated)
	}
	if _, err := handshake(t, w.field("worker"), "Bearer "+fresh); err != nil {
		t.Fatalf("ada's fresh token at the worker: %v", err)
	}
}
