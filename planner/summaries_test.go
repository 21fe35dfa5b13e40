package planner

import (
	"context"
	"regexp"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// explainFileCount matches EXPLAIN's per-input file count after pruning.
var explainFileCount = regexp.MustCompile(`(\d+) of (\d+) files`)

// TestEmptyStringPartitionPrunes: a string-partitioned table holding the
// empty string (committed with other values, through INSERT … VALUES on
// the coordinator) plans the right files for filters on the partition
// column, and its manifest's partition summary has the empty lower
// bound, not a null one every reader takes for "only nulls".
func TestEmptyStringPartitionPrunes(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, "CREATE TABLE e (name VARCHAR) PARTITIONED BY (name)")
	e.exec(t, "INSERT INTO e VALUES ('ab'), ('')")
	tbl := e.load(t, "default", "e")
	ctx := context.Background()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 1 {
		t.Fatalf("%d manifests, want 1", len(manifests))
	}
	p := manifests[0].Partitions()[0]
	if p.LowerBound == nil || *p.LowerBound == nil || len(*p.LowerBound) != 0 || p.UpperBound == nil || string(*p.UpperBound) != "ab" || p.ContainsNull {
		t.Fatalf("summary %+v, want lower '' and upper 'ab'", p)
	}
	for _, c := range []struct {
		where string
		files string
	}{
		{"name = 'ab'", "1 of 2"},
		{"name = ''", "1 of 2"},
		{"name IN ('ab', 'q')", "1 of 2"},
		{"name LIKE 'a%'", "1 of 2"},
		{"name < 'a'", "1 of 2"},
		{"name >= ''", "2 of 2"},
	} {
		plan, err := planText(ctx, e.p, e.sess, "SELECT name FROM e WHERE "+c.where)
		if err != nil {
			t.Fatal(err)
		}
		m := explainFileCount.FindStringSubmatch(plan.Explain)
		if m == nil || m[1]+" of "+m[2] != c.files {
			t.Errorf("WHERE %s: planned %v files, want %s\n%s", c.where, m, c.files, plan.Explain)
		}
	}
	// iceberg-go's own planning agrees (it reads the same summary).
	tasks, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("name"), "ab"))).PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("iceberg-go plans %d files for name = 'ab' (%v), want 1", len(tasks), err)
	}
}
