package planner

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Costs the rules weigh besides the size thresholds: what a plan makes
// one worker hold. A gather builds its hash joins on one worker; when the
// build side alone is estimated above a worker's memory share
// (Options.WorkerMemory), the join shuffles even below ShuffleBytes, so
// each worker holds one partition of it. A broadcast makes every fragment
// hold the small tables whole; above the share they are not broadcast,
// and the join shuffles or gathers.

// Widths the estimate gives values without a fixed width.
const (
	varWidth    = 32 // a string or binary value: its bytes and DuckDB's 16-byte header
	nestedWidth = 64 // a list, struct or map value
)

// decodedBytes estimates the bytes in's rows take decoded in DuckDB: its
// estimated rows times the width of a row of its columns; its Parquet
// bytes when that says more (or the rows are unknown).
func (pb *planBuilder) decodedBytes(ctx context.Context, in *input) int64 {
	rows, _ := pb.p.estimateRows(ctx, in)
	sch, err := inputSchema(ctx, in)
	if err != nil || rows <= 0 {
		return in.bytes
	}
	return max(in.bytes, rows*rowWidth(sch))
}

// rowWidth is the estimated bytes of one row of schema.
func rowWidth(schema *arrow.Schema) int64 {
	var w int64
	for _, f := range schema.Fields() {
		switch t := f.Type.(type) {
		case arrow.FixedWidthDataType:
			w += int64(max(t.BitWidth()/8, 1))
		case arrow.NestedType:
			w += nestedWidth
		default:
			w += varWidth
		}
	}
	return max(w, 1)
}

// overShare says whether a worker holding in whole would pass its memory
// share, with the figures; false when the share is unknown.
func (pb *planBuilder) overShare(ctx context.Context, in *input) (string, bool) {
	share := pb.p.opts.WorkerMemory
	if share <= 0 {
		return "", false
	}
	est := pb.decodedBytes(ctx, in)
	if est <= share {
		return "", false
	}
	return fmt.Sprintf("%s is ~%d bytes decoded, above a worker's memory share %d", in.ref, est, share), true
}

// broadcastOverShare says whether the small inputs, which every fragment
// of a broadcast holds whole, pass a worker's memory share together, with
// the figures; false when the share is unknown.
func (pb *planBuilder) broadcastOverShare(ctx context.Context, small []*input) (string, bool) {
	share := pb.p.opts.WorkerMemory
	if share <= 0 || len(small) == 0 {
		return "", false
	}
	var est int64
	for _, in := range small {
		est += pb.decodedBytes(ctx, in)
	}
	if est <= share {
		return "", false
	}
	return fmt.Sprintf("the broadcast tables are ~%d bytes decoded, above a worker's memory share %d", est, share), true
}

// large tells whether a join partitions in rather than broadcast it: it
// is above BroadcastBytes, or every fragment holding it whole would pass
// a worker's memory share.
func (pb *planBuilder) large(ctx context.Context, in *input) bool {
	if in.bytes > pb.p.opts.BroadcastBytes {
		return true
	}
	_, over := pb.broadcastOverShare(ctx, []*input{in})
	return over
}
