package commit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/icemeta"
)

// Conflict detection scoped to what a statement read and replaced, with
// Iceberg's isolation levels as Iceberg Java (MergingSnapshotProducer's
// validateAddedDataFiles, validateNoNewDeletesForDataFiles,
// validateDeletedDataFiles) and Spark's copy-on-write and row-delta
// writes apply them:
//
//   - serializable (the default): a data file that a concurrent append or
//     overwrite added conflicts when it may hold a row matching the
//     statement's conflict filter (Scope.Filter), judged by the file's
//     partition and column metrics;
//   - snapshot: concurrently added data files never conflict;
//   - at both levels, a concurrent commit that removed a file the
//     statement rewrote, or that added delete files (positional, deletion
//     vectors, equality) that may apply to such a file, conflicts, and so
//     does a concurrently added data file that may hold a row the
//     statement's equality deletes remove (Scope.Keys).
//
// Appends are never checked against anything: they cannot conflict with
// a delete or an update of other rows.

// Op is the kind of change a scoped commit makes; it picks the table
// property that sets the commit's isolation level.
type Op int

// Ops of a scoped commit.
const (
	// OpDelete reads write.delete.isolation-level.
	OpDelete Op = iota + 1
	// OpUpdate reads write.update.isolation-level.
	OpUpdate
	// OpMerge reads write.merge.isolation-level.
	OpMerge
	// OpRewrite is a rewrite of files that keeps their rows (compaction):
	// no isolation level applies.
	OpRewrite
)

// Isolation is an Iceberg isolation level.
type Isolation string

// Isolation levels.
const (
	Serializable Isolation = "serializable"
	Snapshot     Isolation = "snapshot"
)

// Isolation level table properties, as Iceberg Java names them.
const (
	DeleteIsolationKey = "write.delete.isolation-level"
	UpdateIsolationKey = "write.update.isolation-level"
	MergeIsolationKey  = "write.merge.isolation-level"
)

// ErrIsolation: a table property that names no isolation level
// (InvalidArgument).
var ErrIsolation = errors.New("commit: invalid isolation level")

// key is the table property that sets op's isolation level ("" for none).
func (op Op) key() string {
	switch op {
	case OpDelete:
		return DeleteIsolationKey
	case OpUpdate:
		return UpdateIsolationKey
	case OpMerge:
		return MergeIsolationKey
	}
	return ""
}

// IsolationOf is the isolation level props set for op: serializable
// unless the op's property says snapshot.
func IsolationOf(props iceberg.Properties, op Op) (Isolation, error) {
	key := op.key()
	if key == "" {
		return Snapshot, nil
	}
	switch v := Isolation(strings.ToLower(props.Get(key, string(Serializable)))); v {
	case Serializable, Snapshot:
		return v, nil
	}
	return "", fmt.Errorf("%w: table property %s is %q; want serializable or snapshot", ErrIsolation, key, props[key])
}

// Scope is what a statement's commit depends on: the snapshot it read,
// the rows it read to decide its change, the files it replaces. Before
// each attempt the commit checks the commits made since against it (see
// the rules above); one that conflicts fails the statement with
// ErrConflict, one that does not lets the change be built again on the
// table as it now is.
type Scope struct {
	Op Op
	// Base is the snapshot of the commit's branch the statement read; 0
	// when the branch had none.
	Base int64
	// Filter selects the rows the statement read to decide its change
	// (an UPDATE's or DELETE's WHERE as an Iceberg filter, a MERGE's
	// source keys); nil is every row. An over-approximation is sound.
	Filter iceberg.BooleanExpression
	// Keys selects the rows the commit's equality deletes remove; nil
	// for none.
	Keys iceberg.BooleanExpression
	// Rewritten are the data files the commit removes or replaces.
	Rewritten []iceberg.DataFile
	// AppendsOnly makes every concurrent snapshot but an append a
	// conflict.
	AppendsOnly bool
}

// scopeCheck is a scope's check across the attempts of one commit: each
// attempt checks only the snapshots added since the last one it passed.
type scopeCheck struct {
	scope    *Scope
	branch   string
	passed   int64 // the newest branch head checked clean (Base at first)
	rewrites map[string]bool
	parts    map[string]bool // spec and partition of each rewritten file
}

func newScopeCheck(s *Scope, branch string) *scopeCheck {
	if branch == "" {
		branch = table.MainBranch
	}
	c := &scopeCheck{scope: s, branch: branch, passed: s.Base, rewrites: map[string]bool{}, parts: map[string]bool{}}
	for _, df := range s.Rewritten {
		c.rewrites[df.FilePath()] = true
		c.parts[icemeta.PartitionKey(df)] = true
	}
	return c
}

// conflictError is a conflict the scope check found: nothing was
// committed.
type conflictError struct{ detail string }

func (e *conflictError) Error() string { return ErrConflict.Error() + ": " + e.detail }
func (e *conflictError) Unwrap() error { return ErrConflict }

func conflictf(format string, args ...any) error {
	return &conflictError{detail: fmt.Sprintf(format, args...)}
}

// check checks the snapshots of tbl's branch since the last check
// against the scope; an error wrapping ErrConflict is a conflict.
func (c *scopeCheck) check(ctx context.Context, tbl *table.Table) error {
	meta := tbl.Metadata()
	level := Snapshot
	if c.scope.Op != OpRewrite {
		var err error
		if level, err = IsolationOf(meta.Properties(), c.scope.Op); err != nil {
			return err
		}
	}
	head := meta.SnapshotByName(c.branch)
	if head == nil {
		if c.scope.Base == 0 {
			return nil
		}
		return conflictf("branch %s of the table went away while the statement ran", c.branch)
	}
	concurrent, ok := c.since(meta, head.SnapshotID)
	if !ok {
		return conflictf("snapshot %d that the statement read is no longer an ancestor of branch %s (rolled back or expired)", c.scope.Base, c.branch)
	}
	if len(concurrent) == 0 {
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	if err := c.checkSnapshots(fsys, concurrent); err != nil {
		return err
	}
	if err := c.checkAdded(meta, fsys, head, concurrent, level); err != nil {
		return err
	}
	c.passed = head.SnapshotID
	return nil
}

// since are the snapshots of the branch after the last clean check, up
// to head; ok is false when that snapshot is not head's ancestor.
func (c *scopeCheck) since(meta table.Metadata, head int64) ([]table.Snapshot, bool) {
	for _, from := range []int64{c.passed, c.scope.Base} {
		if from == 0 {
			return table.AncestorsOfChecked(head, meta.SnapshotByID)
		}
		if snaps, ok := table.AncestorsBetween(head, from, meta.SnapshotByID); ok {
			return snaps, true
		}
		if from == c.scope.Base {
			break
		}
	}
	return nil, false
}

// checkSnapshots looks at what each concurrent snapshot did: under
// AppendsOnly anything but an append conflicts; a snapshot that removed
// a file the statement rewrote conflicts.
func (c *scopeCheck) checkSnapshots(fsys iceio.IO, concurrent []table.Snapshot) error {
	for _, s := range concurrent {
		op := operation(s)
		if op == table.OpAppend {
			continue
		}
		if c.scope.AppendsOnly {
			return conflictf("snapshot %d (%s) changed the table while the statement ran", s.SnapshotID, op)
		}
		if len(c.rewrites) == 0 {
			continue
		}
		manifests, err := s.Manifests(fsys)
		if err != nil {
			return fmt.Errorf("read the manifests of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, mf := range manifests {
			if mf.SnapshotID() != s.SnapshotID || mf.ManifestContent() != iceberg.ManifestContentData {
				continue
			}
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
				}
				if e.Status() == iceberg.EntryStatusDELETED && e.SnapshotID() == s.SnapshotID && c.rewrites[e.DataFile().FilePath()] {
					return conflictf("snapshot %d (%s) removed %s, which the statement rewrote", s.SnapshotID, op, e.DataFile().FilePath())
				}
			}
		}
	}
	return nil
}

// checkAdded looks at the files the concurrent snapshots added that are
// still live at head: data files that may hold a row of the statement's
// filter (serializable) or of its equality deletes' keys, and delete
// files that may apply to a file the statement rewrote.
func (c *scopeCheck) checkAdded(meta table.Metadata, fsys iceio.IO, head *table.Snapshot, concurrent []table.Snapshot, level Isolation) error {
	var filter, keys *fileFilter
	if level == Serializable {
		f := bindFilter(c.scope.Filter, meta)
		filter = &f
	}
	if c.scope.Keys != nil {
		k := bindFilter(c.scope.Keys, meta)
		keys = &k
	}
	if filter == nil && keys == nil && len(c.rewrites) == 0 {
		return nil
	}
	ops := make(map[int64]table.Operation, len(concurrent))
	for _, s := range concurrent {
		ops[s.SnapshotID] = operation(s)
	}
	manifests, err := head.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("read the manifests of snapshot %d: %w", head.SnapshotID, err)
	}
	for _, mf := range manifests {
		if _, ok := ops[mf.SnapshotID()]; !ok {
			continue // written before the statement read the table
		}
		deletes := mf.ManifestContent() == iceberg.ManifestContentDeletes
		if deletes && len(c.rewrites) == 0 || !deletes && filter == nil && keys == nil {
			continue
		}
		for e, err := range mf.Entries(fsys, true) {
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			op, ok := ops[e.SnapshotID()]
			if !ok {
				continue // carried over from an earlier snapshot
			}
			df := e.DataFile()
			if deletes {
				if err := c.checkDeleteFile(e.SnapshotID(), df); err != nil {
					return err
				}
				continue
			}
			if op != table.OpAppend && op != table.OpOverwrite {
				continue // a delete or a rewrite adds no row that was not there
			}
			if keys != nil && keys.mayMatch(df) {
				return conflictf("snapshot %d (%s) added %s, which may hold a row the statement's equality deletes would remove (%s)", e.SnapshotID(), op, df.FilePath(), c.scope.Keys)
			}
			if filter != nil && filter.mayMatch(df) {
				return conflictf("snapshot %d (%s) added %s, which may hold a row matching the statement's filter (%s) under %s isolation (table property %s)",
					e.SnapshotID(), op, df.FilePath(), filterText(c.scope.Filter), level, c.scope.Op.key())
			}
		}
	}
	return nil
}

// checkDeleteFile fails when df, a delete file snapshot snap added, may
// apply to a file the statement rewrote: a positional delete or deletion
// vector naming one (or, when it names no single file, in the partition
// of one), an equality delete in the partition of one or unpartitioned.
func (c *scopeCheck) checkDeleteFile(snap int64, df iceberg.DataFile) error {
	if len(c.rewrites) == 0 {
		return nil
	}
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		if path := referencedFile(df); path != "" {
			if c.rewrites[path] {
				return conflictf("snapshot %d added deletes %s against %s, which the statement rewrote", snap, df.FilePath(), path)
			}
			return nil
		}
	case iceberg.EntryContentEqDeletes:
	default:
		return nil
	}
	if len(df.Partition()) == 0 || c.parts[icemeta.PartitionKey(df)] {
		return conflictf("snapshot %d added deletes %s that may apply to files the statement rewrote", snap, df.FilePath())
	}
	return nil
}

// referencedFile is the one data file a positional delete file applies
// to, when it names one (referenced_data_file, or equal file_path bounds).
func referencedFile(df iceberg.DataFile) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	f, ok := iceberg.PositionalDeleteSchema.FindFieldByName("file_path")
	if !ok {
		return ""
	}
	lo, hi := df.LowerBoundValues()[f.ID], df.UpperBoundValues()[f.ID]
	if len(lo) == 0 || string(lo) != string(hi) {
		return ""
	}
	return string(lo)
}

// operation is a snapshot's operation ("" when it has no summary).
func operation(s table.Snapshot) table.Operation {
	if s.Summary == nil {
		return ""
	}
	return s.Summary.Operation
}

// filterText prints a conflict filter for messages.
func filterText(f iceberg.BooleanExpression) string {
	if f == nil {
		return "every row"
	}
	return f.String()
}
