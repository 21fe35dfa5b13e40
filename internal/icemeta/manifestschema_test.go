package icemeta

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// manifestDecimals reads the Avro schema in the header of each manifest
// snap added and returns its decimals (the JSON objects whose logicalType
// is decimal) and each manifest's size on disk by path.
func manifestDecimals(t *testing.T, f *fixture, tbl *table.Table, snap *table.Snapshot) ([]map[string]any, map[string]int64) {
	t.Helper()
	fsys, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readManifestList(fsys, snap.ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	var decimals []map[string]any
	sizes := map[string]int64{}
	for _, mf := range files {
		if mf.SnapshotID() != snap.SnapshotID {
			continue
		}
		r, err := fsys.Open(mf.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		sizes[mf.FilePath()] = int64(len(data))
		if mf.Length() != int64(len(data)) {
			t.Errorf("manifest %s: the list says %d bytes, the file has %d", mf.FilePath(), mf.Length(), len(data))
		}
		var h ocfHeaderValue
		if _, err := ocfHeader.Decode(data, &h); err != nil {
			t.Fatal(err)
		}
		var schema any
		if err := json.Unmarshal(h.Meta["avro.schema"], &schema); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if x["logicalType"] == "decimal" {
					decimals = append(decimals, x)
				}
				for _, c := range x {
					walk(c)
				}
			case []any:
				for _, c := range x {
					walk(c)
				}
			}
		}
		walk(schema)
	}
	return decimals, sizes
}

// TestRepairManifestSchemas: the manifest of a table partitioned by a
// DECIMAL(p,0) column gets its decimal's scale (iceberg-go leaves it
// out), its manifest list the manifest's new length, and the table still
// plans and reads the same files; a DECIMAL(p,2) partition and a table
// without decimals are left alone.
func TestRepairManifestSchemas(t *testing.T) {
	f := newFixture(t)
	identity := func(s *iceberg.Schema) iceberg.PartitionSpec {
		fld, _ := s.FindFieldByName("d")
		return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{fld.ID}, FieldID: 1000, Name: "d", Transform: iceberg.IdentityTransform{}})
	}
	for _, c := range []struct {
		name, typ string
		wantScale int
		repaired  bool // iceberg-go's manifest lacks the scale
	}{
		{"scale 0", "DECIMAL(10,0)", 0, true},
		{"scale 0, precision 38", "DECIMAL(38,0)", 0, true},
		{"scale 2", "DECIMAL(12,2)", 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := f.on(t)
			tbl := f.table("id BIGINT; d "+c.typ, identity, nil)
			files := f.write(tbl, true, nil, "SELECT i AS id, CAST(i - 1 AS "+c.typ+") AS d FROM range(3) t(i)")
			tbl = f.commit(tbl, files)
			snap := tbl.CurrentSnapshot()
			before, _ := manifestDecimals(t, f, tbl, snap)
			if len(before) != 1 {
				t.Fatalf("%d decimals in the manifest schema, want the partition field's", len(before))
			}
			if _, has := before[0]["scale"]; has == c.repaired {
				t.Errorf("iceberg-go's manifest decimal %v: re-check RepairManifestSchemas", before[0])
			}
			fsys, _ := tbl.FS(f.ctx)
			rewrote, err := RepairManifestSchemas(f.ctx, fsys, tbl.Metadata(), *snap)
			if err != nil {
				t.Fatal(err)
			}
			if rewrote != c.repaired {
				t.Errorf("rewrote: %v, want %v", rewrote, c.repaired)
			}
			after, _ := manifestDecimals(t, f, tbl, snap)
			if len(after) != 1 || after[0]["scale"] != float64(c.wantScale) || after[0]["precision"] != before[0]["precision"] {
				t.Fatalf("decimal after the repair %v, want scale %d (before %v)", after, c.wantScale, before)
			}
			tasks, err := tbl.Scan().PlanFiles(f.ctx)
			if err != nil || len(tasks) != len(files) {
				t.Fatalf("after the repair the table plans %d files (%v), want %d", len(tasks), err, len(files))
			}
			rows := 0
			for _, task := range tasks {
				rows += int(task.File.Count())
				if _, ok := task.File.Partition()[1000].(iceberg.DecimalLiteral); !ok {
					t.Errorf("partition value %#v", task.File.Partition()[1000])
				}
			}
			if rows != 3 {
				t.Errorf("%d rows, want 3", rows)
			}
		})
	}
	t.Run("no decimal", func(t *testing.T) {
		f := f.on(t)
		tbl := f.table("id BIGINT; d INTEGER", identity, nil)
		tbl = f.commit(tbl, f.write(tbl, true, nil, "SELECT CAST(1 AS BIGINT) AS id, 2 AS d"))
		fsys, _ := tbl.FS(f.ctx)
		if rewrote, err := RepairManifestSchemas(f.ctx, fsys, tbl.Metadata(), *tbl.CurrentSnapshot()); err != nil || rewrote {
			t.Fatalf("rewrote %v, %v", rewrote, err)
		}
	})
}

// TestWithDecimalScales: the schema keeps its keys in their order and
// gets "scale": 0 only in decimals without one.
func TestWithDecimalScales(t *testing.T) {
	in := `{"type":"record","name":"r102","fields":[{"name":"d","type":["null",{"type":"fixed","name":"fixed","size":5,"logicalType":"decimal","precision":10}],"field-id":1000},` +
		`{"name":"e","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},{"name":"s","type":"string","doc":"<&>"}]}`
	want := `{"type":"record","name":"r102","fields":[{"name":"d","type":["null",{"type":"fixed","name":"fixed","size":5,"logicalType":"decimal","precision":10,"scale":0}],"field-id":1000},` +
		`{"name":"e","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},{"name":"s","type":"string","doc":"<&>"}]}`
	got, changed, err := withDecimalScales([]byte(in))
	if err != nil || !changed || string(got) != want {
		t.Fatalf("got %s, %v, %v\nwant %s", got, changed, err, want)
	}
	if got, changed, err := withDecimalScales([]byte(want)); err != nil || changed || string(got) != want {
		t.Fatalf("a schema with every scale: %s, %v, %v", got, changed, err)
	}
}

// TestSetLength pins the reflection RepairManifestSchemas relies on.
func TestSetLength(t *testing.T) {
	mf := iceberg.NewManifestFile(2, "m.avro", 1, 0, 1).Build()
	if err := setLength(mf, 4242); err != nil {
		t.Fatal(err)
	}
	if mf.Length() != 4242 {
		t.Fatalf("length %d after set", mf.Length())
	}
}
