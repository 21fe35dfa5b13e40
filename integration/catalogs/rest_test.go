//go:build catalogs

package catalogs

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/catalog"
)

// TestREST runs the round trip against the REST reference server behind an
// OAuth2 gateway whose tokens live 3 s: the coordinator outlives several
// tokens, refreshing before expiry, and after the gateway forgets every
// token it refreshes once on the 401 and retries.
func TestREST(t *testing.T) {
	uri, _ := startREST(t)
	const secret = "s3cr3t-value"
	gw := startGateway(t, uri, "icefloe", secret, 3*time.Second)
	cfg := catalog.Config{Name: "rest", Type: "rest", Properties: map[string]string{
		"uri": gw.srv.URL, "credential": "icefloe:" + secret,
	}}
	s := startCluster(t, cfg)
	cnxn := connect(t, s.Addr())
	roundTrip(t, cnxn, cfg, "s1")

	// Views are Iceberg views in the REST catalog: stored, listed,
	// expanded (unqualified names in the view's schema), dropped.
	run(t, cnxn, "CREATE VIEW rest.s1.v AS SELECT id FROM t WHERE id > 1")
	wantRows(t, cnxn, "SELECT count(*), sum(id) FROM rest.s1.v", "2 | 5")
	wantRows(t, cnxn, "SELECT table_type FROM information_schema.tables WHERE table_catalog = 'rest' AND table_name = 'v'", "VIEW")
	run(t, cnxn, "CREATE OR REPLACE VIEW rest.s1.v AS SELECT id FROM t WHERE id > 2")
	wantRows(t, cnxn, "SELECT count(*) FROM rest.s1.v", "1")
	run(t, cnxn, "DROP VIEW rest.s1.v")
	if _, err := query(t, cnxn, "SELECT * FROM rest.s1.v"); code(err) != codes.NotFound {
		t.Fatalf("dropped view: %v, want NotFound", err)
	}

	// A long-lived coordinator: tokens expire while it runs.
	issued, _ := gw.counts()
	time.Sleep(3500 * time.Millisecond)
	wantRows(t, cnxn, "SELECT count(*) FROM rest.s1.t", "3")
	if n, _ := gw.counts(); n <= issued {
		t.Fatalf("no token was fetched after the first expired (%d then %d)", issued, n)
	}
	// Every token forgotten: one 401, one refresh, one retry, no error.
	gw.revoke()
	_, refusedBefore := gw.counts()
	wantRows(t, cnxn, "SELECT count(*) FROM rest.s1.t", "3")
	if _, refused := gw.counts(); refused == refusedBefore {
		t.Fatal("the revoked token was never refused: the test did not test the retry")
	}

	// Wrong credentials: UNAUTHENTICATED naming the catalog, not the secret.
	bad := catalog.Config{Name: "badrest", Type: "rest", Properties: map[string]string{
		"uri": gw.srv.URL, "credential": "icefloe:wrong-" + secret,
	}}
	_, _, err := catalog.Open(context.Background(), bad)
	wantErrIs(t, err, catalog.ErrUnauthenticated)
	if msg := err.Error(); !strings.Contains(msg, "badrest") || strings.Contains(msg, "wrong-"+secret) {
		t.Fatalf("error %q: want the catalog named and no secret", msg)
	}
	// Unreachable catalog at mount time.
	gone := catalog.Config{Name: "gone", Type: "rest", Properties: map[string]string{"uri": "http://127.0.0.1:1"}}
	_, _, err = catalog.Open(context.Background(), gone)
	wantErrIs(t, err, catalog.ErrUnavailable)

	// The secret rotated on the server side: UNAUTHENTICATED naming the
	// catalog, never the secret.
	gw.mu.Lock()
	gw.secret = "rotated"
	gw.mu.Unlock()
	gw.revoke()
	_, err = query(t, cnxn, "SELECT count(*) FROM rest.s1.t")
	wantCode(t, err, codes.Unauthenticated, "rest", secret)

	// A mounted catalog that goes away: UNAVAILABLE naming it.
	gw.srv.Close()
	_, err = query(t, cnxn, "SELECT count(*) FROM rest.s1.t")
	wantCode(t, err, codes.Unavailable, "rest", secret)
}
