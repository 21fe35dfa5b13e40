package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/icefloe/icefloe/wire"
)

// TestLoginAndExchange: the REST catalog's token endpoint logs a user in
// with a password and exchanges a token for a fresh one; wrong passwords,
// bad tokens and the cluster token get nothing, and every failure is
// reported as a failed login.
func TestLoginAndExchange(t *testing.T) {
	ctx := context.Background()
	key, _ := wire.RandomKey()
	var failed []LoginEvent
	a, err := New(Options{Key: key, Users: []User{{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"analyst"}}},
		OnLogin: func(_ context.Context, e LoginEvent) {
			if e.Err != nil {
				failed = append(failed, e)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	p, tok, exp, err := a.Login(ctx, "alice", "s3cret", "127.0.0.1:1", "REST")
	if err != nil || p.Name != "alice" || time.Until(exp) <= 0 {
		t.Fatalf("login: %v %v %v", p, exp, err)
	}
	if got, err := a.Verify(ctx, tok); err != nil || got.Name != "alice" || !got.HasRole("analyst") {
		t.Fatalf("the issued token: %v %v", got, err)
	}
	if _, _, _, err := a.Login(ctx, "alice", "wrong", "127.0.0.1:1", "REST"); !errors.Is(err, ErrBadPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	p, fresh, _, err := a.Exchange(ctx, tok, "127.0.0.1:1", "REST")
	if err != nil || p.Name != "alice" || fresh == "" {
		t.Fatalf("exchange: %v %v", p, err)
	}
	if _, _, _, err := a.Exchange(ctx, tok[:len(tok)-2], "127.0.0.1:1", "REST"); !errors.Is(err, ErrBadToken) {
		t.Fatalf("a tampered token: %v", err)
	}
	cluster, _ := a.ClusterToken()
	if _, _, _, err := a.Exchange(ctx, cluster, "127.0.0.1:1", "REST"); !errors.Is(err, ErrBadToken) {
		t.Fatalf("the cluster token was exchanged: %v", err)
	}
	if len(failed) != 3 {
		t.Fatalf("failed logins reported: %d, want 3: %+v", len(failed), failed)
	}
}
