//go:build catalogs

package catalogs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/wire"
)

// TestRESTVendedCredentials: credentials the REST catalog vends with a
// table reach workers only inside sealed tickets; an endpoint expires no
// later than they do; RenewFlightEndpoint vends new ones and reseals.
func TestRESTVendedCredentials(t *testing.T) {
	uri, _ := startREST(t)
	gw := startGateway(t, uri, "icefloe", "pw", time.Hour)
	// Under the ticket lifetime (an hour here, so that the credentials
	// decide the expiry), over iceberg-go's 5 min refresh buffer.
	const vendTTL = 20 * time.Minute
	cfg := catalog.Config{Name: "rest", Type: "rest", Properties: map[string]string{"uri": gw.srv.URL, "credential": "icefloe:pw"}}
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	s := startClusterKey(t, key, time.Hour, cfg)
	cnxn := connect(t, s.Addr())
	run(t, cnxn, "CREATE SCHEMA rest.v")
	run(t, cnxn, "CREATE TABLE rest.v.t (id INTEGER)")
	run(t, cnxn, "INSERT INTO rest.v.t VALUES (1), (2), (3)")
	gw.mu.Lock()
	gw.vendTTL = vendTTL
	gw.mu.Unlock()

	ctx := context.Background()
	cl, err := flightsql.NewClient(s.Addr(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	before := time.Now()
	info, err := cl.Execute(ctx, "SELECT * FROM rest.v.t")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) == 0 {
		t.Fatal("no endpoints")
	}
	ep := info.Endpoint[0]
	limit := before.Add(vendTTL + time.Second)
	if exp := ep.GetExpirationTime().AsTime(); exp.IsZero() || exp.After(limit) || exp.Before(before.Add(vendTTL-time.Minute)) {
		t.Fatalf("endpoint expires %v; the vended credentials expire about %v", exp, before.Add(vendTTL))
	}
	first := openTicket(t, key, ep.Ticket.Ticket)
	token := first.Scans[0].Props["s3.session-token"]
	if token == "" || first.Scans[0].Props["s3.secret-access-key"] == "" {
		t.Fatalf("ticket lacks the vended credentials: %s", first)
	}
	if bytes.Contains(ep.Ticket.Ticket, []byte("vended-")) {
		t.Fatal("vended credentials are readable in the ticket bytes")
	}

	time.Sleep(10 * time.Millisecond)
	renewed, err := cl.RenewFlightEndpoint(ctx, &flight.RenewFlightEndpointRequest{Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	second := openTicket(t, key, renewed.Ticket.Ticket)
	if got := second.Scans[0].Props["s3.session-token"]; got == "" || got == token {
		t.Fatalf("renewed ticket has token %q, had %q: not vended again", got, token)
	}
	if second.Scans[0].MetadataLocation != first.Scans[0].MetadataLocation {
		t.Fatal("renewal changed the pinned table version")
	}
	if !renewed.GetExpirationTime().AsTime().After(ep.GetExpirationTime().AsTime()) || renewed.GetExpirationTime().AsTime().After(time.Now().Add(vendTTL+time.Second)) {
		t.Fatalf("renewed expiry %v (was %v)", renewed.GetExpirationTime().AsTime(), ep.GetExpirationTime().AsTime())
	}
	if len(renewed.Location) != len(ep.Location) {
		t.Fatal("renewal changed the locations")
	}
	// The renewed ticket is served.
	conn, err := grpc.NewClient(renewed.Location[0].Uri[len("grpc://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := flight.NewFlightServiceClient(conn).DoGet(ctx, renewed.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows int64
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
	}
	if err := rdr.Err(); err != nil || rows != 3 {
		t.Fatalf("renewed ticket: %d rows, %v; want 3", rows, err)
	}
}

func openTicket(t *testing.T, key *wire.Key, sealed []byte) *wire.Ticket {
	t.Helper()
	tk, err := key.Open(sealed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
