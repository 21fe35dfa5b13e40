package wire

import (
	"fmt"
	"strings"
	"time"
)

// FormatVersion is the ticket format this build writes and accepts.
// Version 2 added the principal a ticket is bound to: a worker of an
// older build must refuse such a ticket rather than serve it unbound.
// Version 3 added exchange partitions (Ticket.Partition): a worker of an
// older build would run a partition's producer as a plain fragment and
// stream the rows of every partition.
const FormatVersion = 3

// Ticket is what one Flight endpoint asks a worker to do: read the listed
// scans, run the fragment SQL over them and stream the result with Schema.
type Ticket struct {
	// Version is the ticket format version; Seal sets it.
	Version int `json:"v"`
	// QueryID names the client statement the ticket belongs to.
	QueryID string `json:"q"`
	// ExpiresAt is when a worker stops accepting the ticket.
	ExpiresAt time.Time `json:"e"`
	// IssuedAt is when the coordinator planned the ticket; a worker
	// refuses tickets issued before it started (it cannot know which
	// tables were dropped meanwhile).
	IssuedAt time.Time `json:"i,omitempty"`
	// Principal is who planned the statement, when authentication is on:
	// a worker serves the ticket only to a caller authenticated as that
	// principal (or to the cluster itself, for child and write fragments).
	Principal string `json:"pr,omitempty"`
	// Deadline, when set, is when the statement's timeout ends the
	// fragment wherever it runs; Timeout is that timeout, for the error.
	Deadline time.Time     `json:"dl,omitzero"`
	Timeout  time.Duration `json:"to,omitempty"`
	// Trace is the W3C traceparent of the statement the ticket was planned
	// for, when tracing is on: a worker a client fetches the fragment from
	// continues the statement's trace. Sealed, so never in clear.
	Trace string `json:"tr,omitempty"`
	// Child says the ticket is a child fragment, pulled by the worker that
	// runs its parent (which holds the fragment slot of the tree).
	Child bool `json:"ch,omitempty"`
	// Scans are the inputs of the fragment, each exposed to SQL as a table
	// named Scan.View.
	Scans []Scan `json:"s,omitempty"`
	// Children are fragments the worker pulls from its peers (in parallel)
	// before running SQL; their rows land in the tables named Child.View.
	Children []Child `json:"c,omitempty"`
	// ChildLimit, when positive, is how many child rows are enough (LIMIT
	// without ORDER BY): the worker stops pulling once they have arrived.
	ChildLimit int64 `json:"cl,omitempty"`
	// Passthrough says the result is exactly the single scan's rows as
	// iceberg-go reads them (a bare projection whose types equal the bound
	// schema): the worker streams them without going through DuckDB.
	Passthrough bool `json:"pt,omitempty"`
	// SQL is the fragment a worker runs over the scans' and children's
	// tables.
	SQL string `json:"sql"`
	// Schema is the Arrow IPC encoding of the result schema every stream of
	// the query carries; the worker sends its batches with exactly this schema.
	Schema []byte `json:"sch,omitempty"`
	// Write, when set, makes this a write fragment (see Write).
	Write *Write `json:"w,omitempty"`
	// Partition, when set, makes this one partition of a hash exchange
	// (see Partition).
	Partition *Partition `json:"x,omitempty"`
}

// Partition is what a ticket streams of a hash exchange's producer: the
// tickets of every partition of one producer instance carry the same
// scans, children and SQL, whose last result column is each row's
// partition (below Count); the worker runs the producer once for all of
// them and streams partition Index of its rows, without that column, with
// the ticket's Schema.
type Partition struct {
	// Producer names the producer instance within the query.
	Producer string `json:"id"`
	Index    int    `json:"j"`
	Count    int    `json:"n"`
}

// Scan is one pinned table input of a fragment: the tasks of its group,
// already planned on the coordinator.
type Scan struct {
	// View is the name of the table the fragment SQL reads.
	View string `json:"view"`
	// Table is the table's display name (catalog.schema.table) for errors.
	Table string `json:"t"`
	// TableUUID is the table's Iceberg UUID: workers refuse scans of a
	// table the coordinator told them was dropped.
	TableUUID string `json:"id,omitempty"`
	// MetadataLocation pins the table version.
	MetadataLocation string `json:"m"`
	// SnapshotID is 0 for a live read of the pinned metadata (current schema
	// and snapshot); otherwise the snapshot a time-travel query reads, whose
	// schema then decodes tasks and filters. Planner and worker must use the
	// same (SnapshotID, Columns) pair they bind with.
	SnapshotID int64 `json:"snap,omitempty"`
	// MetadataTable, when set, names the metadata table of the pinned
	// table this scan reads ("snapshots", "files", …): the worker computes
	// it from MetadataLocation and has no tasks, columns or filter to use.
	MetadataTable string `json:"mt,omitempty"`
	// Columns are the projected top-level column names, in order. Empty
	// means every column of the snapshot's schema.
	Columns []string `json:"cols,omitempty"`
	// RowFilter is the pruning filter as Iceberg expression JSON; empty
	// means none. The worker scan applies it to tasks whose residual is nil.
	RowFilter string `json:"f,omitempty"`
	// Tasks are the group's file tasks, encoded with iceberg-go's codec.
	Tasks []Task `json:"tasks,omitempty"`
	// Bytes is the size of the tasks' data files: the work a query's
	// progress counts as read once the scan was (with len(Tasks) files).
	Bytes int64 `json:"b,omitempty"`
	// Props are the storage properties the worker opens files with. They
	// may hold credentials: they exist only inside the sealed ticket.
	Props map[string]string `json:"p,omitempty"`
}

// Child is one fragment a worker pulls from a peer: a sealed ticket of its
// own and the locations that serve it, owner first. Several children may
// feed one view; all of them have the same result schema.
type Child struct {
	View      string   `json:"view"`
	Ticket    []byte   `json:"t"`
	Locations []string `json:"l"`
	// Rows is the planner's estimate of the child's rows (0: unknown).
	Rows int64 `json:"r,omitempty"`
	// Once says the fragment reads the view once: the worker may stream
	// its children into the fragment's query rather than load them into
	// a table first.
	Once bool `json:"o,omitempty"`
}

// Task is one encoded iceberg-go FileScanTask with the partition spec id
// needed to decode it.
type Task struct {
	SpecID int    `json:"spec"`
	Data   []byte `json:"d"`
}

// String describes the ticket without its properties or task bytes.
func (t *Ticket) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ticket v%d query=%s expires=%s", t.Version, t.QueryID, t.ExpiresAt.UTC().Format(time.RFC3339))
	if t.Principal != "" {
		fmt.Fprintf(&b, " principal=%s", t.Principal)
	}
	for _, s := range t.Scans {
		fmt.Fprintf(&b, " scan(%s as %s, %d tasks)", s.Table, s.View, len(s.Tasks))
	}
	if len(t.Children) > 0 {
		fmt.Fprintf(&b, " children=%d", len(t.Children))
	}
	if p := t.Partition; p != nil {
		fmt.Fprintf(&b, " partition %d of %d of %s", p.Index, p.Count, p.Producer)
	}
	return b.String()
}

// String describes the scan without its properties or task bytes.
func (s Scan) String() string {
	return fmt.Sprintf("scan(%s as %s, %d tasks, props redacted)", s.Table, s.View, len(s.Tasks))
}
