package planner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/wire"
)

// input is one distinct table a query reads, pinned for the whole query.
type input struct {
	ref    catalog.TableRef
	pinned *catalog.Pinned
	view   string   // the temp table name fragments read
	cols   []string // projected columns; nil = all
	tasks  []table.FileScanTask
	bytes  int64
}

// bound is a parsed, resolved and bound query.
type bound struct {
	ast    *parsed
	inputs []*input
	sql    string // the query rewritten over the inputs' views
	schema *arrow.Schema
	shape  shape
}

// Bind returns the result schema of a query, as every stream of its plan
// will carry it.
func (p *Planner) Bind(ctx context.Context, s Session, query string) (*arrow.Schema, error) {
	b, err := p.bind(ctx, s, query)
	if err != nil {
		return nil, err
	}
	return b.schema, nil
}

// Plan plans a query over the live workers.
func (p *Planner) Plan(ctx context.Context, s Session, query string) (*Plan, error) {
	workers := p.opts.Workers.Live()
	if len(workers) == 0 {
		return nil, fmt.Errorf("%w: no worker is serving; check the workers' health", ErrNoWorkers)
	}
	b, err := p.bind(ctx, s, query)
	if err != nil {
		return nil, err
	}
	for _, in := range b.inputs {
		if err := planFiles(ctx, in); err != nil {
			return nil, err
		}
	}
	schemaBytes := flight.SerializeSchema(b.schema, memory.DefaultAllocator)
	plan := &Plan{QueryID: newQueryID(), Schema: b.schema}
	expires := time.Now().Add(p.opts.TicketTTL)
	newTicket := func(scans []wire.Scan) *wire.Ticket {
		return &wire.Ticket{QueryID: plan.QueryID, ExpiresAt: expires, Scans: scans, SQL: b.sql, Schema: schemaBytes}
	}
	var tickets []*wire.Ticket
	var explain strings.Builder
	if b.shape.scatter && len(b.inputs) == 1 {
		plan.Strategy = Scatter
		in := b.inputs[0]
		groups := groupTasks(in.tasks, targetGroups(workers, in.bytes, p.opts.TargetGroupBytes))
		fmt.Fprintf(&explain, "strategy: scatter\ninput: %s as %s, %d tasks, %d bytes, %d groups\n", in.ref, in.view, len(in.tasks), in.bytes, len(groups))
		for _, g := range groups {
			scan, err := encodeScan(in, g)
			if err != nil {
				return nil, err
			}
			tickets = append(tickets, newTicket([]wire.Scan{scan}))
		}
	} else {
		plan.Strategy = Gather
		fmt.Fprintf(&explain, "strategy: gather (%s)\n", b.shape.reason)
		var scans []wire.Scan
		for _, in := range b.inputs {
			fmt.Fprintf(&explain, "input: %s as %s, %d tasks, %d bytes\n", in.ref, in.view, len(in.tasks), in.bytes)
			scan, err := encodeScan(in, in.tasks)
			if err != nil {
				return nil, err
			}
			scans = append(scans, scan)
		}
		tickets = append(tickets, newTicket(scans))
	}
	start := int(plan.QueryID[0]) % len(workers)
	for i, t := range tickets {
		sealed, err := p.opts.Key.Seal(t)
		if err != nil {
			return nil, err
		}
		owner := workers[(start+i)%len(workers)].Location
		locs := []string{owner}
		if len(workers) > 1 {
			locs = append(locs, workers[(start+i+1)%len(workers)].Location)
		}
		plan.Endpoints = append(plan.Endpoints, Endpoint{Ticket: sealed, Locations: locs})
		fmt.Fprintf(&explain, "endpoint %d: %s\n", i, owner)
	}
	plan.Explain = explain.String()
	return plan, nil
}

func newQueryID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// bind parses, resolves, rewrites and binds a query.
func (p *Planner) bind(ctx context.Context, s Session, query string) (*bound, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	text, err := conn.SerializeSQL(ctx, query)
	if err != nil {
		return nil, err
	}
	ast, err := parseAST(text)
	if err != nil {
		return nil, err
	}
	if err := refuseEscapes(ast); err != nil {
		return nil, err
	}
	b := &bound{ast: ast}
	if err := p.resolve(ctx, s, b); err != nil {
		return nil, err
	}
	aggs, err := p.aggregates.load(ctx, conn)
	if err != nil {
		return nil, err
	}
	b.shape = classifyShape(ast, len(b.inputs), aggs)
	doc, err := ast.document()
	if err != nil {
		return nil, err
	}
	if b.sql, err = conn.DeserializeSQL(ctx, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for _, in := range b.inputs {
		sch, err := catalog.ScanSchema(in.pinned.Table, 0, in.cols)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", in.ref, err)
		}
		empty, err := array.NewRecordReader(sch, nil)
		if err != nil {
			return nil, err
		}
		err = conn.LoadTable(ctx, in.view, empty)
		empty.Release()
		if err != nil {
			return nil, fmt.Errorf("stand-in for %s: %w", in.ref, err)
		}
	}
	rdr, err := conn.Query(ctx, b.sql)
	if err != nil {
		return nil, bindError(err)
	}
	b.schema = rdr.Schema()
	rdr.Release()
	return b, nil
}

// bindError classifies a DuckDB error from binding a client query.
func bindError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Parser Error"):
		return fmt.Errorf("%w: %s", ErrSyntax, msg)
	case strings.Contains(msg, "Permission Error"):
		return fmt.Errorf("%w: %s", ErrRefused, msg)
	default:
		return fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
}

// refuseEscapes refuses what would let client SQL reach past its tables:
// table functions (read_csv, read_parquet, glob, …).
func refuseEscapes(ast *parsed) error {
	var err error
	walk(ast.root, func(n node) bool {
		if err != nil {
			return false
		}
		if isTableRef(n) {
			switch t := str(n, "type"); t {
			case "TABLE_FUNCTION":
				name := "?"
				if fn, ok := n["function"].(node); ok {
					name = str(fn, "function_name")
				}
				err = fmt.Errorf("%w: table function %s is not allowed", ErrRefused, name)
			case "SHOW_REF", "PIVOT", "COLUMN_DATA", "DELIM_GET", "BOUND_TABLE_REF":
				err = fmt.Errorf("%w: %s in FROM", ErrUnsupported, strings.ToLower(t))
			}
		}
		return true
	})
	return err
}

// resolve finds every table reference outside CTE names, pins each distinct
// table once and points the references at its view.
func (p *Planner) resolve(ctx context.Context, s Session, b *bound) error {
	ctes := map[string]bool{}
	walk(b.ast.root, func(n node) bool {
		if m, ok := n["cte_map"].(node); ok {
			if list, ok := m["map"].([]any); ok {
				for _, e := range list {
					if en, ok := e.(node); ok {
						ctes[strings.ToLower(str(en, "key"))] = true
					}
				}
			}
		}
		return true
	})
	byRef := map[catalog.TableRef]*input{}
	var err error
	walk(b.ast.root, func(n node) bool {
		if err != nil || !isTableRef(n) || str(n, "type") != "BASE_TABLE" {
			return err == nil
		}
		cat, sch, name := str(n, "catalog_name"), str(n, "schema_name"), str(n, "table_name")
		if cat == "" && sch == "" && ctes[strings.ToLower(name)] {
			return true
		}
		if at, ok := n["at_clause"]; ok && at != nil {
			err = fmt.Errorf("%w: AT (…) time travel", ErrUnsupported)
			return false
		}
		ref := catalog.TableRef{Catalog: cat, Schema: sch, Table: name}
		if ref.Catalog == "" {
			ref.Catalog = s.Catalog
		}
		if ref.Schema == "" {
			ref.Schema = s.Schema
		}
		in, ok := byRef[ref]
		if !ok {
			pinned, lerr := p.opts.Mounts.LoadTable(ctx, ref)
			if lerr != nil {
				err = fmt.Errorf("%w: %v", ErrNotFound, lerr)
				return false
			}
			in = &input{ref: ref, pinned: pinned, view: fmt.Sprintf("__icefloe_t%d", len(b.inputs))}
			byRef[ref] = in
			b.inputs = append(b.inputs, in)
		}
		if str(n, "alias") == "" {
			n["alias"] = name
		}
		n["catalog_name"], n["schema_name"], n["table_name"] = "", "", in.view
		return true
	})
	return err
}

// planFiles plans the input's file tasks once, on the coordinator.
func planFiles(ctx context.Context, in *input) error {
	tbl := in.pinned.Table
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	opts := []table.ScanOption{}
	if len(in.cols) > 0 {
		opts = append(opts, table.WithSelectedFields(in.cols...))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan files of %s: %w", in.ref, err)
	}
	in.tasks = tasks
	for _, t := range tasks {
		in.bytes += t.Length
	}
	return nil
}

// encodeScan seals nothing yet: it encodes one group of the input's tasks.
func encodeScan(in *input, tasks []table.FileScanTask) (wire.Scan, error) {
	md := in.pinned.Table.Metadata()
	scan := wire.Scan{
		View:             in.view,
		Table:            in.ref.String(),
		MetadataLocation: in.pinned.MetadataLocation,
		Columns:          in.cols,
		Props:            in.pinned.StorageProps,
	}
	schema := md.CurrentSchema()
	for _, t := range tasks {
		specID := int(t.File.SpecID())
		spec := md.PartitionSpecByID(specID)
		if spec == nil {
			return scan, fmt.Errorf("plan %s: partition spec %d missing", in.ref, specID)
		}
		data, err := codec.EncodeFileScanTask(t, *spec, schema, md.Version())
		if err != nil {
			return scan, fmt.Errorf("encode task of %s: %w", in.ref, err)
		}
		scan.Tasks = append(scan.Tasks, wire.Task{SpecID: specID, Data: data})
	}
	return scan, nil
}

// targetGroups is how many groups a scan of total bytes is split into: at
// least one per worker slot, more when groups would exceed the target size.
func targetGroups(workers []Worker, total, target int64) int {
	slots := 0
	for _, w := range workers {
		slots += max(w.Slots, 1)
	}
	n := slots
	if target > 0 {
		n = max(n, int((total+target-1)/target))
	}
	return max(n, 1)
}

// groupTasks bin-packs tasks by bytes into at most n groups, largest first
// onto the lightest group. Each task lands in exactly one group; no task
// gives one empty group.
func groupTasks(tasks []table.FileScanTask, n int) [][]table.FileScanTask {
	if len(tasks) == 0 {
		return [][]table.FileScanTask{nil}
	}
	n = min(n, len(tasks))
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch la, lb := tasks[a].Length, tasks[b].Length; {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	groups := make([][]table.FileScanTask, n)
	sizes := make([]int64, n)
	for _, i := range order {
		g := 0
		for j := 1; j < n; j++ {
			if sizes[j] < sizes[g] {
				g = j
			}
		}
		groups[g] = append(groups[g], tasks[i])
		sizes[g] += tasks[i].Length
	}
	return groups
}
