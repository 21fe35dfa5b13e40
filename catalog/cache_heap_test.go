package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/memsize"
)

// metadataVersions writes n metadata files of one table as a stream of
// appends leaves them: version i holds first+i snapshots, each with the
// summary an append writes, and the snapshot log. It returns their
// locations and the total length of their JSON.
func metadataVersions(t *testing.T, n, first int) ([]string, int64) {
	t.Helper()
	_, tbl := newLocalTable(t, "typed", typedSchema)
	tbl = appendJSON(t, tbl, typedBatches[0])
	raw, err := os.ReadFile(strings.TrimPrefix(tbl.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	tmpl := doc["snapshots"].([]any)[0].(map[string]any)
	dir := t.TempDir()
	var locs []string
	var total int64
	for v := 0; v < n; v++ {
		k := first + v
		snaps := make([]any, k)
		snapLog := make([]any, k)
		for i := range k {
			s := map[string]any{}
			for key, val := range tmpl {
				s[key] = val
			}
			id := int64(1_000_000*v + i + 1)
			s["snapshot-id"] = id
			s["sequence-number"] = i + 1
			s["timestamp-ms"] = 1_700_000_000_000 + int64(i)
			if i > 0 {
				s["parent-snapshot-id"] = id - 1
			} else {
				delete(s, "parent-snapshot-id")
			}
			s["manifest-list"] = fmt.Sprintf("%s/metadata/snap-%d-1-%08x-0000-0000-0000-%012x.avro", tbl.Location(), id, v, i)
			sum := map[string]any{"operation": "append"}
			for key := range tmpl["summary"].(map[string]any) {
				sum[key] = fmt.Sprint(i*7 + v)
			}
			sum["icefloe.statement-id"] = fmt.Sprintf("%08x-%04x-4000-8000-%012x", v, i, id)
			s["summary"] = sum
			snaps[i] = s
			snapLog[i] = map[string]any{"snapshot-id": id, "timestamp-ms": 1_700_000_000_000 + int64(i)}
		}
		doc["snapshots"] = snaps
		doc["snapshot-log"] = snapLog
		doc["current-snapshot-id"] = int64(1_000_000*v + k)
		doc["last-sequence-number"] = k
		doc["refs"] = map[string]any{"main": map[string]any{"snapshot-id": int64(1_000_000*v + k), "type": "branch"}}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("%05d-%08x.metadata.json", v, v))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		locs = append(locs, "file://"+path)
		total += int64(len(b))
	}
	return locs, total
}

// TestMetadataCacheBoundedByHeap: a cache filled with many distinct
// metadata versions (a table under a stream of appends: each version one
// snapshot more) keeps the live heap within its bound, plus a margin for
// the estimate: the bound is on the memory the parsed versions hold, not
// on their JSON, which is some ten times smaller.
func TestMetadataCacheBoundedByHeap(t *testing.T) {
	const bound = 8 << 20
	locs, jsonBytes := metadataVersions(t, 120, 150)
	ctx := context.Background()
	ident := table.Identifier{"default", "typed"}
	before := memsize.LiveHeap()
	c := NewMetadataCache(bound)
	for _, loc := range locs {
		tbl, err := c.Open(ctx, ident, loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Use each version as the planner does.
		if tbl.CurrentSnapshot() == nil || len(tbl.Metadata().Snapshots()) == 0 {
			t.Fatalf("%s: no snapshot", loc)
		}
		tbl.Schema().FindFieldByName("id")
	}
	after := memsize.LiveHeap()
	runtime.KeepAlive(c)
	st := c.Snapshot()
	held := after - before
	t.Logf("%d versions, %.1f MiB of JSON; cache: %d entries, %.1f MiB counted, %d evicted; live heap grew %.1f MiB (bound %.1f MiB)",
		len(locs), mib(jsonBytes), st.Entries, mib(st.Bytes), st.Evictions, mib(held), mib(bound))
	if st.Evictions == 0 || jsonBytes < 2*bound {
		t.Fatalf("the versions (%d MiB of JSON) did not overflow the bound", jsonBytes>>20)
	}
	if st.Bytes > bound {
		t.Fatalf("the cache counts %d bytes, over its bound %d", st.Bytes, bound)
	}
	const margin = bound/5 + 2<<20
	if held > bound+margin {
		t.Fatalf("the live heap grew by %.1f MiB holding a cache bounded at %.1f MiB (counted %.1f MiB)", mib(held), mib(bound), mib(st.Bytes))
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
