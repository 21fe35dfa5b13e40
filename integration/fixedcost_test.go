package integration

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanTimes adds up the time of every ended span by name: what the
// fixed-cost profile reads (BenchmarkFixedCost).
type spanTimes struct {
	mu    sync.Mutex
	total map[string]time.Duration
	open  time.Duration // the fragments' icefloe.open_us
}

func (s *spanTimes) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanTimes) OnEnd(sp sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := sp.Name()
	for _, a := range sp.Attributes() {
		switch {
		case a.Key == "icefloe.open_us":
			s.open += time.Duration(a.Value.AsInt64()) * time.Microsecond
		case a.Key == "icefloe.child" && a.Value.AsBool():
			name = "child-" + name // a peer's pull of a partial result
		}
	}
	s.total[name] += sp.EndTime().Sub(sp.StartTime())
}
func (s *spanTimes) Shutdown(context.Context) error   { return nil }
func (s *spanTimes) ForceFlush(context.Context) error { return nil }

func (s *spanTimes) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total, s.open = map[string]time.Duration{}, 0
}

// BenchmarkFixedCost is the fixed-cost profile of small queries over the
// demo table through the Go ADBC driver, on an in-process cluster of two
// workers: where a query's time goes, from the spans every statement
// records — on the coordinator the statement (GetFlightInfo) and within it
// parse, bind, plan and the sealing of its endpoints' tickets; on the
// workers each fragment, the opening of its ticket, the loading of its
// inputs (views over the files, or tables read through iceberg-go) and
// DuckDB's run (prepare, execute, send). Client time is the wall time of
// ExecuteQuery plus reading the stream (the driver's own span
// FlightSQLStatement.ExecuteQuery is its GetFlightInfo call); what is left
// after the statement and the endpoints' fragments is the client, the
// network and the transfer. Fragments a final fragment pulls from peers
// are child-fragment (run while the endpoint's fragment waits for them).
// Each figure is per query (ms/op); fragments of several endpoints add up
// (the client reads them in parallel, so the rest may come out negative).
// Reported, never asserted: bench/latency.py runs it.
func BenchmarkFixedCost(b *testing.B) {
	rec := &spanTimes{}
	rec.reset()
	prev := otel.GetTracerProvider()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	b.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	s := StartCluster(b, Demo(), Workers(2))
	cnxn := adbcConn(b, s.Addr())
	for _, q := range []struct{ name, sql string }{
		{"select1", "SELECT 1"},
		{"count", "SELECT count(*) FROM orders"},
		{"point", "SELECT id, status, amount FROM orders WHERE id = 4242"},
		{"groupby", "SELECT status, count(*) FROM orders GROUP BY status ORDER BY status"},
	} {
		b.Run(q.name, func(b *testing.B) {
			for range 5 { // warm the caches
				mustQuery(b, cnxn, q.sql)
			}
			rec.reset()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				mustQuery(b, cnxn, q.sql)
			}
			b.StopTimer()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
			names := make([]string, 0, len(rec.total))
			for name := range rec.total {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				b.ReportMetric(ms(rec.total[name]), name+"-ms/op")
			}
			b.ReportMetric(ms(rec.open), "open-ms/op")
			wall := b.Elapsed()
			rest := wall - rec.total["statement"] - rec.total["fragment"]
			b.ReportMetric(ms(rest), "client+network-ms/op")
		})
	}
}
