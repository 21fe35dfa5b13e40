package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestResultSchemasAgree: for every strategy and both read paths, the
// FlightInfo's schema, the prepared statement's dataset schema and every
// endpoint's stream (empty ones included) carry the same schema, Flight SQL
// column metadata included, and that metadata gives DECIMAL(12,2) 12/2.
func TestResultSchemasAgree(t *testing.T) {
	queries := []string{
		"SELECT id, amount, status FROM orders WHERE status = 'shipped'",                      // scatter
		"SELECT o.amount, c.name FROM orders o JOIN customers c ON o.customer_id = c.id",      // broadcast
		"SELECT amount FROM orders UNION ALL SELECT CAST(id AS DECIMAL(12,2)) FROM customers", // union all
		"SELECT status, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY status", // two-phase
		"SELECT id, amount FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 5",           // top-n
		"SELECT count(DISTINCT customer_id) AS n, max(amount) AS top FROM orders",             // gather
		"SELECT id, amount, row_number() OVER (ORDER BY id) AS r FROM orders",                 // gather
		"SELECT * FROM orders",                        // passthrough
		"SELECT id, amount FROM orders WHERE id < 0",  // empty
		"SELECT amount, amount AS amount FROM orders", // duplicate names
	}
	for _, mode := range []struct {
		name string
		opts []Option
	}{{"direct reads", nil}, {"iceberg-go reads", []Option{IcebergGoReads()}}} {
		t.Run(mode.name, func(t *testing.T) {
			s := StartCluster(t, append([]Option{Workers(2), Demo()}, mode.opts...)...)
			cl := flightClient(t, s.Addr())
			for _, q := range queries {
				checkSchemasAgree(t, cl, q)
			}
		})
	}
}

// checkSchemasAgree compares q's FlightInfo schema with its prepared
// statement's dataset schema and FlightInfo, and with each endpoint's
// stream, and checks the metadata of every column named amount.
func checkSchemasAgree(t *testing.T, cl *flightsql.Client, q string) {
	t.Helper()
	ctx := context.Background()
	info, err := cl.Execute(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	want, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("%s: FlightInfo schema: %v", q, err)
	}
	for _, f := range want.Fields() {
		if f.Name != "amount" && f.Name != "top" {
			continue
		}
		for k, v := range map[string]string{"TYPE_NAME": "DECIMAL(12,2)", "PRECISION": "12", "SCALE": "2"} {
			if got, _ := f.Metadata.GetValue("ARROW:FLIGHT:SQL:" + k); got != v {
				t.Errorf("%s: column %s %s = %q, want %q", q, f.Name, k, got, v)
			}
		}
	}
	prep, err := cl.Prepare(ctx, q)
	if err != nil {
		t.Fatalf("%s: prepare: %v", q, err)
	}
	defer prep.Close(ctx)
	if !prep.DatasetSchema().Equal(want) {
		t.Errorf("%s: dataset schema\n%v\nFlightInfo schema\n%v", q, prep.DatasetSchema(), want)
	}
	pinfo, err := prep.Execute(ctx)
	if err != nil {
		t.Fatalf("%s: prepared execute: %v", q, err)
	}
	for _, fi := range []*flight.FlightInfo{info, pinfo} {
		for i, ep := range fi.Endpoint {
			if got := streamSchema(t, ep); !got.Equal(want) {
				t.Errorf("%s: endpoint %d's stream schema\n%v\nFlightInfo schema\n%v", q, i, got, want)
			}
		}
	}
}

// streamSchema reads ep from its first location to the end and returns
// the schema its stream carried.
func streamSchema(t *testing.T, ep *flight.FlightEndpoint) *arrow.Schema {
	t.Helper()
	ctx := context.Background()
	loc := strings.TrimPrefix(ep.Location[0].Uri, "grpc://")
	wc, err := flight.NewClientWithMiddleware(loc, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	stream, err := wc.DoGet(ctx, ep.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	sc := rdr.Schema()
	for rdr.Next() {
		if !rdr.RecordBatch().Schema().Equal(sc) {
			t.Errorf("a batch's schema %v differs from its stream's %v", rdr.RecordBatch().Schema(), sc)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return sc
}
