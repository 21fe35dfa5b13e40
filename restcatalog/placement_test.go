package restcatalog

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// TestPlacementAsSQL: a REST create or update places files as SQL does.
// Without LOCATION no location or file-placing property outside the
// table's own folder can be chosen (plain and staged creates, property
// updates, schema locations); with it, a place that is, holds or lies in
// another table's is still refused, and a free one works; a table made
// without a location gets a folder of its own, staged creates too; a
// table's location cannot change.
func TestPlacementAsSQL(t *testing.T) {
	f := newFixture(t)
	victim := f.create("victim")
	wh := strings.TrimSuffix(f.mt.Props["warehouse"], "/")
	create := func(user string, body map[string]any) (int, map[string]any) {
		body["schema"] = schemaJSON(t)
		return f.call(user, http.MethodPost, "/v1/local/namespaces/s/tables", body)
	}
	// Without LOCATION.
	for _, body := range []map[string]any{
		{"name": "evil", "location": victim},
		{"name": "evil", "location": wh + "/elsewhere/evil"},
		{"name": "evil", "properties": map[string]string{"write.data.path": victim + "/data"}},
		{"name": "evil", "location": victim, "stage-create": true},
	} {
		code, ans := create("creator", body)
		f.want("a create choosing a place without LOCATION", code, ans, http.StatusForbidden, "LOCATION", "local.s.evil")
	}
	code, ans := f.call("creator", http.MethodPost, "/v1/local/namespaces", map[string]any{"namespace": []string{"s2"}, "properties": map[string]string{"location": wh + "/s2-here"}})
	f.want("a namespace location without LOCATION", code, ans, http.StatusForbidden)
	// With it, only a free place.
	for _, c := range []struct {
		body map[string]any
		why  string
	}{
		{map[string]any{"name": "evil", "location": victim}, "is the location of another table"},
		{map[string]any{"name": "evil", "location": victim + "/data"}, "lies in the location of another table"},
		{map[string]any{"name": "evil", "location": wh}, "the warehouse"},
		{map[string]any{"name": "evil", "properties": map[string]string{"write.metadata.path": victim + "/metadata"}}, "another table"},
		{map[string]any{"name": "evil", "location": victim, "stage-create": true}, "another table"},
		{map[string]any{"name": "evil", "location": "/etc/evil"}, "outside the catalog's warehouse"},
	} {
		code, ans := create("placer", c.body)
		f.want("a create at a taken place", code, ans, http.StatusForbidden, c.why)
	}
	code, ans = create("placer", map[string]any{"name": "placed", "location": wh + "/elsewhere/placed"})
	f.want("a create at a free place with LOCATION", code, ans, http.StatusOK)
	if got := f.load("placed").Location(); got != wh+"/elsewhere/placed" {
		t.Fatalf("placed at %s, want %s", got, wh+"/elsewhere/placed")
	}

	// Without a location, a folder of its own: <schema folder>/<name>-<32 hex>.
	own := regexp.MustCompile(`/s\.db/mine-[0-9a-f]{32}$`)
	code, ans = create("creator", map[string]any{"name": "mine"})
	f.want("a create without a location", code, ans, http.StatusOK)
	if loc := f.load("mine").Location(); !own.MatchString(loc) {
		t.Fatalf("s.mine made at %s, want a folder of its own", loc)
	}
	// A staged create proposes one; its commit needs no LOCATION, and
	// the same commit at another place does.
	code, ans = create("creator", map[string]any{"name": "staged", "stage-create": true})
	f.want("a staged create", code, ans, http.StatusOK)
	proposed := ans["metadata"].(map[string]any)["location"].(string)
	if !regexp.MustCompile(`/s\.db/staged-[0-9a-f]{32}$`).MatchString(proposed) {
		t.Fatalf("staged create proposed %s, want a folder of its own", proposed)
	}
	commitCreate := func(user, name, loc string) (int, map[string]any) {
		return f.call(user, http.MethodPost, "/v1/local/namespaces/s/tables/"+name, map[string]any{
			"requirements": []any{map[string]any{"type": "assert-create"}},
			"updates": []any{
				map[string]any{"action": "assign-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
				map[string]any{"action": "upgrade-format-version", "format-version": 2},
				map[string]any{"action": "add-schema", "schema": schemaJSON(t)},
				map[string]any{"action": "set-current-schema", "schema-id": -1},
				map[string]any{"action": "add-spec", "spec": map[string]any{"spec-id": 0, "fields": []any{}}},
				map[string]any{"action": "set-default-spec", "spec-id": -1},
				map[string]any{"action": "add-sort-order", "sort-order": map[string]any{"order-id": 0, "fields": []any{}}},
				map[string]any{"action": "set-default-sort-order", "sort-order-id": -1},
				map[string]any{"action": "set-location", "location": loc},
			},
		})
	}
	code, ans = commitCreate("creator", "staged", victim)
	f.want("a staged create committed at another table's place", code, ans, http.StatusForbidden, "LOCATION")
	code, ans = commitCreate("creator", "staged", proposed)
	f.want("a staged create committed where it proposed", code, ans, http.StatusOK)
	if got := f.load("staged").Location(); got != proposed {
		t.Fatalf("s.staged at %s, want %s", got, proposed)
	}

	// Updates: a property placing files outside the table's folder needs
	// LOCATION and a free place; the location cannot change.
	props := func(user string, p map[string]string) (int, map[string]any) {
		return f.call(user, http.MethodPost, "/v1/local/namespaces/s/tables/mine", map[string]any{
			"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": p}},
		})
	}
	mine := f.load("mine").Location()
	code, ans = props("creator", map[string]string{"write.data.path": wh + "/elsewhere/mine-data"})
	f.want("write.data.path outside the table without LOCATION", code, ans, http.StatusForbidden, "LOCATION")
	code, ans = props("placer", map[string]string{"write.data.path": victim + "/data"})
	f.want("write.data.path in another table", code, ans, http.StatusForbidden, "another table")
	code, ans = props("creator", map[string]string{"write.data.path": mine + "/data2"})
	f.want("write.data.path in the table's own folder", code, ans, http.StatusOK)
	code, ans = f.call("root", http.MethodPost, "/v1/local/namespaces/s/tables/mine", map[string]any{
		"requirements": []any{}, "updates": []any{map[string]any{"action": "set-location", "location": wh + "/elsewhere/moved"}},
	})
	f.want("set-location", code, ans, http.StatusNotAcceptable, "location cannot change")
	if got := f.load("mine").Location(); got != mine {
		t.Fatalf("s.mine moved to %s", got)
	}
}

// TestDropPurgeKeepsReferencedFiles: a REST drop with purgeRequested
// deletes the table's files, but none that another table references
// (here one an earlier version let share its folder), through the same
// path as SQL's DROP TABLE … PURGE.
func TestDropPurgeKeepsReferencedFiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	victim := f.create("victim")
	vt := f.load("victim")
	// A table sharing the victim's folder and metadata file.
	if _, err := f.mt.Internal().CreateTable(ctx, table.Identifier{"s", "shared"}, testSchema, icecat.WithLocation(victim)); err != nil {
		t.Fatal(err)
	}
	code, ans := f.call("creator", http.MethodDelete, "/v1/local/namespaces/s/tables/shared?purgeRequested=true", nil)
	f.want("purge of a table sharing another's folder", code, ans, http.StatusNoContent)
	if _, err := os.Stat(strings.TrimPrefix(vt.MetadataLocation(), "file://")); err != nil {
		t.Fatalf("the purge deleted the victim's metadata file: %v", err)
	}
	f.load("victim")
	// A table of its own loses its files.
	own := f.create("own")
	code, ans = f.call("creator", http.MethodDelete, "/v1/local/namespaces/s/tables/own?purgeRequested=true", nil)
	f.want("purge of a table of its own", code, ans, http.StatusNoContent)
	left := 0
	if lp, ok := catalog.LocalPath(own); ok {
		_ = filepath.WalkDir(lp, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				left++
			}
			return nil
		})
	}
	if left != 0 {
		t.Fatalf("the purge left %d files of s.own", left)
	}
}
