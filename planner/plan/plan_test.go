package plan

import (
	"fmt"
	"testing"
	"time"
)

// TestFormat prints a shuffle-shaped plan: a hash exchange with keys per
// input, a merge, figures estimated and measured, groups beyond the
// printed ones.
func TestFormat(t *testing.T) {
	big := &Scan{Input: 0, Table: "c.s.l", View: "__icefloe_t0", Columns: []string{"k", "v"}, Files: 20, FilesBefore: 30,
		Bytes: 2000, BytesBefore: 3000, Figures: Figures{EstRows: 200, EstBytes: 2000}}
	for range 18 {
		big.Groups = append(big.Groups, Group{Files: 1, Bytes: 100, Rows: 10})
	}
	small := &Scan{Input: 1, Table: "c.s.o", View: "__icefloe_t1", Files: 1, FilesBefore: 1, Bytes: 10, BytesBefore: 10,
		Whole: true, Groups: []Group{{1, 10, 5}}, Figures: Figures{EstRows: 5, EstBytes: 10}}
	left := &Fragment{Role: "partition", SQL: "SELECT * FROM __icefloe_t0", Per: big, In: []Node{big},
		Figures: Figures{EstRows: 200, EstBytes: 2000, Measured: &Measured{Rows: 190, Bytes: 1900, Time: 3 * time.Millisecond, Streams: 18}}}
	right := &Fragment{Role: "partition", SQL: "SELECT * FROM __icefloe_t1", Place: PlaceAny, In: []Node{small},
		Figures: Figures{EstRows: Unknown, EstBytes: Unknown}}
	hash := &Exchange{Kind: ExchangeHash, Keys: [][]string{{"k"}, {"ok"}}, Partitions: 4, In: []Node{left, right},
		Figures: Figures{EstRows: Unknown, EstBytes: Unknown}}
	join := &Fragment{Role: "join", SQL: "SELECT …", Place: PlaceAny, In: []Node{hash}, Figures: Figures{EstRows: Unknown, EstBytes: Unknown}}
	merge := &Exchange{Kind: ExchangeMerge, Order: `"k" DESC`, View: "__icefloe_partials", In: []Node{join},
		Figures: Figures{EstRows: Unknown, EstBytes: Unknown}}
	res := &Result{Strategy: Gather, Label: "gather (test)", Ordered: true,
		Endpoints: []*Fragment{{Role: "final", SQL: "SELECT 1", Place: PlaceLargest, Direct: true, ChildLimit: 3,
			In: []Node{&Aggregate{Phase: Final, Kind: "top-n", In: merge}}}}}
	want := `Result gather (test), ordered (est 0 rows, 0 bytes)
  Fragment final [×1, at the largest input, direct Parquet read, child limit 3]: SELECT 1 (est 0 rows, 0 bytes)
    Aggregate final top-n (est 0 rows, 0 bytes)
      Exchange merge by "k" DESC as __icefloe_partials (est ? rows, ? bytes)
        Fragment join [×1, any worker]: SELECT … (est ? rows, ? bytes)
          Exchange hash on (k) and (ok) into 4 partitions from 19 producers (est ? rows, ? bytes)
            Fragment partition [×18, per group]: SELECT * FROM __icefloe_t0 (est 200 rows, 2000 bytes; actual 190 rows, 1900 bytes, 3ms in 18 streams)
              Scan c.s.l as __icefloe_t0 [k, v]: 20 of 30 files, 2000 of 3000 bytes, 18 groups (est 200 rows, 2000 bytes)
` + groupLines(16) + `                … 2 more groups
            Fragment partition [×1, any worker]: SELECT * FROM __icefloe_t1 (est ? rows, ? bytes)
              Scan c.s.o as __icefloe_t1 [*]: 1 of 1 files, 10 of 10 bytes, whole (est 5 rows, 10 bytes)
`
	if got := Format(res); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	n := 0
	Walk(res, func(Node) { n++ })
	if n != 10 {
		t.Errorf("Walk visited %d nodes, want 10", n)
	}
}

func groupLines(n int) string {
	s := ""
	for i := range n {
		s += fmt.Sprintf("                group %d: 1 files, 100 bytes, est 10 rows\n", i)
	}
	return s
}

func TestVerdict(t *testing.T) {
	if got := (Verdict{Rule: "broadcast", Reason: "join of large tables"}).String(); got != "broadcast: does not apply (join of large tables)" {
		t.Errorf("verdict: %q", got)
	}
	if got := (Verdict{Rule: "gather", Applied: true, Reason: "x"}).String(); got != "gather: applies (x)" {
		t.Errorf("verdict: %q", got)
	}
}

// TestFormatWrite prints a write's plan: its sink over the fragments
// that read its input, and redacts the fragments' SQL under it.
func TestFormatWrite(t *testing.T) {
	scan := &Scan{Table: "c.s.t", View: "__icefloe_t0", Files: 3, FilesBefore: 3, Bytes: 300, BytesBefore: 300,
		Groups: []Group{{2, 200, 20}, {1, 100, 10}}, Figures: Figures{EstRows: 30, EstBytes: 300}}
	frag := &Fragment{Role: "rewrite", SQL: "SELECT * FROM __icefloe_t0 WHERE id <> 7", Per: scan, In: []Node{scan},
		Figures: Figures{EstRows: 30, EstBytes: 300}}
	w := &Write{Sink: SinkRowDelta, Table: "c.s.t", Snapshot: 42, Fragments: 2, In: frag}
	want := `Write row delta into c.s.t at snapshot 42: 2 fragments, one commit (est 0 rows, 0 bytes)
  Fragment rewrite [×2, per group]: SELECT * FROM __icefloe_t0 WHERE id <> 7 (est 30 rows, 300 bytes)
    Scan c.s.t as __icefloe_t0 [*]: 3 of 3 files, 300 of 300 bytes, 2 groups (est 30 rows, 300 bytes)
      group 0: 2 files, 200 bytes, est 20 rows
      group 1: 1 files, 100 bytes, est 10 rows
`
	if got := Format(w); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	r := redacted(w, func(string) string { return "SELECT ?" }, map[*Scan]*Scan{}).(*Write)
	if got := r.In.(*Fragment).SQL; got != "SELECT ?" || frag.SQL == got {
		t.Errorf("redacted write: fragment SQL %q", got)
	}
	if (&Write{Sink: SinkIngest, Table: "c.s.t", Fragments: 3}).Inputs() != nil {
		t.Error("an ingest's sink has inputs")
	}
}
