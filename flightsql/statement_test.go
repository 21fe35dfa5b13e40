package flightsql

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v: code %s, want %s", err, status.Code(err), code)
	}
}

// checkPlanned asserts info is the fake planner's plan: its schema, one
// endpoint per ticket with the ticket bytes as-is and the locations in
// order, and unknown totals.
func checkPlanned(t *testing.T, info *flight.FlightInfo) {
	t.Helper()
	if sc := infoSchema(t, info); !sc.Equal(planSchema) {
		t.Errorf("schema = %s", sc)
	}
	eps := info.GetEndpoint()
	if len(eps) != 2 {
		t.Fatalf("%d endpoints", len(eps))
	}
	wantLocs := [][]string{{"grpc://10.0.0.1:4001", "grpc://10.0.0.2:4001"}, {"grpc://10.0.0.2:4001"}}
	for i, ep := range eps {
		if got := string(ep.GetTicket().GetTicket()); got != []string{"ticket-1", "ticket-2"}[i] {
			t.Errorf("endpoint %d ticket = %q", i, got)
		}
		var locs []string
		for _, l := range ep.GetLocation() {
			locs = append(locs, l.GetUri())
		}
		if !slices.Equal(locs, wantLocs[i]) {
			t.Errorf("endpoint %d locations = %v", i, locs)
		}
	}
	if info.TotalRecords != -1 || info.TotalBytes != -1 {
		t.Errorf("totals = %d, %d", info.TotalRecords, info.TotalBytes)
	}
}

func TestStatementQuery(t *testing.T) {
	e := start(t)
	info, err := e.client.Execute(context.Background(), "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, info)
	c := e.planner.last(t, "Plan")
	if c.query != "SELECT id, name FROM t" || c.session != (planner.Session{Catalog: "local", Schema: "default"}) {
		t.Errorf("planner got %+v", c)
	}
	if n := e.planner.count("Exec"); n != 0 {
		t.Errorf("query ran %d updates", n)
	}

	res, err := e.client.GetExecuteSchema(context.Background(), "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := flight.DeserializeSchema(res.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Equal(planSchema) {
		t.Errorf("GetExecuteSchema = %s", sc)
	}
}

// An update sent as a query (Python ADBC's cursor.execute) runs at once and
// answers an empty result whose TotalRecords is the update count, from one
// endpoint the coordinator serves.
func TestStatementUpdateThroughQuery(t *testing.T) {
	e := start(t)
	info, err := e.client.Execute(context.Background(), "INSERT INTO t VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	if c := e.planner.last(t, "Exec"); c.query != "INSERT INTO t VALUES (1)" {
		t.Errorf("exec got %+v", c)
	}
	if info.TotalRecords != 7 {
		t.Errorf("TotalRecords = %d, want 7", info.TotalRecords)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Fatalf("endpoints = %v", info.Endpoint)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, arrow.NewSchema(nil, nil))
	if rows(recs) != 0 {
		t.Errorf("%d rows", rows(recs))
	}
	if n := e.planner.count("Exec"); n != 1 {
		t.Errorf("DoGet re-ran the update: %d execs", n)
	}
}

func TestStatementUpdate(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	n, err := e.client.ExecuteUpdate(ctx, "CREATE TABLE t (a INT)")
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("count = %d", n)
	}
	if c := e.planner.last(t, "Exec"); c.query != "CREATE TABLE t (a INT)" || c.session.Catalog != "local" {
		t.Errorf("exec got %+v", c)
	}
	_, err = e.client.ExecuteUpdate(ctx, "SELECT 1")
	wantCode(t, err, codes.InvalidArgument)
}

func TestPreparedQuery(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if !prep.DatasetSchema().Equal(planSchema) {
		t.Errorf("dataset schema = %s", prep.DatasetSchema())
	}
	if ps := prep.ParameterSchema(); ps == nil || ps.NumFields() != 0 {
		t.Errorf("parameter schema = %v", ps)
	}
	if upd, ok := prep.IsUpdate(); !ok || upd {
		t.Errorf("IsUpdate = %v, %v", upd, ok)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, info)
	if c := e.planner.last(t, "Plan"); c.query != "SELECT id, name FROM t" {
		t.Errorf("planned %+v", c)
	}
	// A query prepared cannot be run as an update.
	_, err = prep.ExecuteUpdate(ctx)
	wantCode(t, err, codes.InvalidArgument)
}

func TestPreparedUpdate(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "INSERT INTO t SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if ds := prep.DatasetSchema(); ds == nil || ds.NumFields() != 0 {
		t.Fatalf("dataset schema of an update = %v, want empty", ds)
	}
	if upd, ok := prep.IsUpdate(); !ok || !upd {
		t.Errorf("IsUpdate = %v, %v", upd, ok)
	}
	if n := e.planner.count("Exec"); n != 0 {
		t.Fatalf("prepare ran the update")
	}
	// JDBC: DoPut CommandPreparedStatementUpdate, one DoPutUpdateResult.
	n, err := prep.ExecuteUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("count = %d", n)
	}
	// Python ADBC: GetFlightInfo on the prepared statement, even for INSERT.
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.TotalRecords != 7 {
		t.Errorf("TotalRecords = %d", info.TotalRecords)
	}
	sc, recs := fetch(t, e.client, info)
	if sc.NumFields() != 0 || rows(recs) != 0 {
		t.Errorf("update stream: %s, %d rows", sc, rows(recs))
	}
	if n := e.planner.count("Exec"); n != 2 {
		t.Errorf("%d execs, want 2", n)
	}
}

func TestPreparedHandleTampered(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)

	// A handle sealed under another key, a worker ticket sealed under this
	// key, and garbage are all refused.
	other, _ := wire.RandomKey()
	foreign, _ := seal(other, preparedQueryID, preparedHandle{SQL: "SELECT 1"}, time.Hour)
	workerTicket, _ := e.key.Seal(&wire.Ticket{QueryID: "q", SQL: "SELECT 1"})
	expired, _ := seal(e.key, preparedQueryID, preparedHandle{SQL: "SELECT 1"}, -time.Second)
	for name, h := range map[string][]byte{"foreign": foreign, "worker": workerTicket, "garbage": []byte("xyz"), "expired": expired} {
		_, err := e.srv.GetFlightInfoPreparedStatement(ctx, handleCmd(h), nil)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s handle: %v", name, err)
		}
	}
}

// A worker ticket sent to the coordinator fails with a clear message.
func TestWorkerTicketAtCoordinator(t *testing.T) {
	e := start(t)
	tkt, err := e.key.Seal(&wire.Ticket{QueryID: "q", SQL: "SELECT 1", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := e.client.DoGet(context.Background(), &flight.Ticket{Ticket: tkt})
	if err == nil {
		rdr.Release()
	}
	wantCode(t, err, codes.FailedPrecondition)
}

type handleCmd []byte

func (h handleCmd) GetPreparedStatementHandle() []byte { return h }
