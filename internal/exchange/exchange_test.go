package exchange

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var valueSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var producedSchema = arrow.NewSchema(append(slices.Clone(valueSchema.Fields()),
	arrow.Field{Name: "__part", Type: arrow.PrimitiveTypes.Uint64}), nil)

// produced is a producer's batch: ids from..from+n-1, their string (NULL
// every 5th) and partition part(id).
func produced(mem memory.Allocator, from, n int, part func(int) uint64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, producedSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("v" + string(rune('a'+i%26)))
		}
		b.Field(2).(*array.Uint64Builder).Append(part(i))
	}
	return b.NewRecordBatch()
}

func ids(rec arrow.RecordBatch) []int64 {
	return slices.Clone(rec.Column(0).(*array.Int64).Int64Values())
}

func TestSplit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	rec := produced(mem, 0, 1000, func(i int) uint64 { return uint64(i*7) % 3 })
	defer rec.Release()
	parts, err := Split(ctx, rec, 3, valueSchema)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for j, p := range parts {
		if p == nil || !p.Schema().Equal(valueSchema) {
			t.Fatalf("partition %d: %v", j, p)
		}
		got := ids(p)
		for k, id := range got {
			if uint64(id*7)%3 != uint64(j) || (k > 0 && got[k-1] >= id) {
				t.Fatalf("partition %d holds id %d (rows in order: %v)", j, id, got[:min(len(got), 10)])
			}
			s := p.Column(1).(*array.String)
			if (id%5 == 0) != s.IsNull(k) || (!s.IsNull(k) && s.Value(k) != "v"+string(rune('a'+id%26))) {
				t.Fatalf("partition %d row %d: id %d with string %q", j, k, id, s.ValueStr(k))
			}
		}
		all = append(all, got...)
		p.Release()
	}
	slices.Sort(all)
	if len(all) != 1000 || all[0] != 0 || all[999] != 999 {
		t.Fatalf("partitions hold %d rows", len(all))
	}

	// All in one partition: the batch's own columns, no copy.
	one := produced(mem, 0, 10, func(int) uint64 { return 1 })
	defer one.Release()
	parts, err = Split(ctx, one, 2, valueSchema)
	if err != nil {
		t.Fatal(err)
	}
	if parts[0] != nil || parts[1].NumRows() != 10 || parts[1].Column(0) != one.Column(0) {
		t.Fatalf("one partition: %v", parts)
	}
	parts[1].Release()

	bad := produced(mem, 0, 10, func(i int) uint64 { return uint64(i) })
	defer bad.Release()
	if _, err := Split(ctx, bad, 4, valueSchema); err == nil {
		t.Fatal("a partition past n split")
	}
}

// newSpill is a spill of limit bytes in the test's folder, closed at its
// end.
func newSpill(t *testing.T, limit int64) *Spill {
	t.Helper()
	s, err := NewSpill(t.TempDir(), limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func memBound(t *testing.T, n int64) *Memory {
	t.Helper()
	m, err := NewMemory(n)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newExchange(t *testing.T, o Options) *Exchange {
	t.Helper()
	if o.Schema == nil {
		o.Schema = valueSchema
	}
	x, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func batch(mem memory.Allocator, from, n int) arrow.RecordBatch {
	rec := produced(mem, from, n, func(int) uint64 { return 0 })
	defer rec.Release()
	return array.NewRecordBatch(valueSchema, rec.Columns()[:2], rec.NumRows())
}

// drain reads a partition to its end and returns its ids.
func drain(ctx context.Context, r *Reader) ([]int64, error) {
	defer r.Release()
	var out []int64
	for {
		rec, err := r.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ids(rec)...)
		rec.Release()
	}
}

// Consumers read their partitions while the producer puts them, each
// every row of its own in order, and nothing is left allocated.
func TestExchangeStreams(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	x := newExchange(t, Options{Partitions: 3, Memory: memBound(t, 4<<10)})
	var wg sync.WaitGroup
	got := make([][]int64, 3)
	for j := range 3 {
		r, ok := x.Claim(j)
		if !ok {
			t.Fatal("claim")
		}
		wg.Go(func() {
			var err error
			if got[j], err = drain(ctx, r); err != nil {
				t.Error(err)
			}
		})
	}
	for i := 0; i < 300; i += 10 {
		if err := x.Put(ctx, (i/10)%3, batch(mem, i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	x.Close(nil)
	wg.Wait()
	for j := range 3 {
		if len(got[j]) != 100 {
			t.Fatalf("partition %d: %d rows", j, len(got[j]))
		}
		for k, id := range got[j] {
			if want := int64((k/10)*30 + j*10 + k%10); id != want {
				t.Fatalf("partition %d row %d: id %d, want %d", j, k, id, want)
			}
		}
	}
	<-x.Done()
}

// Past its memory an exchange spills; what spilled reads back whole and
// its files go once read.
func TestExchangeSpills(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	spill := newSpill(t, 1<<30)
	x := newExchange(t, Options{Partitions: 2, Memory: memBound(t, 1), Spill: spill, Allocator: mem})
	r0, _ := x.Claim(0)
	r1, _ := x.Claim(1)
	for i := 0; i < 200; i += 20 {
		if err := x.Put(ctx, (i/20)%2, batch(mem, i, 20)); err != nil {
			t.Fatal(err)
		}
	}
	x.Close(nil)
	st := x.Stats()
	if st.SpilledBatches != 9 || st.Rows != 200 || spill.Used() == 0 {
		t.Fatalf("stats %+v, spill holds %d bytes; want 9 of 10 batches spilled", st, spill.Used())
	}
	if files, _ := os.ReadDir(spill.Dir()); len(files) != 9 {
		t.Fatalf("%d spill files", len(files))
	}
	for j, r := range []*Reader{r0, r1} {
		got, err := drain(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 100 {
			t.Fatalf("partition %d: %d rows", j, len(got))
		}
	}
	if files, _ := os.ReadDir(spill.Dir()); len(files) != 0 || spill.Used() != 0 {
		t.Fatalf("%d spill files, %d bytes left", len(files), spill.Used())
	}
}

// With memory and spill full, Put waits until the consumer reads.
func TestExchangeBackPressure(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	spill := newSpill(t, 1)
	x := newExchange(t, Options{Partitions: 1, Memory: memBound(t, 1), Spill: spill, Allocator: mem})
	r, _ := x.Claim(0)
	if err := x.Put(ctx, 0, batch(mem, 0, 10)); err != nil {
		t.Fatal(err)
	}
	// No room: a Put must wait, so one whose context has ended fails.
	stopped, stop := context.WithCancelCause(ctx)
	stop(errors.New("gave up waiting"))
	if err := x.Put(stopped, 0, batch(mem, 10, 10)); err == nil || err.Error() != "gave up waiting" {
		t.Fatalf("put into a full exchange: %v, want it to wait", err)
	}
	putDone := make(chan error)
	go func() { putDone <- x.Put(ctx, 0, batch(mem, 20, 10)) }()
	rec, err := r.Next(ctx) // makes room
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := <-putDone; err != nil {
		t.Fatal(err)
	}
	x.Close(nil)
	got, err := drain(ctx, r)
	if err != nil || len(got) != 10 || got[0] != 20 {
		t.Fatalf("left %v, %v", got, err)
	}
}

// Short of room, an exchange drops a partition nobody claimed before it
// makes the producer wait; its consumer then cannot claim it.
func TestExchangeDropsUnclaimed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	x := newExchange(t, Options{Partitions: 2, Memory: memBound(t, 1)})
	r, _ := x.Claim(1)
	if err := x.Put(ctx, 0, batch(mem, 0, 10)); err != nil { // partition 0 has no consumer yet
		t.Fatal(err)
	}
	if err := x.Put(ctx, 1, batch(mem, 10, 10)); err != nil { // no room: 0 goes
		t.Fatal(err)
	}
	if st := x.Stats(); st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, ok := x.Claim(0); ok {
		t.Fatal("claimed a dropped partition")
	}
	if err := x.Put(ctx, 0, batch(mem, 20, 10)); err != nil { // freed
		t.Fatal(err)
	}
	x.Close(nil)
	if got, err := drain(ctx, r); err != nil || len(got) != 10 || got[0] != 10 {
		t.Fatalf("partition 1: %v, %v", got, err)
	}
	select {
	case <-x.Done():
	default:
		t.Fatal("not done once every partition ended")
	}
}

// Released partitions free what they hold; once none is left, Put says
// so and Done closes. DropWaiting ends the unclaimed ones.
func TestExchangeConsumersGone(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	spill := newSpill(t, 1<<30)
	x := newExchange(t, Options{Partitions: 3, Memory: memBound(t, 1), Spill: spill, Allocator: mem})
	r0, _ := x.Claim(0)
	for i := range 6 {
		if err := x.Put(ctx, i%3, batch(mem, i*10, 10)); err != nil {
			t.Fatal(err)
		}
	}
	r0.Release()
	r0.Release()
	if n := x.DropWaiting(); n != 2 {
		t.Fatalf("dropped %d", n)
	}
	<-x.Done()
	if err := x.Put(ctx, 1, batch(mem, 60, 10)); !errors.Is(err, ErrNoConsumers) {
		t.Fatalf("put with no consumer left: %v", err)
	}
	if spill.Used() != 0 {
		t.Fatalf("spill holds %d bytes", spill.Used())
	}
	x.Close(nil)
}

// A failed producer fails its consumers at once.
func TestExchangeProducerFails(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	x := newExchange(t, Options{Partitions: 2})
	r, _ := x.Claim(0)
	if err := x.Put(ctx, 0, batch(mem, 0, 10)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("the producer failed")
	x.Abort(boom)
	if _, err := r.Next(ctx); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	r.Release()
	<-x.Done()
}

// Exchanges sharing a Memory share its bound: what one holds makes the
// other spill (past its first batch, which an empty exchange always
// takes), and what is read is free for the other again.
func TestExchangesShareMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	sample := batch(mem, 0, 100)
	size := util.TotalRecordSize(sample)
	sample.Release()
	shared := memBound(t, 3*size)
	spill := newSpill(t, 1<<30)
	a := newExchange(t, Options{Partitions: 1, Memory: shared, Spill: spill, Allocator: mem})
	b := newExchange(t, Options{Partitions: 1, Memory: shared, Spill: spill, Allocator: mem})
	ra, _ := a.Claim(0)
	rb, _ := b.Claim(0)
	defer ra.Release()
	defer rb.Release()
	put := func(x *Exchange, from int) {
		t.Helper()
		if err := x.Put(ctx, 0, batch(mem, from, 100)); err != nil {
			t.Fatal(err)
		}
	}
	spilled := func(x *Exchange, want int) {
		t.Helper()
		if got := x.Stats().SpilledBatches; got != want {
			t.Fatalf("%d batches spilled, want %d (memory %d of %d)", got, want, shared.Used(), shared.Limit())
		}
	}
	for i := range 4 {
		put(a, i*100)
	}
	spilled(a, 1) // three fit
	put(b, 0)     // b holds nothing: it takes one
	spilled(b, 0)
	put(b, 100)
	spilled(b, 1)
	for range 2 {
		rec, err := ra.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	put(b, 200) // two of a's read: room again
	spilled(b, 1)
	a.Close(nil)
	b.Close(nil)
	for j, r := range []*Reader{ra, rb} {
		got, err := drain(ctx, r)
		if err != nil || len(got) != []int{200, 300}[j] {
			t.Fatalf("exchange %d: %d rows left, %v", j, len(got), err)
		}
	}
	if shared.Used() != 0 || spill.Used() != 0 {
		t.Fatalf("left: memory %d, spill %d", shared.Used(), spill.Used())
	}
}
