package wire

import "fmt"

// Write turns a ticket into a write fragment: instead of streaming the
// fragment's rows to a client, the worker writes them as Parquet data files
// of the target table and streams one WriteResult per file it wrote (see
// WriteResultColumn). Nothing is committed by the worker.
type Write struct {
	// Table is the target's identifier (schema, table) for opening its
	// metadata; Display names it in errors.
	Table   []string `json:"t"`
	Display string   `json:"dn,omitempty"`
	// MetadataLocation pins the target version the planner bound against:
	// its current schema and partition spec decide the files' layout.
	MetadataLocation string `json:"m"`
	// Props are the storage properties the worker writes files with; they
	// may hold credentials and exist only inside the sealed ticket.
	Props map[string]string `json:"p,omitempty"`
	// WriteUUID names the files of this fragment; the coordinator deletes
	// files carrying it if the statement fails.
	WriteUUID string `json:"u"`
	// TargetFileSize overrides the table's write.target-file-size-bytes
	// when > 0.
	TargetFileSize int64 `json:"ts,omitempty"`
	// Project, when set, is the select list the worker puts over the
	// fragment's rows: it runs SELECT Project FROM (SQL) AS
	// __q(__c0, …, __c{InputColumns-1}), so the columns come out as the
	// target's, in order, cast to the DuckDB types of the target's types.
	Project      string `json:"pr,omitempty"`
	InputColumns int    `json:"ic,omitempty"`
	// OrderBy, when set with Project, orders the projected rows (by the
	// partition source columns) so each batch touches few partitions.
	OrderBy string `json:"ob,omitempty"`
	// Rewrite makes the fragment rewrite files: the ticket's first scan
	// holds whole data files; for each file whose rows MatchSQL counts as
	// affected, the worker writes the fragment SQL's rows over that file
	// alone and reports the file as replaced. Files with no affected row
	// are left alone. Any further scans are other tables the statements
	// read, loaded in full once (a MERGE's source). Used by DELETE, UPDATE
	// and MERGE (copy-on-write).
	Rewrite bool `json:"rw,omitempty"`
	// MatchSQL returns one BIGINT: how many rows of the scan's view the
	// statement affects.
	MatchSQL string `json:"ms,omitempty"`
	// Lineage (format-version 3 rewrites): the fragment SQL's rows end in
	// the row-lineage columns _row_id and _last_updated_sequence_number,
	// which the worker writes into the files as they come, so rewritten
	// rows keep their row ids.
	Lineage bool `json:"ln,omitempty"`
}

// String describes the write without its properties.
func (w *Write) String() string {
	return fmt.Sprintf("write(%s uuid=%s rewrite=%t, props redacted)", w.Display, w.WriteUUID, w.Rewrite)
}

// WriteResultColumn is the name of the one binary column of a write
// fragment's result stream; each value is a JSON WriteResult.
const WriteResultColumn = "write_result"

// WriteResult is one row of a write fragment's result.
type WriteResult struct {
	// SpecID and DataFile are a written data file, encoded with
	// iceberg-go's codec against the target's current schema; empty when
	// the row only reports a replaced file.
	SpecID   int    `json:"spec"`
	DataFile []byte `json:"df,omitempty"`
	// Rows is the number of rows the data file holds, Bytes its size.
	Rows  int64 `json:"n"`
	Bytes int64 `json:"b,omitempty"`
	// Replaced is the path of an input data file this fragment rewrote
	// (Rewrite only); Affected is how many of its rows the statement
	// deleted or updated.
	Replaced string `json:"r,omitempty"`
	Affected int64  `json:"a,omitempty"`
}
