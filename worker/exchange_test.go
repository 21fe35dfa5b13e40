package worker

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/wire"
)

// producer is partition j of count of the producer instance id over the
// fixture's table: its rows, and the partition of each by its id.
func (f *fixture) producer(id string, j, count int) *wire.Ticket {
	f.t.Helper()
	tk := f.ticket("SELECT * FROM t0", f.scanOf(f.tbl, "t0", nil, nil, false))
	tk.SQL = fmt.Sprintf("SELECT *, hash(id) %% %d AS __icefloe_partition FROM (SELECT * FROM t0)", count)
	tk.Child = true
	tk.Partition = &wire.Partition{Producer: id, Index: j, Count: count}
	return tk
}

// consumer runs sql over view v, fed by the children: streamed, each
// pulled from the fixture's own worker.
func (f *fixture) consumer(sql string, children ...*wire.Ticket) *wire.Ticket {
	f.t.Helper()
	conn, err := f.eng.Conn(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	schema, err := flight.DeserializeSchema(children[0].Schema, memory.DefaultAllocator)
	if err != nil {
		f.t.Fatal(err)
	}
	empty, err := array.NewRecordReader(schema, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	err = conn.LoadTable(f.ctx, "v", empty)
	empty.Release()
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := conn.QuerySchema(f.ctx, sql)
	if err != nil {
		f.t.Fatal(err)
	}
	tk := &wire.Ticket{QueryID: f.t.Name(), ExpiresAt: time.Now().Add(time.Hour), SQL: sql,
		Schema: flight.SerializeSchema(out, memory.DefaultAllocator)}
	for _, c := range children {
		tk.Children = append(tk.Children, wire.Child{View: "v", Ticket: f.seal(c), Locations: []string{"grpc://" + f.addr}, Rows: 10, Once: true})
	}
	return tk
}

// partitionOf lists the ids of the fixture's table in partition j of n,
// as DuckDB hashes them.
func (f *fixture) partitionOf(j, n int) []int {
	f.t.Helper()
	conn, err := f.eng.Conn(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.DB().QueryContext(f.ctx, fmt.Sprintf("SELECT range FROM range(%d) WHERE hash(range) %% %d = %d ORDER BY 1", totalRows, n, j))
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id int
		rows.Scan(&id)
		out = append(out, id)
	}
	return out
}

// waitRunsEnd waits until the worker holds no producer run.
func (f *fixture) waitRunsEnd() {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for f.srv.Exchanges().Running > 0 {
		if time.Now().After(deadline) {
			f.t.Fatalf("producer runs left: %+v", f.srv.Exchanges())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two consumers pull their partitions of one producer at once: the
// producer reads the table once, each consumer gets exactly the rows that
// hash to its partition, and together every row.
func TestExchangeReadsInputOnce(t *testing.T) {
	f := newFixture(t)
	sql := "SELECT id, s FROM v ORDER BY id"
	var wg sync.WaitGroup
	res := make([]result, 2)
	for j := range 2 {
		tk := f.seal(f.consumer(sql, f.producer("p", j, 2)))
		wg.Go(func() { res[j] = f.doGet(f.ctx, tk) })
	}
	wg.Wait()
	for j := range 2 {
		if res[j].err != nil {
			t.Fatal(res[j].err)
		}
		if want := idRows(f.partitionOf(j, 2)...); !slices.Equal(res[j].rows, want) || len(want) == 0 {
			t.Fatalf("partition %d:\n%v\nwant\n%v", j, res[j].rows, want)
		}
	}
	if st := f.srv.Exchanges(); st.Runs != 1 {
		t.Fatalf("exchanges %+v, want the producer run once", st)
	}
	f.waitRunsEnd()
	if st := f.srv.Exchanges(); st.Rows != totalRows {
		t.Fatalf("exchanges %+v: the producer put %d rows, want each of %d once", st, st.Rows, totalRows)
	}
	// Partition 0 once more (a consumer run again): another run, the same
	// rows.
	again := f.doGet(f.ctx, f.seal(f.consumer(sql, f.producer("p", 0, 2))))
	if again.err != nil || !slices.Equal(again.rows, res[0].rows) {
		t.Fatalf("again: %v, %v", again.rows, again.err)
	}
	if st := f.srv.Exchanges(); st.Runs != 2 {
		t.Fatalf("exchanges %+v, want a second run", st)
	}
}

// A run that holds one batch in memory spills the rest: a partition whose
// consumer comes after the producer ended reads it back whole.
func TestExchangeSpillsForALateConsumer(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ExchangeMemory = 1 })
	sql := "SELECT id, s FROM v ORDER BY id"
	first := f.doGet(f.ctx, f.seal(f.consumer(sql, f.producer("p", 0, 2))))
	if first.err != nil {
		t.Fatal(first.err)
	}
	late := f.doGet(f.ctx, f.seal(f.consumer(sql, f.producer("p", 1, 2))))
	if late.err != nil {
		t.Fatal(late.err)
	}
	for j, r := range []result{first, late} {
		if want := idRows(f.partitionOf(j, 2)...); !slices.Equal(r.rows, want) {
			t.Fatalf("partition %d:\n%v\nwant\n%v", j, r.rows, want)
		}
	}
	f.waitRunsEnd()
	if st := f.srv.Exchanges(); st.Runs != 1 || st.SpilledBatches == 0 {
		t.Fatalf("exchanges %+v, want one run that spilled", st)
	}
}

// Partitions whose consumers do not come end the run: one that never
// reads its view (DuckDB skipped the scan) tells the producer's worker
// so, before or after the run started, and one never pulled is dropped
// when its ticket expires.
func TestExchangeConsumersThatDoNotRead(t *testing.T) {
	f := newFixture(t)
	count := func(id string, j int) {
		t.Helper()
		res := f.doGet(f.ctx, f.seal(f.consumer("SELECT count(*) AS n FROM v", f.producer(id, j, 2))))
		if want := fmt.Sprint(len(f.partitionOf(j, 2))); res.err != nil || len(res.rows) != 1 || res.rows[0] != want {
			t.Fatalf("partition %d: got %v, %v; want %s", j, res.rows, res.err, want)
		}
	}
	skip := func(id string, j int) {
		t.Helper()
		res := f.doGet(f.ctx, f.seal(f.consumer("SELECT count(*) AS n FROM v WHERE false", f.producer(id, j, 2))))
		if res.err != nil || len(res.rows) != 1 || res.rows[0] != "0" {
			t.Fatalf("got %v, %v", res.rows, res.err)
		}
	}
	skip("before", 0) // no run yet
	count("before", 1)
	f.waitRunsEnd()
	count("after", 1) // the run holds partition 0 for its consumer
	if n := f.srv.Exchanges().Running; n != 1 {
		t.Fatalf("%d runs, want the one waiting for partition 0", n)
	}
	skip("after", 0)
	f.waitRunsEnd()

	short := f.producer("expired", 0, 2)
	short.ExpiresAt = time.Now().Add(2 * time.Second)
	res := f.doGet(f.ctx, f.seal(f.consumer("SELECT count(*) AS n FROM v", short)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	f.waitRunsEnd() // partition 1 expired
	if st := f.srv.Exchanges(); st.Runs != 3 {
		t.Fatalf("exchanges %+v", st)
	}
}

// A producer that fails fails its consumers with its error.
func TestExchangeProducerFails(t *testing.T) {
	f := newFixture(t)
	p := f.producer("p", 0, 1)
	p.SQL = "SELECT * FROM t0" // no partition column
	res := f.doGet(f.ctx, f.seal(f.consumer("SELECT count(*) AS n FROM v", p)))
	wantCode(t, res.err, codes.Internal, "producer result has 3 columns")
	f.waitRunsEnd()
}

// A fragment whose DuckDB plan scans a streamed view twice (a window
// aggregate without ORDER BY becomes a self-join) runs again over loaded
// views and answers right.
func TestExchangeViewScannedTwice(t *testing.T) {
	f := newFixture(t)
	sql := "SELECT id, g - avg(g) OVER (PARTITION BY s IS NULL) AS d FROM %s ORDER BY id"
	want := f.doGet(f.ctx, f.seal(f.ticket(fmt.Sprintf(sql, "t0"), f.scanOf(f.tbl, "t0", nil, nil, false))))
	if want.err != nil {
		t.Fatal(want.err)
	}
	got := f.doGet(f.ctx, f.seal(f.consumer(fmt.Sprintf(sql, "v"), f.producer("p", 0, 1))))
	if got.err != nil || !slices.Equal(got.rows, want.rows) || len(got.rows) != totalRows {
		t.Fatalf("got %v, %v\nwant %v", got.rows, got.err, want.rows)
	}
	if st := f.srv.Exchanges(); st.Runs != 2 {
		t.Fatalf("exchanges %+v, want a streamed attempt and a loaded one", st)
	}
	if err := f.lastHandled(); err != nil {
		t.Fatal(err)
	}
}

// A producer that runs out of DuckDB's memory before putting a row, while
// a fragment of an older query runs, waits for it and runs again, as a
// fragment does.
func TestExchangeProducerYields(t *testing.T) {
	f := newFixture(t)
	conn, err := f.eng.Conn(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Exec(f.ctx, "CREATE SEQUENCE s_producer")
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	p := f.producer("p", 0, 1)
	p.SQL = "SELECT *, CASE WHEN nextval('s_producer') = 1 THEN error('Out of Memory Error: could not allocate block of size 256.0 KiB') " +
		"ELSE hash(id) % 1 END AS __icefloe_partition FROM (SELECT * FROM t0)"
	before := f.srv.YieldedFragments()
	_, end := f.srv.ages.start("a big query")
	got := make(chan result, 1)
	tk := f.seal(f.consumer("SELECT count(*) AS n FROM v", p))
	go func() { got <- f.doGet(f.ctx, tk) }()
	select {
	case res := <-got:
		t.Fatalf("answered while the older query ran: %v %v", res.rows, res.err)
	case <-time.After(300 * time.Millisecond):
	}
	end()
	res := <-got
	if res.err != nil || !slices.Equal(res.rows, []string{fmt.Sprint(totalRows)}) {
		t.Fatalf("after the older query ended: %v %v", res.rows, res.err)
	}
	if n := f.srv.YieldedFragments() - before; n != 1 {
		t.Fatalf("yielded %d, want the producer once", n)
	}
}
