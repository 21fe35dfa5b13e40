package flightsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// TestRecentSessionsBoundedByBytes: sessions whose options hold long
// values (a client picks a schema name's length) are remembered only up
// to the memo's bound in bytes, the oldest dropped first.
func TestRecentSessionsBoundedByBytes(t *testing.T) {
	const bound = 1 << 20
	r := newRecentSessionsOf(bound)
	long := strings.Repeat("s", 64<<10)
	for i := range 100 {
		r.add(fmt.Sprintf("session-%d", i), sessionState{gen: 1, options: map[string]*flight.SessionOptionValue{
			OptionSchema: stringValue(long + fmt.Sprint(i)),
		}})
	}
	if b := r.bytes.Load(); b > bound || b < bound/2 {
		t.Fatalf("the memo counts %d bytes, want within its bound %d (and near it)", b, bound)
	}
	if r.lru.Len() >= 100 || r.lru.Len() == 0 {
		t.Fatalf("%d sessions remembered", r.lru.Len())
	}
	if !r.lru.Contains("session-99") || r.lru.Contains("session-0") {
		t.Fatal("the newest session was dropped, or the oldest kept")
	}
	var sum int64
	for _, st := range r.lru.Values() {
		sum += st.size
	}
	if sum != r.bytes.Load() {
		t.Fatalf("entries hold %d bytes, the memo counts %d", sum, r.bytes.Load())
	}
}
