package icemeta

import (
	"math"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// summaryOf reads the partition summary of field 0 of the manifests snap
// added (there must be one).
func summaryOf(t *testing.T, f *fixture, tbl *table.Table, snap *table.Snapshot) iceberg.FieldSummary {
	t.Helper()
	fsys, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readManifestList(fsys, snap.ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.FieldSummary
	for _, mf := range files {
		if mf.SnapshotID() == snap.SnapshotID && mf.ManifestContent() == iceberg.ManifestContentData && mf.AddedDataFiles()+mf.ExistingDataFiles() > 0 {
			out = append(out, mf.Partitions()[0])
		}
	}
	if len(out) != 1 {
		t.Fatalf("snapshot %d added %d data manifests with files, want 1", snap.SnapshotID, len(out))
	}
	return out[0]
}

// describe prints a summary with its bounds decoded as typ.
func describe(t *testing.T, typ iceberg.Type, s iceberg.FieldSummary) string {
	t.Helper()
	b := func(p *[]byte) string {
		if p == nil || *p == nil {
			return "none"
		}
		lit, err := iceberg.LiteralFromBytes(typ, *p)
		if err != nil {
			t.Fatalf("bound %x: %v", *p, err)
		}
		switch v := lit.(type) {
		case iceberg.BinaryLiteral:
			return "x'" + boundText(v) + "'"
		case iceberg.StringLiteral:
			return "'" + string(v) + "'"
		case iceberg.Float64Literal:
			if v == 0 && math.Signbit(float64(v)) {
				return "-0"
			}
		}
		return lit.String()
	}
	nan := s.ContainsNaN != nil && *s.ContainsNaN
	return "null=" + map[bool]string{false: "f", true: "t"}[s.ContainsNull] + " nan=" + map[bool]string{false: "f", true: "t"}[nan] +
		" lower=" + b(s.LowerBound) + " upper=" + b(s.UpperBound)
}

// TestRepairSummaries: the summaries iceberg-go writes for empty strings
// and binaries and for the float zeros are rewritten right; the others
// are left alone.
func TestRepairSummaries(t *testing.T) {
	f := newFixture(t)
	identity := identitySpec
	truncate2 := func(s *iceberg.Schema) iceberg.PartitionSpec {
		fld, _ := s.FindFieldByName("v")
		return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{fld.ID}, FieldID: 1000, Name: "v_trunc", Transform: iceberg.TruncateTransform{Width: 2}})
	}
	cases := []struct {
		name, typ, values string
		spec              func(*iceberg.Schema) iceberg.PartitionSpec
		want, icebergGo   string // icebergGo: what iceberg-go writes, when it is wrong
	}{
		{"empty and ab", "VARCHAR", `['ab', '']`, identity("v"), "null=f nan=f lower='' upper='ab'", "null=f nan=f lower=none upper='ab'"},
		{"only empty", "VARCHAR", `['']`, identity("v"), "null=f nan=f lower='' upper=''", "null=f nan=f lower=none upper=none"},
		{"empty and null", "VARCHAR", `['', NULL]`, identity("v"), "null=t nan=f lower='' upper=''", "null=t nan=f lower=none upper=none"},
		{"truncate", "VARCHAR", `['abc', '']`, truncate2, "null=f nan=f lower='' upper='ab'", "null=f nan=f lower=none upper='ab'"},
		{"empty blob", "BLOB", `[''::BLOB, '\x01'::BLOB]`, identity("v"), "null=f nan=f lower=x'' upper=x'01'", ""},
		{"zeros", "DOUBLE", `['-0.0', '0.0', '1.5']`, identity("v"), "null=f nan=f lower=-0 upper=1.5", ""},
		{"positive zero", "DOUBLE", `['0.0']`, identity("v"), "null=f nan=f lower=-0 upper=0", "null=f nan=f lower=0 upper=0"},
		{"nan", "DOUBLE", `['NaN', '2']`, identity("v"), "null=f nan=t lower=2 upper=2", ""},
		{"only nan", "DOUBLE", `['NaN']`, identity("v"), "null=f nan=t lower=none upper=none", ""},
		{"ints untouched", "INTEGER", `[1, NULL, -5]`, identity("v"), "null=t nan=f lower=-5 upper=1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := f.on(t)
			tbl := f.table("v "+c.typ, c.spec, nil)
			files := f.write(tbl, true, nil, "SELECT unnest("+c.values+")::"+c.typ+" AS v")
			tbl = f.commit(tbl, files)
			snap := tbl.CurrentSnapshot()
			spec := tbl.Spec()
			typ := spec.PartitionType(tbl.Schema()).FieldList[0].Type
			before := describe(t, typ, summaryOf(t, f, tbl, snap))
			if c.icebergGo != "" && before != c.icebergGo {
				t.Errorf("iceberg-go now writes %s (was %s): re-check RepairManifestList", before, c.icebergGo)
			}
			fsys, _ := tbl.FS(f.ctx)
			rewrote, err := RepairManifestList(f.ctx, fsys, tbl.Metadata(), *snap)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(t, typ, summaryOf(t, f, tbl, snap)); got != c.want {
				t.Errorf("summary %s, want %s", got, c.want)
			}
			if rewrote != (before != c.want) {
				t.Errorf("rewrote the list: %v, but iceberg-go's summary was %s", rewrote, before)
			}
			// The list still reads as a whole: same files, same rows.
			scan, err := tbl.Scan().PlanFiles(f.ctx)
			if err != nil || len(scan) != len(files) {
				t.Fatalf("after the repair the table plans %d files (%v), want %d", len(scan), err, len(files))
			}
		})
	}
}

// TestRepairRewrittenManifest: a copy-on-write commit rewrites a manifest
// with the entries it keeps (decoded from the old manifest, whose empty
// strings iceberg-go serialises as null bounds again); the repair covers
// it, and keeps the list's sequence numbers and first row ids (v3).
func TestRepairRewrittenManifest(t *testing.T) {
	f := newFixture(t)
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) {
			f := f.on(t)
			spec := func(s *iceberg.Schema) iceberg.PartitionSpec {
				fld, _ := s.FindFieldByName("v")
				return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{fld.ID}, FieldID: 1000, Name: "v", Transform: iceberg.IdentityTransform{}})
			}
			tbl := f.table("v VARCHAR", spec, iceberg.Properties{"format-version": version})
			files := f.write(tbl, true, nil, `SELECT unnest(['', 'ab']) AS v`)
			if len(files) != 2 {
				t.Fatalf("%d files, want one per partition", len(files))
			}
			files = withRowIDs(t, tbl, files)
			tbl = f.commit(tbl, files)
			fsys, _ := tbl.FS(f.ctx)
			if _, err := RepairManifestList(f.ctx, fsys, tbl.Metadata(), *tbl.CurrentSnapshot()); err != nil {
				t.Fatal(err)
			}
			var ab iceberg.DataFile
			for _, df := range files {
				if df.Partition()[1000] == "ab" {
					ab = df
				}
			}
			repl := withRowIDs(t, tbl, f.write(tbl, true, nil, `SELECT 'zz' AS v`))
			tx := tbl.NewTransaction()
			if err := tx.ReplaceDataFilesWithDataFiles(f.ctx, []iceberg.DataFile{ab}, repl, nil); err != nil {
				t.Fatal(err)
			}
			next, err := tx.Commit(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap := next.CurrentSnapshot()
			var kept []iceberg.ManifestFile
			list, _ := readManifestList(fsys, snap.ManifestList)
			for _, mf := range list {
				if mf.SnapshotID() == snap.SnapshotID && mf.ExistingDataFiles() > 0 {
					kept = append(kept, mf)
				}
			}
			if len(kept) != 1 || kept[0].Partitions()[0].LowerBound != nil && *kept[0].Partitions()[0].LowerBound != nil {
				t.Fatalf("iceberg-go's rewritten manifest has a lower bound now (%d manifests): re-check the repair", len(kept))
			}
			if _, err := RepairManifestList(f.ctx, fsys, next.Metadata(), *snap); err != nil {
				t.Fatal(err)
			}
			after, _ := readManifestList(fsys, snap.ManifestList)
			for i, mf := range after {
				if mf.SnapshotID() == snap.SnapshotID && mf.ExistingDataFiles() > 0 {
					if got := describe(t, iceberg.PrimitiveTypes.String, mf.Partitions()[0]); got != "null=f nan=f lower='' upper=''" {
						t.Errorf("kept manifest's summary %s, want the empty string's", got)
					}
				}
				if mf.SequenceNum() != list[i].SequenceNum() || mf.MinSequenceNum() != list[i].MinSequenceNum() || !sameID(mf.FirstRowID(), list[i].FirstRowID()) || mf.FilePath() != list[i].FilePath() {
					t.Errorf("manifest %d changed: seq %d/%d, min %d/%d, first row id %v/%v", i, mf.SequenceNum(), list[i].SequenceNum(), mf.MinSequenceNum(), list[i].MinSequenceNum(), mf.FirstRowID(), list[i].FirstRowID())
				}
			}
			rows := 0
			tasks, err := next.Scan().PlanFiles(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				rows += int(task.File.Count())
			}
			if rows != 2 {
				t.Errorf("the table has %d rows after the replace, want 2", rows)
			}
		})
	}
}

func sameID(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// withRowIDs gives v3 files first row ids from tbl's next row id.
func withRowIDs(t *testing.T, tbl *table.Table, files []iceberg.DataFile) []iceberg.DataFile {
	t.Helper()
	meta := tbl.Metadata()
	if meta.Version() < 3 {
		return files
	}
	next := meta.NextRowID()
	out := make([]iceberg.DataFile, len(files))
	for i, df := range files {
		nf, err := Rebuild(meta, df, func(b *iceberg.DataFileBuilder) { b.FirstRowID(next) })
		if err != nil {
			t.Fatal(err)
		}
		out[i] = nf
		next += df.Count()
	}
	return out
}

// TestSetPartitions pins the reflection RepairManifestList relies on.
func TestSetPartitions(t *testing.T) {
	mf := iceberg.NewManifestFile(2, "m.avro", 1, 0, 1).Build()
	empty := []byte{}
	if err := setPartitions(mf, []iceberg.FieldSummary{{LowerBound: &empty}}); err != nil {
		t.Fatal(err)
	}
	if p := mf.Partitions(); len(p) != 1 || p[0].LowerBound == nil || *p[0].LowerBound == nil {
		t.Fatalf("partitions after set: %+v", p)
	}
}
