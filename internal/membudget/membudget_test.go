package membudget

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestAccountCountsAndFrees(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	b := New(1<<20, 1<<19, checked)
	a := b.Account("q1")
	defer a.Close()
	bld := array.NewInt64Builder(a)
	for i := range 10000 {
		bld.Append(int64(i))
	}
	arr := bld.NewArray()
	bld.Release()
	if got, want := b.Used(), int64(checked.CurrentAlloc()); got != want {
		t.Fatalf("budget counts %d bytes, the allocator holds %d", got, want)
	}
	if b.QueryUsed("q1") != b.Used() {
		t.Fatalf("query q1 uses %d, process %d", b.QueryUsed("q1"), b.Used())
	}
	if err := a.Err(); err != nil {
		t.Fatalf("80 KB within 512 KiB: %v", err)
	}
	arr.Release()
	if b.Used() != 0 {
		t.Fatalf("after release the budget counts %d bytes", b.Used())
	}
	if b.Peak() < 80000 {
		t.Fatalf("peak %d, want at least the 80 KB the array held", b.Peak())
	}
}

func TestQueryLimitNamesKeyAndQuery(t *testing.T) {
	b := New(0, 1<<16, nil)
	a := b.Account("0f3a")
	defer a.Close()
	buf := a.Allocate(1 << 17)
	defer a.Free(buf)
	err := a.Err()
	if !Exhausted(err) {
		t.Fatalf("128 KiB over a 64 KiB query limit: err = %v", err)
	}
	for _, want := range []string{QueryKey, "0f3a", "64.0 KiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// Another query within its own limit is not refused by this one's.
	other := b.Account("other")
	defer other.Close()
	if err := other.Err(); err != nil {
		t.Fatalf("other query: %v", err)
	}
}

func TestProcessBudgetSharedByQueries(t *testing.T) {
	b := New(1<<20, 0, nil)
	q1, q2 := b.Account("q1"), b.Account("q2")
	defer q1.Close()
	defer q2.Close()
	b1 := q1.Allocate(600 << 10)
	if err := q2.Err(); err != nil {
		t.Fatalf("600 KiB of 1 MiB: %v", err)
	}
	b2 := q2.Allocate(600 << 10)
	err := q2.Err()
	if !Exhausted(err) || !strings.Contains(err.Error(), BudgetKey) || !strings.Contains(err.Error(), "q2") {
		t.Fatalf("1.2 MiB over a 1 MiB budget: err = %v", err)
	}
	q1.Free(b1)
	if err := q2.Err(); err != nil {
		t.Fatalf("after q1 freed: %v", err)
	}
	b2 = q2.Reallocate(100<<10, b2)
	q2.Free(b2)
	if b.Used() != 0 {
		t.Fatalf("used %d after every free", b.Used())
	}
}

func TestAccountsOfOneQueryShareItsTotal(t *testing.T) {
	b := New(0, 1<<20, nil)
	a1, a2 := b.Account("q"), b.Account("q")
	buf1 := a1.Allocate(600 << 10)
	buf2 := a2.Allocate(600 << 10)
	if !Exhausted(a1.Err()) {
		t.Fatal("two fragments of one query together past its limit: no error")
	}
	a1.Free(buf1)
	a2.Free(buf2)
	a1.Close()
	if b.QueryUsed("q") != 0 {
		t.Fatal("query total not shared")
	}
	a2.Close()
	a2.Close() // idempotent
	if len(b.queries) != 0 {
		t.Fatalf("closed query still listed: %v", b.queries)
	}
}

func TestCheckWithoutAccount(t *testing.T) {
	if err := Check(memory.DefaultAllocator); err != nil {
		t.Fatal(err)
	}
	b := New(10, 0, nil)
	a := b.Account("q")
	defer a.Close()
	buf := a.Allocate(64)
	defer a.Free(buf)
	if !Exhausted(Check(a)) {
		t.Fatal("Check of an account over budget: nil")
	}
}

func TestSplit(t *testing.T) {
	const gib = 1 << 30
	s := Split(4*gib, 8*gib, 0, true, 2)
	if s.Engine != 2*gib {
		t.Fatalf("DuckDB's heap %d, not half of 4 GiB", s.Engine)
	}
	// The buffer managers spill at three quarters of DuckDB's half; the
	// rest is for what DuckDB allocates outside them.
	if s.Planner+2*s.Worker > s.Engine*3/4 || s.Planner == 0 || s.Worker == 0 {
		t.Fatalf("DuckDB memory limits %d + 2×%d do not fit three quarters of %d", s.Planner, s.Worker, s.Engine)
	}
	if s.PlannerTemp+2*s.WorkerTemp > 8*gib {
		t.Fatalf("temp shares %d + 2×%d pass 8 GiB", s.PlannerTemp, s.WorkerTemp)
	}
	if s.Arrow != gib || s.Query != gib/2 || s.GoLimit != 2*gib {
		t.Fatalf("arrow %d query %d go %d", s.Arrow, s.Query, s.GoLimit)
	}
	if w := Split(4*gib, 0, 1<<20, false, 1); w.Planner != 0 || w.Worker != 3*gib/2 || w.Engine != 2*gib || w.Query != 1<<20 {
		t.Fatalf("worker process: %+v", w)
	}
	if c := Split(4*gib, 0, 0, true, 0); c.Planner != 3*gib/2 || c.Worker != 0 || c.Engine != 2*gib {
		t.Fatalf("coordinator process: %+v", c)
	}
	if Default() < MinBudget || Machine() <= 0 {
		t.Fatal("default budget")
	}
}

// TestProcessAccount: a process account counts toward the process's total
// with no query limit of its own, and names itself when the process is past
// its budget.
func TestProcessAccount(t *testing.T) {
	b := New(1<<20, 256<<10, nil)
	p := b.Process("ingest stream")
	buf := p.Allocate(512 << 10)
	if err := p.Err(); err != nil {
		t.Fatalf("512 KiB of a 1 MiB process budget, over the 256 KiB query limit: %v", err)
	}
	q := b.Account("q1")
	defer q.Close()
	qb := q.Allocate(600 << 10)
	err := p.Err()
	if !Exhausted(err) || !strings.Contains(err.Error(), BudgetKey) || !strings.Contains(err.Error(), "ingest stream") {
		t.Fatalf("1.1 MiB over a 1 MiB budget: err = %v", err)
	}
	q.Free(qb)
	p.Free(buf)
	release := p.Hold(2 << 20)
	if err := p.Err(); !Exhausted(err) {
		t.Fatalf("2 MiB held of a 1 MiB budget: err = %v", err)
	}
	release()
	release()
	p.Close()
	if b.Used() != 0 || b.QueryUsed("ingest stream") != 0 {
		t.Fatalf("used %d after every free", b.Used())
	}
}
