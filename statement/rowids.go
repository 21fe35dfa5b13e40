package statement

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/icemeta"
)

// Row lineage of worker-written files (format version 3).
//
// A v3 table numbers its rows: each data file's rows take the ids
// first_row_id, first_row_id+1, … and the table's next-row-id says where
// the next snapshot's ids start. Java and pyiceberg leave first_row_id
// null on added files and let the manifest list assign it; iceberg-go
// v0.7.0's AddDataFiles and ReplaceDataFilesWithDataFiles instead refuse a
// pre-written file without one. Workers cannot know it (it depends on
// every commit before ours), so the coordinator sets it when it commits:
// consecutive ranges from the next-row-id of the table the transaction
// starts from, which are exactly the ids the snapshot claims. The ranges
// are recomputed from the fresh table on every attempt, and iceberg-go's
// own refresh-and-replay (which would keep stale ids) is switched off for
// such commits (see appendFiles and rowDelta).

// withFirstRowIDs returns files with first_row_id assigned in order from
// meta's next-row-id, for a v3 table; for older versions files as they are.
func withFirstRowIDs(meta table.Metadata, files []iceberg.DataFile) ([]iceberg.DataFile, error) {
	if meta.Version() < 3 {
		return files, nil
	}
	out := make([]iceberg.DataFile, len(files))
	next := meta.NextRowID()
	for i, df := range files {
		nf, err := withFirstRowID(meta, df, next)
		if err != nil {
			return nil, err
		}
		out[i] = nf
		next += df.Count()
	}
	return out, nil
}

// withFirstRowID rebuilds df with first_row_id id.
func withFirstRowID(meta table.Metadata, df iceberg.DataFile, id int64) (iceberg.DataFile, error) {
	if df.ContentType() != iceberg.EntryContentData {
		return nil, fmt.Errorf("first_row_id of %s: not a data file", df.FilePath())
	}
	nf, err := icemeta.Rebuild(meta, df, func(b *iceberg.DataFileBuilder) { b.FirstRowID(id) })
	if err != nil {
		return nil, fmt.Errorf("first_row_id: %w", err)
	}
	return nf, nil
}
