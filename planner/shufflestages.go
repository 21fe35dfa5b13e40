package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner/plan"
)

// Multi-stage shuffles.
//
// An inner join of three or more large inputs shuffles stage after stage,
// each join on its own keys. The large inputs are taken in an order in
// which each is joined to one before it by an equality of their columns
// (in an ON or at the top of WHERE). Stage 1 hash-partitions the first
// two on the key between them; partition j joins its rows of both and
// keeps every column of each, named by the input's alias:
//
//	SELECT "a"."x" AS "a.x", …, "b"."y" AS "b.y" FROM __icefloe_t0 AS "a", __icefloe_t1 AS "b" WHERE <conjuncts over a and b>
//
// Stage k's partitions are in turn a hash exchange's producers, on the
// key by which the next input joins one already joined; stage k+1 joins
// them with that input's partitions:
//
//	SELECT "a"."x" AS "a.x", …, "c"."z" AS "c.z"
//	FROM (SELECT "a.x" AS "x", …, {"x": "a.x", …} AS "a", … FROM __icefloe_s1) AS __icefloe_s, __icefloe_t2 AS "c" WHERE …
//
// (a struct packed per input answers "a"."x" as the table did, the
// renamed columns answer unqualified names). The last stage runs the query itself over the
// last stage's rows, the last large input's partitions and the small
// inputs whole (broadcast), with its FROM replaced that way and every ON
// moved to WHERE — for inner joins the same rows. Every conjunct a stage
// applies early is applied again by the query, so an early one only drops
// rows the query would drop. Rows with equal keys hash alike at every
// stage, so each stage's partition holds every match of its rows; the
// final's partitions are the endpoints, or the partials of a two-phase
// split with one final over them. The final query must bind over the
// stand-ins to exactly the bound schema, or the rule does not apply.

// stagesView is the view stage k's rows are read as by the next stage.
func stagesView(k int) string { return fmt.Sprintf("__icefloe_s%d", k) }

// stagesAlias is the FROM alias of the previous stage's rows.
const stagesAlias = "__icefloe_s"

// maxStageTickets bounds the tickets a multi-stage plan may nest: each
// consumer's ticket carries the tickets of every producer instance under
// it, so they multiply by the partitions at each stage.
const maxStageTickets = 4096

// stageEdge is an equality by which input in joins one joined before it.
type stageEdge struct {
	prev, in       *input
	prevCol, inCol string
}

// shuffleStages plans q as a multi-stage shuffle, or says why not.
func (pb *planBuilder) shuffleStages(ctx context.Context, q *queryView) (*plan.Result, string, error) {
	if !q.From.inner() {
		return nil, "not every join is an inner join", nil
	}
	byView := map[string]*input{}
	for _, in := range pb.b.inputs {
		byView[in.view] = in
	}
	alias := map[*input]string{}
	large := map[*input]bool{}
	var order []*input // inputs in the FROM's order
	for _, leaf := range q.From.leaves() {
		in := byView[leaf.Table]
		switch {
		case leaf.Type != "BASE_TABLE" || in == nil || leaf.Sampled || leaf.Renamed > 0:
			return nil, "join of something other than tables", nil
		case in.meta != "":
			return nil, "metadata table", nil
		case alias[in] != "":
			return nil, fmt.Sprintf("%s is read more than once", in.ref), nil
		}
		alias[in] = leaf.Alias
		if alias[in] == "" {
			alias[in] = leaf.Table
		}
		order = append(order, in)
		if pb.large(ctx, in) {
			large[in] = true
		}
	}
	if len(large) < 3 {
		return nil, fmt.Sprintf("%d large tables, stages join 3 or more", len(large)), nil
	}
	for _, in := range order {
		if limit := pb.p.opts.ShuffleBytes; large[in] && limit >= 0 && in.bytes < limit {
			return nil, fmt.Sprintf("%s is %d bytes, below the shuffle size %d", in.ref, in.bytes, limit), nil
		}
	}
	n := min(len(pb.workers), pb.p.opts.ShufflePartitions)
	if tickets(n, len(large)) > maxStageTickets {
		return nil, fmt.Sprintf("%d stages of %d partitions nest too many tickets", len(large)-1, n), nil
	}
	w := &joinWalk{pb: pb, ctx: ctx, byView: byView, large: large, leaves: order}
	conds := whereConjuncts(q.root)
	for _, j := range joinsOf(q.From) {
		if j.Condition != nil {
			conds = append(conds, conjuncts(j.Condition)...)
		}
	}
	edges := stageOrder(w, conds, order, large)
	if len(edges)+1 != len(large) {
		return nil, "the large tables are not joined one to another by equalities", nil
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, "", err
	}
	st := &stages{pb: pb, w: w, n: n, alias: alias, conds: conds, used: make([]bool, len(conds))}
	res, why, err := st.plan(ctx, q, edges, order, large)
	return res, why, err
}

// tickets is how many tickets a plan of k large inputs in n partitions
// nests, about: n at the top times n per stage below.
func tickets(n, k int) int {
	t := 1
	for range k {
		t *= max(n, 1)
		if t > maxStageTickets {
			break
		}
	}
	return t
}

// joinsOf lists the joins under r.
func joinsOf(r *tableRef) []*tableRef {
	if r == nil || r.Type != "JOIN" {
		return nil
	}
	return append(append([]*tableRef{r}, joinsOf(r.Left)...), joinsOf(r.Right)...)
}

// stageOrder orders the large inputs by the equalities among them: the
// first equality between two large inputs starts, then each next is the
// first equality joining an input not yet joined to one that is.
func stageOrder(w *joinWalk, conds []node, order []*input, large map[*input]bool) []stageEdge {
	var all []stageEdge
	for _, c := range conds {
		if str(c, "class") != "COMPARISON" || (str(c, "type") != "COMPARE_EQUAL" && str(c, "type") != "COMPARE_NOT_DISTINCT_FROM") {
			continue
		}
		l, _ := c["left"].(node)
		r, _ := c["right"].(node)
		lin, lcol := w.column(l)
		rin, rcol := w.column(r)
		if lin == nil || rin == nil || lin == rin || !large[lin] || !large[rin] {
			continue
		}
		all = append(all, stageEdge{prev: lin, in: rin, prevCol: lcol, inCol: rcol})
	}
	if len(all) == 0 {
		return nil
	}
	joined := map[*input]bool{all[0].prev: true, all[0].in: true}
	edges := []stageEdge{all[0]}
	for len(joined) < len(large) {
		found := false
		for _, e := range all {
			switch {
			case joined[e.prev] && !joined[e.in]:
			case joined[e.in] && !joined[e.prev]:
				e = stageEdge{prev: e.in, in: e.prev, prevCol: e.inCol, inCol: e.prevCol}
			default:
				continue
			}
			joined[e.in], found = true, true
			edges = append(edges, e)
			break
		}
		if !found {
			break
		}
	}
	return edges
}

// stages builds one multi-stage plan.
type stages struct {
	pb    *planBuilder
	w     *joinWalk
	n     int
	alias map[*input]string
	conds []node
	used  []bool // conds a stage applied already
}

// plan builds the stages along edges and the final over the last.
func (st *stages) plan(ctx context.Context, q *queryView, edges []stageEdge, order []*input, large map[*input]bool) (*plan.Result, string, error) {
	pb := st.pb
	sides := map[*input]*shuffleSide{}
	sj := &shuffleJoin{}
	for _, in := range order {
		if large[in] {
			sj.sides = append(sj.sides, shuffleSide{in: in})
		} else {
			sj.small = append(sj.small, in)
		}
	}
	pushedWhere(st.w, q.root, sj)
	for i := range sj.sides {
		sides[sj.sides[i].in] = &sj.sides[i]
	}
	var (
		prev       *plan.Exchange // the previous stage's rows, hashed for this stage
		joined     []*input
		labelParts []string
	)
	for k, e := range edges {
		// This stage's left: the first input, or the previous stage.
		var left *plan.Exchange
		var err error
		var why string
		if k == 0 {
			left, why, err = st.hashInput(ctx, sides[e.prev], e.prevCol, e.in, e.inCol)
			joined = append(joined, e.prev)
		} else {
			left, why, err = st.hashStage(ctx, prev, k, e)
		}
		if err != nil || why != "" {
			return nil, why, err
		}
		right, why, err := st.hashInput(ctx, sides[e.in], e.inCol, e.prev, e.prevCol)
		if err != nil || why != "" {
			return nil, why, err
		}
		joined = append(joined, e.in)
		labelParts = append(labelParts, fmt.Sprintf("%s.%s = %s.%s", e.prev.ref, e.prevCol, e.in.ref, e.inCol))
		if k == len(edges)-1 {
			return st.final(ctx, q, sj, left, right, joined, strings.Join(labelParts, ", then "))
		}
		sql, schema, why, err := st.stageSQL(ctx, k, joined)
		if err != nil || why != "" {
			return nil, why, err
		}
		frag := &plan.Fragment{Role: fmt.Sprintf("stage %d join", k+1), SQL: sql, Schema: schema, Partitions: st.n, Place: plan.PlacePartitions,
			In: []plan.Node{&plan.Join{Op: "join", On: labelParts[k], In: []plan.Node{left, right}}}}
		if err := pb.streamOnce(ctx, sql, []plan.Node{left, right}); err != nil {
			return nil, "", err
		}
		prev = &plan.Exchange{Kind: plan.ExchangeHash, View: stagesView(k + 1), Partitions: st.n, Stream: true, In: []plan.Node{frag}}
		if err := st.standIn(ctx, stagesView(k+1), schema); err != nil {
			return nil, "", err
		}
	}
	return nil, "no stage", nil
}

// keyType is the DuckDB type of column col of in, "" when unknown.
func (pb *planBuilder) keyType(ctx context.Context, in *input, col string) string {
	t := typeNames(ctx, pb.conn, "SELECT "+engine.Quote(col)+" FROM "+engine.Quote(in.view), 1)
	if t == nil {
		return ""
	}
	return t[0]
}

// hashKey is the expression expr of type own hashed as the common type of
// own and other.
func hashKey(expr, own, other string) (string, bool) {
	common, ok := hashType(own, other)
	if !ok {
		return "", false
	}
	if common != own {
		expr = "CAST(" + expr + " AS " + common + ")"
	}
	return expr, true
}

// hashInput is side's input hash-partitioned on col, which equals
// otherCol of other.
func (st *stages) hashInput(ctx context.Context, side *shuffleSide, col string, other *input, otherCol string) (*plan.Exchange, string, error) {
	own, theirs := st.pb.keyType(ctx, side.in, col), st.pb.keyType(ctx, other, otherCol)
	key, ok := hashKey(engine.Quote(col), own, theirs)
	if own == "" || theirs == "" || !ok {
		return nil, fmt.Sprintf("keys of types %s and %s do not hash alike", own, theirs), nil
	}
	s := *side
	s.col, s.hash = col, key
	sql, schema, err := st.pb.producerSQL(ctx, s)
	if err != nil {
		return nil, "", err
	}
	sc := st.pb.scan(s.in, false)
	prod := &plan.Fragment{Role: "partition", SQL: sql, Schema: schema, Per: sc, Place: plan.PlaceGroups, In: []plan.Node{sc}}
	return &plan.Exchange{Kind: plan.ExchangeHash, View: s.in.view, Keys: [][]string{{key}}, Partitions: st.n, Stream: true, In: []plan.Node{prod}}, "", nil
}

// hashStage sets the key of prev, the rows of stage k, to e.prev's
// column, which the next input's column equals.
func (st *stages) hashStage(ctx context.Context, prev *plan.Exchange, k int, e stageEdge) (*plan.Exchange, string, error) {
	own, theirs := st.pb.keyType(ctx, e.prev, e.prevCol), st.pb.keyType(ctx, e.in, e.inCol)
	key, ok := hashKey(engine.Quote(st.alias[e.prev]+"."+e.prevCol), own, theirs)
	if own == "" || theirs == "" || !ok {
		return nil, fmt.Sprintf("keys of types %s and %s do not hash alike", own, theirs), nil
	}
	prev.Keys = [][]string{{key}}
	return prev, "", nil
}

// from is the FROM of stage k (0-based) over joined: the inputs
// themselves at stage 0; after, the previous stage's rows and the input
// joined last. The previous stage's flat columns ("a.x") are packed back
// into a struct per input ("a") for qualified names and renamed to their
// own names ("x") for unqualified ones — inside DuckDB, so no struct
// crosses an exchange (DuckDB's scan of streamed struct columns with
// projection pushdown reads another column's values).
func (st *stages) from(ctx context.Context, k int, joined []*input, extra []*input) (string, error) {
	var items []string
	if k == 0 {
		for _, in := range joined {
			items = append(items, engine.Quote(in.view)+" AS "+engine.Quote(st.alias[in]))
		}
	} else {
		prev := joined[:len(joined)-1]
		names := map[string]int{}
		cols := map[*input][]string{}
		for _, in := range append(slices.Clone(joined), extra...) {
			c, err := st.columns(ctx, in)
			if err != nil {
				return "", err
			}
			cols[in] = c
			for _, n := range c {
				names[strings.ToLower(n)]++
			}
		}
		var sel []string
		for _, in := range prev {
			var fields []string
			for _, c := range cols[in] {
				flat := engine.Quote(st.alias[in] + "." + c)
				fields = append(fields, engine.Quote(c)+": "+flat)
				if names[strings.ToLower(c)] == 1 {
					sel = append(sel, flat+" AS "+engine.Quote(c))
				}
			}
			sel = append(sel, "{"+strings.Join(fields, ", ")+"} AS "+engine.Quote(st.alias[in]))
		}
		items = append(items, fmt.Sprintf("(SELECT %s FROM %s) AS %s", strings.Join(sel, ", "), stagesView(k), stagesAlias))
		items = append(items, engine.Quote(joined[len(joined)-1].view)+" AS "+engine.Quote(st.alias[joined[len(joined)-1]]))
	}
	for _, in := range extra {
		items = append(items, engine.Quote(in.view)+" AS "+engine.Quote(st.alias[in]))
	}
	return strings.Join(items, ", "), nil
}

// columns are the names of in's view's columns.
func (st *stages) columns(ctx context.Context, in *input) ([]string, error) {
	sch, err := st.pb.conn.QuerySchema(ctx, "SELECT * FROM "+engine.Quote(in.view))
	if err != nil {
		return nil, err
	}
	return fieldNames(sch), nil
}

// stageSQL is stage k's fragment over joined, the inputs it has joined:
// each input's columns, flat, named "<alias>.<column>", filtered by the
// conjuncts over them no earlier stage applied.
func (st *stages) stageSQL(ctx context.Context, k int, joined []*input) (string, *arrow.Schema, string, error) {
	var sel []string
	for _, in := range joined {
		cols, err := st.columns(ctx, in)
		if err != nil {
			return "", nil, "", err
		}
		a := st.alias[in]
		for _, c := range cols {
			sel = append(sel, engine.Quote(a)+"."+engine.Quote(c)+" AS "+engine.Quote(a+"."+c))
		}
	}
	where, err := st.conjunctsOver(ctx, joined)
	if err != nil {
		return "", nil, "", err
	}
	from, err := st.from(ctx, k, joined, nil)
	if err != nil {
		return "", nil, "", err
	}
	sql := "SELECT " + strings.Join(sel, ", ") + " FROM " + from
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	schema, err := st.pb.conn.QuerySchema(ctx, sql)
	if err != nil {
		return "", nil, fmt.Sprintf("stage %d does not bind: %v", k+1, err), nil
	}
	return sql, schema, "", nil
}

// conjunctsOver renders the conjuncts not yet applied whose columns all
// belong to inputs among joined (a conjunct without a column, or with a
// volatile function, is left to the query), and marks them applied.
func (st *stages) conjunctsOver(ctx context.Context, joined []*input) ([]string, error) {
	in := map[*input]bool{}
	for _, j := range joined {
		in[j] = true
	}
	var out []string
	for i, c := range st.conds {
		if st.used[i] || !st.over(c, in) {
			continue
		}
		sql, err := st.exprSQL(ctx, c)
		if err != nil {
			return nil, err
		}
		if sql == "" {
			continue
		}
		st.used[i] = true
		out = append(out, "("+sql+")")
	}
	return out, nil
}

// over tells whether every column of c belongs to an input in set, c
// having one at least and nothing volatile.
func (st *stages) over(c node, set map[*input]bool) bool {
	ins, ok := st.w.conjunctInputs(c)
	for _, in := range ins {
		ok = ok && set[in]
	}
	return ok && len(ins) > 0
}

// exprSQL is expression c as SQL text, "" when it does not deparse.
func (st *stages) exprSQL(ctx context.Context, c node) (string, error) {
	root, err := parseNode(ctx, st.pb.conn, "SELECT true")
	if err != nil {
		return "", err
	}
	root["select_list"] = []any{clone(c)}
	sql, err := st.pb.deparse(statement(root))
	if err != nil || !strings.HasPrefix(sql, "SELECT ") {
		return "", nil
	}
	return strings.TrimPrefix(sql, "SELECT "), nil
}

// standIn makes view an empty table of schema on the coordinator, for the
// next stage and the final to bind against.
func (st *stages) standIn(ctx context.Context, view string, schema *arrow.Schema) error {
	if err := st.pb.conn.Exec(ctx, "DROP TABLE IF EXISTS "+engine.Quote(view)); err != nil {
		return err
	}
	empty, err := array.NewRecordReader(schema, nil)
	if err != nil {
		return err
	}
	defer empty.Release()
	return st.pb.conn.LoadTable(ctx, view, empty)
}

// final is the last stage: the query over the previous stage's rows
// (left), the last input's partitions (right) and the small inputs.
func (st *stages) final(ctx context.Context, q *queryView, sj *shuffleJoin, left, right *plan.Exchange, joined []*input, on string) (*plan.Result, string, error) {
	pb := st.pb
	k := len(joined) - 2 // the stage whose rows left holds
	root, why, err := st.finalRoot(ctx, q, k, joined, sj.small)
	if err != nil || why != "" {
		return nil, why, err
	}
	in := []plan.Node{left, right}
	if len(sj.small) > 0 {
		bc, _ := pb.broadcast(sj.small)
		in = append(in, bc)
	}
	body := &plan.Join{Op: "join", On: on, In: in}
	label := fmt.Sprintf("shuffle stages (%d stages: %s, in %d partitions)", len(joined)-1, on, st.n)
	part := &plan.Fragment{Role: "partition join", Partitions: st.n, Place: plan.PlacePartitions, In: []plan.Node{body}}
	res := &plan.Result{Strategy: plan.Shuffle}
	if selectScatterReason(q.root, q.aggs) == "" {
		sql, err := pb.deparse(statement(root))
		if err != nil {
			return nil, "the final stage does not deparse", nil
		}
		got, err := pb.conn.QuerySchema(ctx, sql)
		if err != nil || !sameSchema(got, pb.b.schema) {
			return nil, "the final stage does not bind to the query's schema", nil
		}
		part.SQL, part.Schema = sql, pb.b.schema
		res.Label = label + " row-wise"
		res.Endpoints = []*plan.Fragment{part}
	} else {
		tp, why := pb.split(root, q.aggs)
		if tp == nil {
			return nil, why, nil
		}
		ph, err := pb.phases(ctx, tp)
		if err != nil || ph == nil {
			return nil, "two-phase final does not bind to the query's schema", err
		}
		part.SQL, part.Schema = ph.partialSQL, ph.partialSchema
		part.In = []plan.Node{&plan.Aggregate{Phase: plan.Partial, Kind: tp.kind, Rows: tp.partialRows, Global: tp.global, In: body}}
		res.Label = label + " " + ph.kind
		res.Endpoints = []*plan.Fragment{pb.finalOver(part, tp, ph)}
	}
	if err := pb.streamOnce(ctx, part.SQL, []plan.Node{left, right}); err != nil {
		return nil, "", err
	}
	pb.note("strategy", "%s", res.Label)
	for _, s := range sj.small {
		pb.note("broadcast", "%s read in full by every partition of the last stage", s.ref)
	}
	return res, "", nil
}

// finalRoot is the query with its FROM replaced by stage k's rows, the
// last input and the small ones, and every join condition moved to its
// WHERE.
func (st *stages) finalRoot(ctx context.Context, q *queryView, k int, joined, small []*input) (node, string, error) {
	conds := whereConjuncts(q.root)
	for _, j := range joinsOf(q.From) {
		if j.Condition != nil {
			conds = append(conds, conjuncts(j.Condition)...)
		}
	}
	from, err := st.from(ctx, k, joined, small)
	if err != nil {
		return nil, "", err
	}
	text := "SELECT 1 FROM " + from
	if len(conds) > 0 {
		text += " WHERE " + strings.TrimSuffix(strings.Repeat("true AND ", len(conds)), " AND ")
	}
	tmpl, err := parseNode(ctx, st.pb.conn, text)
	if err != nil {
		return nil, "", err
	}
	root := clone(q.root)
	root["from_table"] = tmpl["from_table"]
	switch len(conds) {
	case 0:
	case 1:
		root["where_clause"] = clone(conds[0])
	default:
		w, _ := tmpl["where_clause"].(node)
		if str(w, "class") != "CONJUNCTION" || len(anyList(w["children"])) != len(conds) {
			return nil, "the final stage's conditions do not rewrite", nil
		}
		kids := make([]any, len(conds))
		for i, c := range conds {
			kids[i] = clone(c)
		}
		w["children"] = kids
		root["where_clause"] = w
	}
	return root, "", nil
}
