package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// oomOnce is a ticket SQL that fails the first time it runs with the text
// of DuckDB running out of memory and answers 42 after.
func oomOnce(t *testing.T, f *fixture, seq string) string {
	t.Helper()
	conn, err := f.eng.Conn(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec(f.ctx, "CREATE SEQUENCE "+seq); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("SELECT CASE WHEN nextval('%s') = 1 THEN error('Out of Memory Error: could not allocate block of size 256.0 KiB') ELSE 42 END AS x", seq)
}

// TestYieldToOlderQueries: a fragment that runs out of DuckDB's memory
// while a fragment of an older query runs waits for it to end and runs
// again; alone, or with only its own query's fragments running, it fails
// at once with RESOURCE_EXHAUSTED.
func TestYieldToOlderQueries(t *testing.T) {
	f := newFixture(t)

	t.Run("alone", func(t *testing.T) {
		res := f.doGet(f.ctx, f.seal(f.ticket(oomOnce(t, f, "s_alone"))))
		wantCode(t, res.err, codes.ResourceExhausted, "Out of Memory", "limits.memory_budget")
	})
	t.Run("own query older", func(t *testing.T) {
		tk := f.ticket(oomOnce(t, f, "s_own"))
		_, end := f.srv.ages.start(tk.QueryID) // say, its parent fragment
		defer end()
		res := f.doGet(f.ctx, f.seal(tk))
		wantCode(t, res.err, codes.ResourceExhausted, "Out of Memory")
	})
	t.Run("older query", func(t *testing.T) {
		before := f.srv.YieldedFragments()
		_, end := f.srv.ages.start("a big query")
		defer end()
		tk := f.ticket(oomOnce(t, f, "s_older"))
		got := make(chan result, 1)
		go func() { got <- f.doGet(f.ctx, f.seal(tk)) }()
		select {
		case res := <-got:
			t.Fatalf("answered while the older query ran: %v %v", res.rows, res.err)
		case <-time.After(300 * time.Millisecond):
		}
		end()
		res := <-got
		if res.err != nil || !slices.Equal(res.rows, []string{"42"}) {
			t.Fatalf("after the older query ended: %v %v", res.rows, res.err)
		}
		if n := f.srv.YieldedFragments() - before; n != 1 {
			t.Fatalf("yielded %d fragments, want 1", n)
		}
	})
}

func TestFragmentAges(t *testing.T) {
	var a fragmentAges
	first, endFirst := a.start("q1")
	second, endSecond := a.start("q2")
	third, endThird := a.start("q1")
	defer endThird()
	if n := len(a.older(first, "q9")); n != 0 {
		t.Fatalf("the first has %d older, want 0", n)
	}
	if n := len(a.older(third, "q1")); n != 1 {
		t.Fatalf("q1's second fragment waits for %d, want 1 (q2's; not its own query's)", n)
	}
	older := a.older(second, "q2")
	if len(older) != 1 {
		t.Fatalf("q2 waits for %d, want 1", len(older))
	}
	ctx := context.Background()
	if waitFor(ctx, older, 50*time.Millisecond) {
		t.Fatal("waitFor ended while the older fragment ran")
	}
	endFirst()
	endFirst() // ending twice is harmless
	if !waitFor(ctx, older, time.Second) {
		t.Fatal("waitFor did not end with the older fragment")
	}
	endSecond()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if waitFor(cancelled, a.older(third+1, "q9"), time.Minute) {
		t.Fatal("waitFor on a cancelled context said every fragment ended")
	}
}
