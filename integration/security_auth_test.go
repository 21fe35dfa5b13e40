package integration

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/wire"
)

// call returns ctx carrying an authorization header ("" for none).
func call(authorization string) context.Context {
	ctx := context.Background()
	if authorization != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
	}
	return ctx
}

// doGet runs one DoGet of ticket at a location to its end.
func (e *secureEnv) doGet(t testing.TB, loc string, ticket []byte, authorization string) (rows int64, err error) {
	t.Helper()
	cl, err := flightclient.Dial(loc, e.client)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stream, err := cl.DoGet(call(authorization), &flight.Ticket{Ticket: ticket})
	if err != nil {
		return 0, err
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
	}
	return rows, rdr.Err()
}

// doPut opens a DoPut at a location whose descriptor is ticket and
// returns how the worker answered.
func (e *secureEnv) doPut(t testing.TB, loc string, ticket []byte, authorization string) error {
	t.Helper()
	cl, err := flightclient.Dial(loc, e.client)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stream, err := cl.DoPut(call(authorization))
	if err != nil {
		return err
	}
	if err := stream.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: ticket}}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_ = stream.CloseSend()
	_, err = stream.Recv()
	return err
}

func wantCode(t testing.TB, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: %v (code %s), want %s", what, err, got, want)
	}
}

func wantADBC(t testing.TB, what string, err error, want adbc.Status, words ...string) {
	t.Helper()
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code != want {
		t.Fatalf("%s: %v, want ADBC status %v", what, err, want)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %q does not name %q", what, err, w)
		}
	}
}

func TestSecurity(t *testing.T) {
	e := startSecure(t)
	bob := e.login(t, "bob")
	// A scatter query: one endpoint per group, over both workers.
	const q = "SELECT id, status FROM orders"
	parts, eps := partitions(t, bob, q)
	if len(eps) < 2 {
		t.Fatalf("%d endpoints, want several", len(eps))
	}
	g := &securityShared{e: e, bob: bob, q: q, parts: parts, eps: eps}

	t.Run("unauthenticated at the coordinator", func(t *testing.T) { securityUnauthenticatedAtTheCoordinator(t, g) })

	t.Run("unauthenticated at a worker", func(t *testing.T) { securityUnauthenticatedAtAWorker(t, g) })

	t.Run("only the cluster tells workers of drops", func(t *testing.T) { securityOnlyTheClusterTellsWorkersOfDrops(t, g) })

	t.Run("partitions over TLS workers", func(t *testing.T) { securityPartitionsOverTLSWorkers(t, g) })

	t.Run("ticket replayed by another principal", func(t *testing.T) { securityTicketReplayedByAnotherPrincipal(t, g) })

	t.Run("single-endpoint proxy pulls as the caller", func(t *testing.T) { securitySingleEndpointProxyPullsAsTheCaller(t, g) })

	t.Run("dropped table stops serving", func(t *testing.T) { securityDroppedTableStopsServing(t, g) })
}

// securityShared is what TestSecurity's parts share: the cluster, bob's
// connection, a scatter query and its partitions and endpoints.
type securityShared struct {
	e     *secureEnv
	bob   adbc.Connection
	q     string
	parts adbc.Partitions
	eps   []*flight.FlightEndpoint
}

// securityUnauthenticatedAtTheCoordinator is the "unauthenticated at the coordinator" part of TestSecurity.
func securityUnauthenticatedAtTheCoordinator(t *testing.T, g *securityShared) {
	e, q := g.e, g.q
	anon, err := e.open(t, nil)
	if err == nil {
		_, err = query(t, anon, q)
	}
	wantADBC(t, "no credentials", err, adbc.StatusUnauthenticated, "authentication required")
	_, err = e.open(t, map[string]string{adbc.OptionKeyUsername: "bob", adbc.OptionKeyPassword: "wrong"})
	wantADBC(t, "wrong password", err, adbc.StatusUnauthenticated, "wrong user name or password")
	_, err = e.open(t, map[string]string{adbc.OptionKeyUsername: "mallory", adbc.OptionKeyPassword: "bob-pw"})
	wantADBC(t, "unknown user", err, adbc.StatusUnauthenticated, "wrong user name or password")
	for what, tok := range map[string]string{
		"expired token":  e.token(t, "bob", -time.Hour),
		"tampered token": tamper(e.token(t, "bob", time.Hour)),
		"tampered JWT":   tamper(e.jwt(t, "carol", []string{"reader"}, time.Hour)),
		"expired JWT":    e.jwt(t, "carol", []string{"reader"}, -time.Hour),
	} {
		c, err := e.withToken(t, tok)
		if err == nil {
			_, err = query(t, c, q)
		}
		wantADBC(t, what, err, adbc.StatusUnauthenticated)
	}
	// The genuine JWT of the external issuer works, with its roles.
	carol, err := e.withToken(t, e.jwt(t, "carol", []string{"reader"}, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res := mustQuery(t, carol, "SELECT count(*) FROM orders"); len(res.rows) != 1 {
		t.Fatalf("carol: %v", res.rows)
	}
}

// securityUnauthenticatedAtAWorker is the "unauthenticated at a worker" part of TestSecurity.
func securityUnauthenticatedAtAWorker(t *testing.T, g *securityShared) {
	e, eps := g.e, g.eps
	loc := eps[0].Location[0].Uri
	ticket := eps[0].Ticket.Ticket
	if !strings.HasPrefix(loc, "grpc+tls://") {
		t.Fatalf("location %s is not TLS", loc)
	}
	for what, authorization := range map[string]string{
		"no credentials": "",
		"wrong password": basic("bob", "wrong"),
		"expired token":  "Bearer " + e.token(t, "bob", -time.Hour),
		"tampered JWT":   "Bearer " + tamper(e.jwt(t, "bob", nil, time.Hour)),
		"Bearer None":    "Bearer None",
	} {
		_, err := e.doGet(t, loc, ticket, authorization)
		wantCode(t, "DoGet, "+what, err, codes.Unauthenticated)
		wantCode(t, "DoPut, "+what, e.doPut(t, loc, ticket, authorization), codes.Unauthenticated)
	}
	// Bob's own password and token both pull his ticket.
	for _, authorization := range []string{basic("bob", "bob-pw"), "Bearer " + e.token(t, "bob", time.Hour)} {
		if _, err := e.doGet(t, loc, ticket, authorization); err != nil {
			t.Fatalf("bob at the worker: %v", err)
		}
	}
}

// securityOnlyTheClusterTellsWorkersOfDrops is the "only the cluster tells workers of drops" part of TestSecurity.
func securityOnlyTheClusterTellsWorkersOfDrops(t *testing.T, g *securityShared) {
	e, eps := g.e, g.eps
	cl, err := flightclient.Dial(eps[0].Location[0].Uri, e.client)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	body := []byte(`{"tables":["` + "00000000-0000-0000-0000-000000000000" + `"],"until":"2100-01-01T00:00:00Z"}`)
	stream, err := cl.DoAction(call(basic("root", "root-pw")), &flight.Action{Type: wire.ActionRevokeTables, Body: body})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCode(t, "an admin sending a revocation", err, codes.PermissionDenied)
}

// securityPartitionsOverTLSWorkers is the "partitions over TLS workers" part of TestSecurity.
func securityPartitionsOverTLSWorkers(t *testing.T, g *securityShared) {
	bob, parts, eps := g.bob, g.parts, g.eps
	owners := map[string]bool{}
	for _, ep := range eps {
		owners[ep.Location[0].Uri] = true
	}
	if len(owners) < 2 {
		t.Fatalf("endpoints owned by %v, want both workers", owners)
	}
	var rows int64
	for _, p := range parts.PartitionIDs {
		rdr, err := bob.ReadPartition(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			rows += rdr.RecordBatch().NumRows()
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	want := mustQuery(t, bob, "SELECT count(*) FROM orders").rows[0]
	if got := strings.TrimSpace(want); got == "" || rows == 0 || strconv.FormatInt(rows, 10) != got {
		t.Fatalf("partitions gave %d rows, count(*) says %s", rows, want)
	}
}

// securityTicketReplayedByAnotherPrincipal is the "ticket replayed by another principal" part of TestSecurity.
func securityTicketReplayedByAnotherPrincipal(t *testing.T, g *securityShared) {
	e, eps := g.e, g.eps
	loc, ticket := eps[1].Location[0].Uri, eps[1].Ticket.Ticket
	for _, who := range []string{"alice", "root"} {
		_, err := e.doGet(t, loc, ticket, basic(who, securePasswords[who]))
		wantCode(t, who+" replaying bob's ticket", err, codes.PermissionDenied)
	}
	jwtBob := e.jwt(t, "mallory", []string{"reader"}, time.Hour)
	_, err := e.doGet(t, loc, ticket, "Bearer "+jwtBob)
	wantCode(t, "another JWT principal", err, codes.PermissionDenied)
	// Renewing it is bob's alone too.
	alice := e.flightSQL(t, "alice")
	_, err = alice.RenewFlightEndpoint(context.Background(), &flight.RenewFlightEndpointRequest{Endpoint: eps[1]})
	wantCode(t, "alice renewing bob's endpoint", err, codes.PermissionDenied)
	renewed, err := e.flightSQL(t, "bob").RenewFlightEndpoint(context.Background(), &flight.RenewFlightEndpointRequest{Endpoint: eps[1]})
	if err != nil {
		t.Fatalf("bob renewing: %v", err)
	}
	if !renewed.ExpirationTime.AsTime().After(eps[1].ExpirationTime.AsTime()) {
		t.Error("renewal did not extend the expiry")
	}
	if exp := eps[1].ExpirationTime.AsTime(); exp.After(time.Now().Add(6 * time.Minute)) {
		t.Errorf("ticket expires at %s: the default lifetime is minutes", exp)
	}
}

// securitySingleEndpointProxyPullsAsTheCaller is the "single-endpoint proxy pulls as the caller" part of TestSecurity.
func securitySingleEndpointProxyPullsAsTheCaller(t *testing.T, g *securityShared) {
	e, bob, q := g.e, g.bob, g.q
	proxied, err := e.open(t, map[string]string{adbc.OptionKeyUsername: "bob", adbc.OptionKeyPassword: "bob-pw",
		adbcflight.OptionRPCCallHeaderPrefix + "x-icefloe-single-endpoint": "true"})
	if err != nil {
		t.Fatal(err)
	}
	_, peps := partitions(t, proxied, q)
	if len(peps) != 1 || len(peps[0].Location) != 0 {
		t.Fatalf("single-endpoint mode answered %d endpoints", len(peps))
	}
	res := mustQuery(t, proxied, "SELECT count(*) FROM orders")
	want := mustQuery(t, bob, "SELECT count(*) FROM orders")
	if res.rows[0] != want.rows[0] {
		t.Fatalf("through the proxy %v, directly %v", res.rows, want.rows)
	}
	// The proxied ticket is bob's: alice cannot pull it at the
	// coordinator, and the workers would refuse her anyway.
	alice := e.flightSQL(t, "alice")
	rdr, err := alice.DoGet(context.Background(), peps[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	wantCode(t, "alice pulling bob's proxied ticket", err, codes.PermissionDenied)
	n, err := e.doGet(t, "grpc+tls://"+e.s.Addr(), peps[0].Ticket.Ticket, basic("bob", "bob-pw"))
	if err != nil || n == 0 {
		t.Fatalf("bob pulling his proxied ticket: %d rows, %v", n, err)
	}
}

// securityDroppedTableStopsServing is the "dropped table stops serving" part of TestSecurity.
func securityDroppedTableStopsServing(t *testing.T, g *securityShared) {
	e := g.e
	root := e.login(t, "root")
	execUpdate(t, root, "CREATE TABLE gone AS SELECT * FROM orders LIMIT 100")
	_, geps := partitions(t, root, "SELECT * FROM gone")
	tok := "Bearer " + e.token(t, "root", time.Hour)
	if n, err := e.doGet(t, geps[0].Location[0].Uri, geps[0].Ticket.Ticket, tok); err != nil || n == 0 {
		t.Fatalf("before the drop: %d rows, %v", n, err)
	}
	execUpdate(t, root, "DROP TABLE gone")
	for _, ep := range geps {
		for _, l := range ep.Location {
			_, err := e.doGet(t, l.Uri, ep.Ticket.Ticket, tok)
			wantCode(t, "after DROP TABLE at "+l.Uri, err, codes.NotFound)
			if !strings.Contains(err.Error(), "dropped") {
				t.Fatalf("%v does not say the table was dropped", err)
			}
		}
	}
	_, err := e.flightSQL(t, "root").RenewFlightEndpoint(context.Background(), &flight.RenewFlightEndpointRequest{Endpoint: geps[0]})
	wantCode(t, "renewing a dropped table's ticket", err, codes.NotFound)
}

// flightSQL is an arrow-go Flight SQL client of the coordinator over TLS,
// logged in as user.
func (e *secureEnv) flightSQL(t testing.TB, user string) *flightsql.Client {
	t.Helper()
	opts := e.client
	tok := "Bearer " + e.token(t, user, time.Hour)
	opts.Authorization = func(context.Context) (string, error) { return tok, nil }
	cl, err := flightclient.Dial("grpc+tls://"+e.s.Addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return &flightsql.Client{Client: cl}
}
