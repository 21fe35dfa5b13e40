package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// Shapes of client SQL that build a large value inside one expression:
// lists, strings and structs made from a count, nested in one another, in
// every place of a statement DuckDB evaluates (constant folding while the
// coordinator binds included). DuckDB's memory_limit bounds none of them
// (its buffer manager never sees an expression's vectors), so they are
// what a bound that names no function has to hold.

// A valueBuilder is an expression building one large value from a count
// (SQL text, a BIGINT).
type valueBuilder struct {
	name string
	// list: the value is a list (else a string); numeric: of numbers.
	list, numeric bool
	expr          func(n string) string
}

var valueBuilders = []valueBuilder{
	{"range", true, true, func(n string) string { return "range(" + n + ")" }},
	{"generate_series", true, true, func(n string) string { return "generate_series(1, " + n + ")" }},
	{"list_transform", true, true, func(n string) string { return "list_transform(range(" + n + "), x -> x * 2)" }},
	{"list of structs", true, false, func(n string) string {
		return "list_transform(range(" + n + " // 4), x -> {'a': x, 'b': 'v' || x})"
	}},
	{"list of strings", true, false, func(n string) string {
		return "list_transform(range(" + n + " // 1000), x -> repeat('ab', 500))"
	}},
	{"nested lists", true, false, func(n string) string { return "[range(" + n + " // 2), range(" + n + " // 2)]" }},
	{"list repeat", true, true, func(n string) string { return "repeat([1, 2, 3], " + n + " // 3)" }},
	{"list_concat", true, true, func(n string) string { return "list_concat(range(" + n + " // 2), range(" + n + " // 2))" }},
	{"string repeat", false, false, func(n string) string { return "repeat('x', " + n + ")" }},
	{"string from a list", false, false, func(n string) string {
		return "array_to_string(list_transform(range(" + n + " // 10), x -> 'abcdefghij'), '')"
	}},
	{"list cast to text", false, false, func(n string) string { return "CAST(range(" + n + " // 4) AS VARCHAR)" }},
	{"string_agg", false, false, func(n string) string {
		return "(SELECT string_agg(CAST(i AS VARCHAR), ',') FROM range(" + n + " // 4) g(i))"
	}},
	{"array_agg", true, true, func(n string) string { return "(SELECT array_agg(i) FROM range(" + n + ") g(i))" }},
}

// scalars turn a builder's value into small scalars (BIGINT) that consume
// it: its length, and for lists the rows unnest makes of it and, for
// numbers, their sum.
func (b valueBuilder) scalars(n string) []string {
	e := b.expr(n)
	if !b.list {
		return []string{"length(" + e + ")"}
	}
	out := []string{"len(" + e + ")", "(SELECT count(*) FROM (SELECT unnest(" + e + ") AS u))"}
	if b.numeric {
		out = append(out, "CAST(list_aggregate("+e+", 'sum') AS BIGINT)")
	}
	return out
}

// A valuePlace puts a scalar into a statement: update statements run as
// updates. perRow places have a column i of range(2) that the count may
// use, so the value is built per row as the statement runs, not folded.
// noQuery places take no subquery (INSERT … VALUES refuses one).
type valuePlace struct {
	name                    string
	update, perRow, noQuery bool
	sql                     func(s string) string
}

var valuePlaces = []valuePlace{
	{"select list", false, false, false, func(s string) string { return "SELECT " + s + " AS v" }},
	{"where", false, false, false, func(s string) string { return "SELECT count(*) AS v FROM range(3) t(i) WHERE " + s + " > i" }},
	{"per row", false, true, false, func(s string) string { return "SELECT " + s + " AS v FROM range(2) t(i)" }},
	{"per row in where", false, true, false, func(s string) string {
		return "SELECT count(*) AS v FROM range(2) t(i) WHERE " + s + " > 0"
	}},
	{"values", false, false, false, func(s string) string { return "SELECT x AS v FROM (VALUES (" + s + ")) w(x)" }},
	{"cte", false, false, false, func(s string) string { return "WITH c AS (SELECT " + s + " AS v) SELECT v FROM c" }},
	{"subquery", false, false, false, func(s string) string { return "SELECT (SELECT " + s + ") AS v" }},
	{"order by", false, true, false, func(s string) string { return "SELECT i FROM range(2) t(i) ORDER BY " + s + " + i" }},
	{"aggregate", false, true, false, func(s string) string { return "SELECT sum(" + s + ") AS v FROM range(2) t(i)" }},
	{"insert values", true, false, true, func(s string) string { return "INSERT INTO shape_sink VALUES (" + s + ")" }},
	{"insert select", true, true, false, func(s string) string {
		return "INSERT INTO shape_sink SELECT " + s + " FROM range(2) t(i)"
	}},
}

// valueShape is one statement of the generator.
type valueShape struct {
	name, sql string
	update    bool
	// fits: small enough that it must answer.
	fits bool
}

// Counts of the generator: huge makes one allocation far past any budget
// here (12 GB of BIGINT); growing passes the budget as a list doubles;
// small fits.
const (
	hugeCount    = "1500000000"
	growingCount = "200000000"
	smallCount   = "100000"
)

// valueShapes is every builder in every place with a huge count (the
// builder's scalars taking turns), every builder's scalars with a growing
// count in the select list and per row, and every builder's scalars with
// a small count, which must answer.
func valueShapes() []valueShape {
	var out []valueShape
	for bi, b := range valueBuilders {
		for pi, p := range valuePlaces {
			n := hugeCount
			if p.perRow {
				n = hugeCount + " + i"
			}
			ss := b.scalars(n)
			if p.noQuery {
				ss = slices.DeleteFunc(ss, func(s string) bool { return strings.Contains(s, "SELECT") })
			}
			if len(ss) > 0 {
				out = append(out, valueShape{name: b.name + " huge in " + p.name, sql: p.sql(ss[(bi+pi)%len(ss)]), update: p.update})
			}
		}
		for si, s := range b.scalars(growingCount) {
			out = append(out, valueShape{name: fmt.Sprintf("%s growing %d", b.name, si), sql: valuePlaces[0].sql(s)})
		}
		for si, s := range b.scalars(growingCount + " + i") {
			out = append(out, valueShape{name: fmt.Sprintf("%s growing per row %d", b.name, si), sql: valuePlaces[2].sql(s)})
		}
		for si, s := range b.scalars(smallCount) {
			out = append(out, valueShape{name: fmt.Sprintf("%s small %d", b.name, si), sql: valuePlaces[0].sql(s), fits: true})
		}
	}
	// The statements the budget was first seen to miss.
	return append(out,
		valueShape{name: "list_aggregate of range", sql: "SELECT list_aggregate(range(1500000000), 'sum') AS v"},
		valueShape{name: "unnest of range", sql: "SELECT unnest(range(CAST(2e9 AS BIGINT))) AS v"},
	)
}

// TestMemoryShapes runs `icefloe serve` with a 1 GiB budget and sends it
// every statement valueShapes generates: each answers, or fails with
// RESOURCE_EXHAUSTED naming the limit's config key; the process stays up
// and its peak RSS under the budget plus the documented overhead. A
// watchdog kills the server when its RSS passes the budget by 2 GiB, so a
// missing bound fails the test instead of the machine.
func TestMemoryShapes(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("limits:\n  memory_budget: 1GiB\n  max_temp_directory_size: 256MiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startProc(t, bin, nil, "serve", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
	pid := r.cmd.Process.Pid
	var killedAt atomic.Int64
	watch := make(chan struct{})
	defer close(watch)
	go func() {
		for {
			select {
			case <-watch:
				return
			case <-time.After(10 * time.Millisecond):
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return
			}
			if rss := statusField(string(b), "VmRSS"); rss > testBudget+2<<30 {
				killedAt.Store(rss)
				r.cmd.Process.Kill()
				return
			}
		}
	}()
	cnxn := adbcConn(t, r.addr())
	if err := runADBC(cnxn, "CREATE TABLE shape_sink (v BIGINT)", true, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("RSS at rest: %d MiB", procStatus(t, pid, "VmRSS")>>20)
	shapes := valueShapes()
	refused := 0
	for _, s := range shapes {
		err := runADBC(cnxn, s.sql, s.update, false)
		if n := killedAt.Load(); n > 0 {
			t.Fatalf("%s: %s: the server passed %d MiB of RSS and was killed", s.name, s.sql, n>>20)
		}
		select {
		case e := <-r.exited:
			t.Fatalf("%s: %s: the server exited (%v): %v\n%s", s.name, s.sql, e, err, lastLines(r.log(), 20))
		default:
		}
		switch {
		case err == nil:
		case s.fits:
			t.Fatalf("%s: %s: %v", s.name, s.sql, err)
		default:
			refused++
			wantLimit(t, s.name+": "+s.sql, err, codes.ResourceExhausted, "(limit key limits.")
		}
		t.Logf("%s: RSS %d MiB, peak %d MiB, refused %v", s.name, procStatus(t, pid, "VmRSS")>>20, procStatus(t, pid, "VmHWM")>>20, err != nil)
		if peak := procStatus(t, pid, "VmHWM"); peak > testBudget+testRSSOverhead {
			t.Fatalf("%s: %s: peak RSS %d MiB, over the budget of %d MiB plus %d MiB", s.name, s.sql, peak>>20, testBudget>>20, testRSSOverhead>>20)
		}
	}
	if refused == 0 {
		t.Fatal("no statement was refused: the generator builds nothing large")
	}
	wantRows(t, cnxn, "SELECT count(*) FROM shape_sink", "0")
	t.Logf("%d statements, %d refused; peak RSS %d MiB", len(shapes), refused, procStatus(t, pid, "VmHWM")>>20)
}

// statusField reads a size field (kB) of a /proc/PID/status text in bytes,
// 0 when it is missing.
func statusField(status, field string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), "kB"), &kb)
			return kb << 10
		}
	}
	return 0
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
