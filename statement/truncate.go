package statement

import (
	"context"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

func init() { runs(parse.KindTruncate, (*Executor).truncate) }

// truncate runs TRUNCATE [TABLE] name: one snapshot of operation
// delete that removes every live data file and delete file, committed on
// the coordinator (no file is read or written). The count is the rows the
// table held.
func (e *Executor) truncate(ctx context.Context, sess planner.Session, t *parse.Truncate) (int64, error) {
	tgt, err := e.planner.LoadTarget(ctx, sess, t.Name, authz.Delete)
	if err != nil {
		return 0, err
	}
	n, err := liveRows(ctx, tgt)
	if err != nil || n == 0 {
		return 0, err
	}
	if d := planner.DryRunOf(ctx); d != nil {
		d.Note("rows", "%d rows of %s", n, tgt.Ref)
		return 0, d.Commit("delete: every live data and delete file of %s leaves the table in one snapshot; no file is read or written", tgt.Ref)
	}
	// It read every row: under serializable isolation a concurrent append
	// conflicts with it.
	err = e.commitTx(ctx, tgt, commit.Request{Scope: readScope(tgt, commit.OpDelete, nil, nil), OwnFiles: true,
		Tx: func(tx *table.Transaction, _ table.Metadata) error {
			return tx.Delete(ctx, iceberg.AlwaysTrue{}, nil)
		}})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// liveRows counts the rows of the target's snapshot: from its summary when
// no delete file applies, else by reading one column.
func liveRows(ctx context.Context, tgt *planner.WriteTarget) (int64, error) {
	tbl := tgt.Pinned.Table
	snap := tbl.CurrentSnapshot()
	if tgt.Branch != "" {
		snap = tbl.SnapshotByName(tgt.Branch)
	}
	if snap == nil {
		return 0, nil
	}
	if s := snap.Summary; s != nil {
		total, err := strconv.ParseInt(s.Properties["total-records"], 10, 64)
		if err == nil && s.Properties["total-delete-files"] == "0" {
			return total, nil
		}
	}
	first := tbl.Schema().Fields()[0].Name
	_, recs, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID), table.WithSelectedFields(first)).ToArrowRecords(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			return 0, err
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}
