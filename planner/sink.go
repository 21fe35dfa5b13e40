package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// Writes as plan values. A write's plan is a sink (plan.Write) over the
// plan of what its fragments read: a query's plan for INSERT … SELECT,
// CREATE TABLE … AS and a MERGE's insert, the groups of whole files of a
// copy-on-write rewrite (dml.go) or a compaction (compact.go); an ingest's
// fragments read the client's stream (PlanIngest). Every ticket of a
// write is sealed where every ticket of a query is (planBuilder.finish,
// Planner.seal), each endpoint's carrying the statement's write spec with
// its own fragment UUID, so nothing downstream opens or seals a ticket
// again. Package statement runs the fragments and makes the one commit
// (the write protocol: statement/protocol.go).

// WritePlan is a planned write: its sink over its input plan, the write
// spec, and one endpoint per write fragment.
type WritePlan struct {
	// Tree is the write's plan, the sink at its root.
	Tree *plan.Write
	// Write is the statement's write spec (its UUID names every file).
	Write     *wire.Write
	Endpoints []Endpoint
	// Explain is the input query's plan lines (Plan.Explain); "" for
	// writes that read no query.
	Explain string
}

// String prints the write's plan tree.
func (w *WritePlan) String() string { return plan.Format(w.Tree) }

// PlanWrite plans the write fragments of query, a SELECT whose rows w
// (NewWrite, with the binding of BindInsert) writes into tgt: the query
// is planned as any query and each of its endpoints becomes one write
// fragment.
func (p *Planner) PlanWrite(ctx context.Context, s Session, tgt *WriteTarget, query *parse.Statement, w *wire.Write) (*WritePlan, error) {
	workers, err := p.LiveWorkers()
	if err != nil {
		return nil, err
	}
	if query.Kind != parse.KindSelect {
		return nil, fmt.Errorf("%w: writing the rows of %s", ErrUnsupported, query.Kind)
	}
	pl, err := p.planQueryInto(ctx, s, query, workers, nil, w)
	if err != nil {
		return nil, err
	}
	wp := pl.Into(plan.SinkAppend, tgt.Ref.String(), headOf(tgt))
	wp.Write = w
	return wp, nil
}

// Into is the write of pl's rows into table (which need not exist yet:
// EXPLAIN of CREATE TABLE … AS), at snapshot, through sink: a plan
// value only, its tickets carry no write spec (PlanWrite seals those).
func (pl *Plan) Into(sink plan.Sink, table string, snapshot int64) *WritePlan {
	wp := &WritePlan{Endpoints: pl.Endpoints, Explain: pl.Explain,
		Tree: &plan.Write{Sink: sink, Table: table, Snapshot: snapshot, Fragments: len(pl.Endpoints)}}
	if pl.tree != nil {
		wp.Tree.In = pl.tree
	}
	return wp
}

// headOf is the snapshot of tgt's branch the write begins on (0: none).
func headOf(tgt *WriteTarget) int64 {
	branch := tgt.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	if s := tgt.Pinned.Table.SnapshotByName(branch); s != nil {
		return s.SnapshotID
	}
	return 0
}

// sinkBuilder is the plan builder of a write whose fragments are built
// here rather than lowered from a query's plan (rewrites, compactions,
// ingest): its tickets carry ctx's stamp and query id and w.
func (p *Planner) sinkBuilder(ctx context.Context, workers []Worker, w *wire.Write, schema *arrow.Schema) *planBuilder {
	expires := time.Now().Add(p.opts.TicketTTL)
	pb := &planBuilder{p: p, workers: workers, stamp: stampOf(ctx), write: w, expires: expires,
		plan: &Plan{QueryID: newQueryID(ctx), Schema: schema, ExpiresAt: expires}}
	return pb
}

// sinkFragments seals one write fragment per element of scans (the
// scans of its ticket), each running sql, fragment i on worker i modulo
// the workers.
func (pb *planBuilder) sinkFragments(scans [][]wire.Scan, sql string, schema *arrow.Schema) ([]Endpoint, error) {
	for i, sc := range scans {
		pb.endpointAt(pb.ticket(sc, sql, schema), place{owner: i % len(pb.workers), fallback: -1})
	}
	pl, err := pb.finish()
	if err != nil {
		return nil, err
	}
	return pl.Endpoints, nil
}

// wholeFilesPlan is the input of a rewrite or compaction as a plan: one
// fragment per group of whole files of the target.
func wholeFilesPlan(role, table, sql string, groups []plan.Group) *plan.Fragment {
	scan := &plan.Scan{Table: table, View: "__icefloe_t0", Groups: groups, Figures: plan.Figures{EstRows: 0}}
	var rows int64
	for _, g := range groups {
		scan.Files += g.Files
		scan.Bytes += g.Bytes
		rows += g.Rows
	}
	scan.FilesBefore, scan.BytesBefore, scan.EstRows, scan.EstBytes = scan.Files, scan.Bytes, rows, scan.Bytes
	return &plan.Fragment{Role: role, SQL: sql, Per: scan, In: []plan.Node{scan},
		Figures: plan.Figures{EstRows: rows, EstBytes: scan.Bytes}}
}

// withWrite gives endpoint i's ticket its fragment of the write spec,
// when the plan is a write's: the statement's spec with
// FragmentUUID(WriteUUID, i).
func (pb *planBuilder) withWrite(t *wire.Ticket, i int) {
	if pb.write == nil {
		return
	}
	fw := *pb.write
	fw.WriteUUID = FragmentUUID(pb.write.WriteUUID, i)
	t.Write = &fw
}

// PlanIngest plans a bulk ingest of a client's stream into tgt with w:
// one write fragment per worker, which the statement streams its share
// of the rows into itself (DoPut; no scans, no SQL). Fragment i writes
// with FragmentUUID(w.WriteUUID, i) on workers[i]. Its tickets carry the
// statement's query id and the caller's principal, deadline and trace,
// and expire after the ticket TTL.
func (p *Planner) PlanIngest(ctx context.Context, tgt *WriteTarget, w *wire.Write, workers []Worker) (*WritePlan, error) {
	pb := p.sinkBuilder(ctx, workers, w, nil)
	wp := &WritePlan{Write: w,
		Tree: &plan.Write{Sink: plan.SinkIngest, Table: tgt.Ref.String(), Snapshot: headOf(tgt), Fragments: len(workers)}}
	for i, wk := range workers {
		t := &wire.Ticket{QueryID: pb.plan.QueryID, ExpiresAt: pb.expires}
		pb.withWrite(t, i)
		sealed, err := pb.seal(t)
		if err != nil {
			return nil, err
		}
		wp.Endpoints = append(wp.Endpoints, Endpoint{Ticket: sealed, Locations: []string{wk.Location}})
	}
	return wp, nil
}
