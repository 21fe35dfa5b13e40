package icemeta

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// RepairManifestList makes the partition summaries of the manifests snap
// writes (those whose added_snapshot_id is snap's) right, before snap is
// committed. iceberg-go (manifest.go, partitionFieldStats.toSummary)
// serialises the bound of an empty string partition value through
// StringLiteral.MarshalBinary, which returns a nil slice for "", and Avro
// (twmb/avro) writes a nil slice under the optional bound as null: a
// manifest whose smallest value is "" gets no lower bound, which readers
// (iceberg-go's, pyiceberg's and Java's manifest evaluators) read as "only
// nulls" and skip. Empty binary values and the two float zeros (a lower
// bound of +0.0 misses -0.0 under Iceberg's ordering) are handled too.
//
// When a summary differs from the one computed here from the manifest's
// entries, the list is written again, in place, with the same snapshot
// id, parent, sequence number and first row id: it is not yet referenced
// by any table metadata. It reports whether it rewrote the list. Only
// manifests of specs with string, binary, float or double partition
// fields are read.
func RepairManifestList(ctx context.Context, fsys iceio.IO, meta table.Metadata, snap table.Snapshot) (bool, error) {
	if snap.ManifestList == "" {
		return false, nil
	}
	files, err := readManifestList(fsys, snap.ManifestList)
	if err != nil {
		return false, err
	}
	changed := false
	for _, mf := range files {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if mf.SnapshotID() != snap.SnapshotID {
			continue
		}
		fixed, ok, err := manifestSummaries(fsys, meta, mf)
		if err != nil {
			return false, err
		}
		if !ok || summariesEqual(fixed, mf.Partitions()) {
			continue
		}
		if err := setPartitions(mf, fixed); err != nil {
			return false, err
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	return true, writeManifestList(fsys, meta.Version(), snap, files)
}

func readManifestList(fsys iceio.IO, path string) ([]iceberg.ManifestFile, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest list %s: %w", path, err)
	}
	defer f.Close()
	files, err := iceberg.ReadManifestList(f)
	if err != nil {
		return nil, fmt.Errorf("manifest list %s: %w", path, err)
	}
	return files, nil
}

func writeManifestList(fsys iceio.IO, version int, snap table.Snapshot, files []iceberg.ManifestFile) error {
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("manifest list %s: the table's file IO cannot write", snap.ManifestList)
	}
	var buf bytes.Buffer
	seq := snap.SequenceNumber
	var firstRowID int64
	if snap.FirstRowID != nil {
		firstRowID = *snap.FirstRowID
	}
	if err := iceberg.WriteManifestList(version, &buf, snap.SnapshotID, snap.ParentSnapshotID, &seq, firstRowID, files); err != nil {
		return fmt.Errorf("manifest list %s: %w", snap.ManifestList, err)
	}
	if err := wfs.WriteFile(snap.ManifestList, buf.Bytes()); err != nil {
		return fmt.Errorf("manifest list %s: %w", snap.ManifestList, err)
	}
	return nil
}

// setPartitions replaces the partition summaries of mf, a manifest file
// read from a manifest list. ManifestFile offers no setter and its
// Partitions returns a copy; the list writer accepts only iceberg-go's own
// manifest file type, so its exported PartitionList field is set by
// reflection (TestSetPartitions pins that this still works).
func setPartitions(mf iceberg.ManifestFile, p []iceberg.FieldSummary) error {
	v := reflect.ValueOf(mf)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("manifest %s: unexpected manifest file type %T", mf.FilePath(), mf)
	}
	field := v.Elem().FieldByName("PartitionList")
	want := reflect.TypeFor[*[]iceberg.FieldSummary]()
	if !field.IsValid() || !field.CanSet() || field.Type() != want {
		return fmt.Errorf("manifest %s: cannot set the partition summaries of %T", mf.FilePath(), mf)
	}
	field.Set(reflect.ValueOf(&p))
	return nil
}

// manifestSummaries computes the partition summaries of mf from its
// entries; ok is false when mf needs no check (no partition field whose
// summary iceberg-go can get wrong) or its spec is unknown.
func manifestSummaries(fsys iceio.IO, meta table.Metadata, mf iceberg.ManifestFile) ([]iceberg.FieldSummary, bool, error) {
	spec := meta.PartitionSpecByID(int(mf.PartitionSpecID()))
	if spec == nil || spec.NumFields() == 0 {
		return nil, false, nil
	}
	fields := spec.PartitionType(meta.CurrentSchema()).FieldList
	if len(fields) != spec.NumFields() || !anyFragile(fields) {
		return nil, false, nil
	}
	entries, err := mf.FetchEntries(fsys, false)
	if err != nil {
		return nil, false, fmt.Errorf("manifest %s: %w", mf.FilePath(), err)
	}
	accs := make([]*summaryAcc, len(fields))
	for i, f := range fields {
		accs[i] = &summaryAcc{typ: f.Type}
	}
	for _, e := range entries {
		part := e.DataFile().Partition()
		for i, f := range fields {
			if err := accs[i].add(part[f.ID]); err != nil {
				return nil, false, fmt.Errorf("manifest %s: partition field %s: %w", mf.FilePath(), f.Name, err)
			}
		}
	}
	out := make([]iceberg.FieldSummary, len(accs))
	for i, a := range accs {
		out[i] = a.summary()
	}
	return out, true, nil
}

// anyFragile tells whether a partition type has a field whose summary
// iceberg-go may get wrong.
func anyFragile(fields []iceberg.NestedField) bool {
	for _, f := range fields {
		switch f.Type.(type) {
		case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.Float32Type, iceberg.Float64Type:
			return true
		}
	}
	return false
}

func summariesEqual(a, b []iceberg.FieldSummary) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ContainsNull != y.ContainsNull || (x.ContainsNaN != nil && *x.ContainsNaN) != (y.ContainsNaN != nil && *y.ContainsNaN) ||
			!boundEqual(x.LowerBound, y.LowerBound) || !boundEqual(x.UpperBound, y.UpperBound) {
			return false
		}
	}
	return true
}

// boundEqual compares two optional bounds; a pointer to a nil slice is
// what the Avro encoder writes as no bound.
func boundEqual(a, b *[]byte) bool {
	an, bn := a == nil || *a == nil, b == nil || *b == nil
	if an || bn {
		return an == bn
	}
	return bytes.Equal(*a, *b)
}

// summaryAcc accumulates the summary of one partition field.
type summaryAcc struct {
	typ          iceberg.Type
	nulls, nans  bool
	lower, upper iceberg.Literal
	cmp          func(a, b iceberg.Literal) int
}

// add counts one partition value (nil for null).
func (s *summaryAcc) add(v any) error {
	if v == nil {
		s.nulls = true
		return nil
	}
	lit, err := partitionLiteral(s.typ, v)
	if err != nil {
		return err
	}
	switch l := lit.(type) {
	case iceberg.Float32Literal:
		if math.IsNaN(float64(l)) {
			s.nans = true
			return nil
		}
	case iceberg.Float64Literal:
		if math.IsNaN(float64(l)) {
			s.nans = true
			return nil
		}
	}
	if s.lower == nil {
		s.lower, s.upper, s.cmp = lit, lit, comparator(lit)
		return nil
	}
	if s.cmp(lit, s.lower) < 0 {
		s.lower = lit
	}
	if s.cmp(lit, s.upper) > 0 {
		s.upper = lit
	}
	return nil
}

// summary is the field's summary: bounds over the non-null, non-NaN
// values, a zero lower bound as -0.0 and a zero upper bound as +0.0 (so
// they hold whichever order a reader gives the two zeros), and empty
// strings and binaries as empty bounds rather than none.
func (s *summaryAcc) summary() iceberg.FieldSummary {
	nan := s.nans
	out := iceberg.FieldSummary{ContainsNull: s.nulls, ContainsNaN: &nan}
	if s.lower == nil {
		return out
	}
	lo, hi := zeroSigned(s.lower, true), zeroSigned(s.upper, false)
	out.LowerBound, out.UpperBound = boundBytes(lo), boundBytes(hi)
	return out
}

func zeroSigned(l iceberg.Literal, negative bool) iceberg.Literal {
	sign := 1.0
	if negative {
		sign = -1
	}
	switch v := l.(type) {
	case iceberg.Float32Literal:
		if v == 0 {
			return iceberg.Float32Literal(float32(math.Copysign(0, sign)))
		}
	case iceberg.Float64Literal:
		if v == 0 {
			return iceberg.Float64Literal(math.Copysign(0, sign))
		}
	}
	return l
}

// boundBytes is l's single-value serialisation, never a nil slice.
func boundBytes(l iceberg.Literal) *[]byte {
	b, err := l.MarshalBinary()
	if err != nil || b == nil {
		b = []byte{}
	}
	out := bytes.Clone(b)
	if out == nil {
		out = []byte{}
	}
	return &out
}

// comparator orders literals of l's type as Iceberg does.
func comparator(l iceberg.Literal) func(a, b iceberg.Literal) int {
	switch l.(type) {
	case iceberg.TypedLiteral[bool]:
		return typedCmp[bool]()
	case iceberg.TypedLiteral[int32]:
		return typedCmp[int32]()
	case iceberg.TypedLiteral[int64]:
		return typedCmp[int64]()
	case iceberg.TypedLiteral[float32]:
		return typedCmp[float32]()
	case iceberg.TypedLiteral[float64]:
		return typedCmp[float64]()
	case iceberg.TypedLiteral[iceberg.Date]:
		return typedCmp[iceberg.Date]()
	case iceberg.TypedLiteral[iceberg.Time]:
		return typedCmp[iceberg.Time]()
	case iceberg.TypedLiteral[iceberg.Timestamp]:
		return typedCmp[iceberg.Timestamp]()
	case iceberg.TypedLiteral[iceberg.TimestampNano]:
		return typedCmp[iceberg.TimestampNano]()
	case iceberg.TypedLiteral[string]:
		return typedCmp[string]()
	case iceberg.TypedLiteral[[]byte]:
		return typedCmp[[]byte]()
	case iceberg.TypedLiteral[uuid.UUID]:
		return typedCmp[uuid.UUID]()
	case iceberg.TypedLiteral[iceberg.Decimal]:
		return typedCmp[iceberg.Decimal]()
	}
	return func(a, b iceberg.Literal) int { return 0 }
}

func typedCmp[T iceberg.LiteralType]() func(a, b iceberg.Literal) int {
	var zero T
	cmp := iceberg.NewLiteral(zero).(iceberg.TypedLiteral[T]).Comparator()
	return func(a, b iceberg.Literal) int {
		return cmp(a.(iceberg.TypedLiteral[T]).Value(), b.(iceberg.TypedLiteral[T]).Value())
	}
}
