package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membership"
)

// TestSecureAnnounce: with authentication and TLS on, a worker announces
// itself to the coordinator over TLS with the cluster token, passes the
// key check the coordinator dials back with (behind the worker's
// authentication), and serves a user's query; a user's own announcement
// is refused before it is opened.
func TestSecureAnnounce(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	out, err := binRun(t, bin, nil, "admin-pw\n", "passwd")
	if err != nil || !strings.HasPrefix(out, "$2") {
		t.Fatalf("icefloe passwd: %v: %s", err, out)
	}
	cfg := filepath.Join(dir, "icefloe.yaml")
	writeFile(t, cfg, fmt.Sprintf(`ticket_key: secure-announce-test-key
tls:
  dev: true
auth:
  users:
    - name: admin
      password_hash: %q
      roles: [admin]
`, strings.TrimSpace(out)))
	data := filepath.Join(dir, "data")
	c := startProc(t, bin, nil, "coordinator", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data)
	coord := c.field("coordinator")
	if !strings.HasPrefix(coord, "grpc+tls://") {
		t.Fatalf("coordinator at %q, want grpc+tls://", coord)
	}
	hostport := strings.TrimPrefix(coord, "grpc+tls://")
	// No scheme: the worker announces over TLS because TLS is on.
	w := startProc(t, bin, nil, "worker", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data, "--announce", hostport)
	loc := w.field("worker")
	if !strings.HasPrefix(loc, "grpc+tls://") {
		t.Fatalf("worker at %q, want grpc+tls://", loc)
	}
	c.waitLog(15*time.Second, "worker joined planning", loc)

	ca := filepath.Join(data, "tls", "ca.pem")
	sql := func(q string) (string, error) {
		return binRun(t, bin, []string{"ICEFLOE_PASSWORD=admin-pw"}, "", "sql", "--addr", coord, "--tls-ca", ca, "--user", "admin", "--format", "csv", q)
	}
	for _, q := range []string{"CREATE TABLE t (id BIGINT)", "INSERT INTO t VALUES (1), (2), (3)"} {
		if out, err := sql(q); err != nil {
			t.Fatalf("%s: %v\n%s\ncoordinator:\n%s\nworker:\n%s", q, err, out, c.log(), w.log())
		}
	}
	if out, err := sql("SELECT count(*) AS n FROM t"); err != nil || out != "n\n3\n" {
		t.Fatalf("count: %v\n%s\ncoordinator:\n%s\nworker:\n%s", err, out, c.log(), w.log())
	}

	// A user (even admin) may not announce: only the cluster token may.
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	basicAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:admin-pw"))
	cl, err := flightclient.Dial(coord, flightclient.Options{
		TLS:           &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		Authorization: func(context.Context) (string, error) { return basicAuth, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := cl.DoAction(ctx, &flight.Action{Type: membership.AnnounceAction, Body: []byte("forged")})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only the cluster may announce") {
		t.Fatalf("a user's announcement: %v", err)
	}
	// Without credentials the interceptors refuse it first.
	anon, err := flightclient.Dial(coord, flightclient.Options{TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	stream, err = anon.DoAction(ctx, &flight.Action{Type: membership.AnnounceAction, Body: []byte("forged")})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an anonymous announcement: %v", err)
	}
}
