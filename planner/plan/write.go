package plan

import "fmt"

// Sink is what a write's one commit does with the files its fragments
// return (the finish step of the write protocol).
type Sink int

const (
	// SinkAppend adds the written files in one snapshot: INSERT … SELECT,
	// CREATE TABLE … AS, the insert half of a MERGE.
	SinkAppend Sink = iota
	// SinkRowDelta replaces the data files the fragments rewrote with the
	// files they wrote (copy-on-write UPDATE, DELETE, MERGE).
	SinkRowDelta
	// SinkCompact rewrites small files into fewer (RewriteFiles), and
	// drops the delete files that apply to nothing afterwards.
	SinkCompact
	// SinkIngest adds the files the workers wrote of a client's stream
	// (bulk ingest): its fragments read no plan, the rows arrive by DoPut.
	SinkIngest
)

func (s Sink) String() string {
	switch s {
	case SinkAppend:
		return "append"
	case SinkRowDelta:
		return "row delta"
	case SinkCompact:
		return "rewrite files"
	case SinkIngest:
		return "ingest"
	}
	return fmt.Sprintf("sink(%d)", int(s))
}

// Write is the root of a write's plan: the fragments under it (In's
// endpoints, or Fragments streams of a client's rows for an ingest) each
// write Parquet files of Table and return them, and one commit on top of
// Snapshot, the version the write began on, finishes it.
type Write struct {
	Sink  Sink
	Table string
	// Snapshot is the target's snapshot the write began on (0: empty).
	Snapshot int64
	// Fragments is how many write fragments run.
	Fragments int
	// In is the plan whose endpoints the fragments are; nil for an
	// ingest.
	In Node
	Figures
}

func (w *Write) Inputs() []Node {
	if w.In == nil {
		return nil
	}
	return []Node{w.In}
}

func (w *Write) Head() string {
	return fmt.Sprintf("Write %s into %s at snapshot %d: %d fragments, one commit", w.Sink, w.Table, w.Snapshot, w.Fragments)
}
