package commit

import "github.com/apache/iceberg-go/table"

// The refs a metadata commit reads and asserts.

// RefHead is the snapshot id ref points at and the requirement that it
// still does (or that ref still does not exist).
func RefHead(tbl *table.Table, name string) (*int64, table.Requirement) {
	for n, r := range tbl.Metadata().Refs() {
		if n == name {
			id := r.SnapshotID
			return &id, table.AssertRefSnapshotID(name, &id)
		}
	}
	return nil, table.AssertRefSnapshotID(name, nil)
}

// FindRef returns the ref called name.
func FindRef(tbl *table.Table, name string) (table.SnapshotRef, bool) {
	for n, r := range tbl.Metadata().Refs() {
		if n == name {
			return r, true
		}
	}
	return table.SnapshotRef{}, false
}
