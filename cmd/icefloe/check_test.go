package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestRoleCheck: coordinator and worker --check run the start-up checks
// of their command line and exit: an open listener without auth: fails
// naming --insecure-no-auth, and passes with it or with auth:.
func TestRoleCheck(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(TicketKeyEnv, "check-test-key")
	t.Setenv("ADMIN_HASH", string(hash))
	dir := t.TempDir()
	open := writeConfig(t, "listen: 0.0.0.0:32010\nhttp_listen: 0.0.0.0:9090\ndata_dir: "+dir+"\n")
	authed := writeConfig(t, "listen: 0.0.0.0:32010\nhttp_listen: 0.0.0.0:9090\ndata_dir: "+dir+`
auth:
  users:
    - name: admin
      password_hash: "${ADMIN_HASH}"
      roles: [admin]
`)
	for _, role := range []string{"coordinator", "worker"} {
		check := func(args ...string) (string, error) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{role, "--check"}, args...), nil, &out, &out)
			return out.String(), err
		}
		if out, err := check("--config", open); err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("%s --check of an open listener without auth: %v\n%s", role, err, out)
		}
		if out, err := check("--config", open, "--insecure-no-auth"); err != nil {
			t.Errorf("%s --check --insecure-no-auth: %v\n%s", role, err, out)
		}
		if out, err := check("--config", authed); err != nil {
			t.Errorf("%s --check with auth: %v\n%s", role, err, out)
		}
		if _, err := check("--config", authed, "--no-such-flag"); err == nil {
			t.Errorf("%s --check took an unknown flag", role)
		}
	}
}
