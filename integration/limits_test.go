package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/flightclient"
)

// slowQuery runs for a minute or more on the demo tables (50 billion
// rows joined; a fast unloaded machine still takes tens of seconds), so
// a statement timeout, a cancel or Ctrl-C always ends it, never its own
// end.
const slowQuery = "SELECT count(*) AS n FROM orders a, orders b, (SELECT amount FROM orders LIMIT 20) c WHERE a.amount + b.amount + c.amount < 0"

// grpcCode is the gRPC code an ADBC error carries.
func grpcCode(err error) codes.Code {
	var ae adbc.Error
	if errors.As(err, &ae) {
		return codes.Code(ae.VendorCode)
	}
	return status.Code(err)
}

func wantLimit(t testing.TB, what string, err error, want codes.Code, words ...string) {
	t.Helper()
	if got := grpcCode(err); got != want {
		t.Fatalf("%s: %v (code %s), want %s", what, err, got, want)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %q does not name %q", what, err, w)
		}
	}
}

// waitStats waits until cond holds for the stats stats returns.
func waitStats(t testing.TB, what string, stats func() admit.Stats, cond func(admit.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond(stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: stats stay %+v", what, stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One worker runs one fragment at a time and queues one: a third query
// is refused at once, the queued one gives up after the queue timeout,
// the running one is ended on the worker by the statement timeout, and
// cheap work answers throughout.
func TestAdmissionQueueAndStatementTimeout(t *testing.T) {
	lim := cluster.NewLimits(0, 0, 0, 1, 0, 1, 1500*time.Millisecond, 5*time.Second)
	s := StartCluster(t, Demo(), Workers(1), WithLimits(lim))
	w := s.Workers[0]
	conns := make([]adbc.Connection, 4)
	for i := range conns {
		conns[i] = adbcConn(t, s.Addr())
	}
	running, queued := make(chan error, 1), make(chan error, 1)
	go func() { running <- runADBC(conns[0], slowQuery, false, false) }()
	waitStats(t, "first running", w.Admission, func(st admit.Stats) bool { return st.Running == 1 })
	go func() { queued <- runADBC(conns[1], slowQuery, false, false) }()
	waitStats(t, "second queued", w.Admission, func(st admit.Stats) bool { return st.Queued == 1 })

	err := runADBC(conns[2], slowQuery, false, false)
	wantLimit(t, "third query", err, codes.ResourceExhausted,
		"queue full: 1 fragments running, 1 queued (limit key limits.max_running_fragments)")

	// The cheap lane: no slot needed while the worker is full.
	if res := mustQuery(t, conns[3], "SELECT 1 AS one"); len(res.rows) != 1 {
		t.Fatalf("SELECT 1 under saturation: %v", res.rows)
	}
	objs, err := conns[3].GetObjects(context.Background(), adbc.ObjectDepthTables, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatalf("GetTables under saturation: %v", err)
	}
	objs.Release()

	wantLimit(t, "queued query", <-queued, codes.ResourceExhausted, "queued too long after 1.5s")
	wantLimit(t, "running query", <-running, codes.DeadlineExceeded, "statement_timeout of 5s")
	if n := w.TimedOutFragments(); n != 1 {
		t.Fatalf("worker ended %d fragments by their timeout, want 1", n)
	}
	waitStats(t, "slot given back", w.Admission, func(st admit.Stats) bool { return st.Running == 0 && st.Queued == 0 })
	if st := w.Admission(); st.Refused != 1 || st.TimedOut != 1 {
		t.Fatalf("worker admission counts %+v, want 1 refused, 1 timed out", st)
	}
}

// A coordinator full of slow statements refuses one more, but SELECT 1
// and metadata calls still answer; a session's statement_timeout ends
// the slow write on its worker.
func TestCoordinatorLimitCheapLane(t *testing.T) {
	lim := cluster.NewLimits(1, 0, 0, 0, 0, 0, time.Second, 0)
	s := StartCluster(t, Demo(), Workers(1), WithLimits(lim))
	// The driver's cookie middleware keeps session options.
	slow := adbcConn(t, s.Addr(), map[string]string{adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled})
	other := adbcConn(t, s.Addr())
	if err := slow.(adbc.PostInitOptions).SetOption("adbc.flight.sql.session.option.statement_timeout", "4s"); err != nil {
		t.Fatalf("set statement_timeout: %v", err)
	}
	if v, err := slow.(adbc.GetSetOptions).GetOption("adbc.flight.sql.session.option.statement_timeout"); err != nil || v != "4s" {
		t.Fatalf("statement_timeout reads back %q, %v", v, err)
	}
	done := make(chan error, 1)
	go func() { done <- runADBC(slow, "CREATE TABLE slow_ctas AS "+slowQuery, true, false) }()
	c := s.Coordinator
	waitStats(t, "CTAS running", c.Admission, func(st admit.Stats) bool { return st.Running == 1 })

	err := runADBC(other, "SELECT count(*) FROM orders", false, false)
	wantLimit(t, "second statement", err, codes.ResourceExhausted,
		"queue full: 1 statements running, 0 queued (limit key limits.max_running_statements)")
	if res := mustQuery(t, other, "SELECT 1 AS one"); len(res.rows) != 1 {
		t.Fatalf("SELECT 1 under saturation: %v", res.rows)
	}
	if _, err := other.GetTableSchema(context.Background(), nil, nil, "orders"); err != nil {
		t.Fatalf("GetTables under saturation: %v", err)
	}
	wantLimit(t, "slow CTAS", <-done, codes.DeadlineExceeded, "statement_timeout of 4s")
	// The worker ends its write fragment at the same deadline.
	waitStats(t, "write fragment ended", s.Workers[0].Admission, func(admit.Stats) bool { return s.Workers[0].TimedOutFragments() == 1 })
	waitStats(t, "slot given back", c.Admission, func(st admit.Stats) bool { return st.Running == 0 })
}

// One principal runs at most one fragment per worker; another principal
// is not held back by it.
func TestPerPrincipalLimit(t *testing.T) {
	lim := cluster.NewLimits(0, 0, 0, 4, 1, 0, time.Second, 4*time.Second)
	e := startSecure(t, func(o *cluster.StandaloneOptions) { o.Workers, o.Limits = 1, lim })
	bob1, bob2, root := e.login(t, "bob"), e.login(t, "bob"), e.login(t, "root")
	first := make(chan error, 1)
	go func() { first <- runADBC(bob1, slowQuery, false, false) }()
	w := e.s.Workers[0]
	waitStats(t, "bob running", w.Admission, func(st admit.Stats) bool { return st.Running == 1 })

	err := runADBC(bob2, slowQuery, false, false)
	wantLimit(t, "bob's second query", err, codes.ResourceExhausted,
		"principal bob has 1 fragments running", "limits.max_running_fragments_per_principal")
	// root's slow query is admitted beside bob's, then timed out.
	wantLimit(t, "root's query", runADBC(root, slowQuery, false, false), codes.DeadlineExceeded, "statement_timeout of 4s")
	wantLimit(t, "bob's first query", <-first, codes.DeadlineExceeded, "statement_timeout of 4s")
	if st := w.Admission(); st.Admitted != 2 || st.Refused != 1 {
		t.Fatalf("worker admission counts %+v, want 2 admitted, 1 refused", st)
	}
}

// DuckDB out of memory on a worker is ResourceExhausted, and pulling
// with fallback does not run the doomed fragment at the next location.
func TestOutOfMemoryNotRetried(t *testing.T) {
	s := StartCluster(t, Demo(), WorkerMemory("32MB"))
	cnxn := adbcConn(t, s.Addr())
	const q = "SELECT length(string_agg(repeat('x', 100000), '')) AS n FROM orders"
	wantLimit(t, "ADBC", runADBC(cnxn, q, false, false), codes.ResourceExhausted, "Out of Memory")

	_, eps := partitions(t, cnxn, q)
	pool := flightclient.NewPool(flightclient.Options{}, 0)
	defer pool.Close()
	var runs int64
	for _, w := range s.Workers {
		runs -= w.Admission().Admitted
	}
	for _, ep := range eps {
		var locs []string
		for _, l := range ep.Location {
			locs = append(locs, l.Uri)
		}
		if len(locs) < 2 {
			t.Fatalf("endpoint has no fallback location: %v", locs)
		}
		err := pool.Pull(context.Background(), locs, ep.Ticket.Ticket, flightclient.PullOptions{}, func(r arrow.RecordBatch) error {
			r.Release()
			return nil
		})
		var pe *flightclient.PullError
		if !errors.As(err, &pe) || len(pe.Attempts) != 1 || status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("pull: %v (%+v), want one ResourceExhausted attempt", err, pe)
		}
	}
	for _, w := range s.Workers {
		runs += w.Admission().Admitted
	}
	if runs != int64(len(eps)) {
		t.Fatalf("%d fragment runs for %d endpoints: the fragment was retried", runs, len(eps))
	}
}
