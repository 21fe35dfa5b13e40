package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner/plan"
)

// Shuffled (repartitioned) joins.
//
// A join of two inputs larger than BroadcastBytes runs as N partitioned
// fragments, one per live worker (at most ShufflePartitions). Each scan
// group of both large inputs is a producer, run once where the group's
// files are: it reads the group, computes `hash(<key>) % N` of each row
// (lower.go's hashPartition) and streams partition j to fragment j
// (worker/exchange.go). Fragment j pulls its partition of every producer,
// scanning them as they arrive (a view read once, streamed), reads the
// small inputs in full (broadcast) and runs the query over them. Rows
// whose keys are equal hash alike, so fragment j sees every match of its
// rows, and for every join type: a row without a match in its partition
// has none anywhere.
//
// A row-wise query over the join is the union of the fragments: each is
// an endpoint. An aggregate, top-n, limit or distinct runs its partial
// step (planAggregate, planRowwise) in each fragment and the final over
// them, the fragments being the final's children.
//
// The keys come from an equality (= or IS NOT DISTINCT FROM) between a
// column of each large input, in the ON of the join that meets them or
// at the top of WHERE. Both keys are cast to one type before hashing
// (any two integer types to BIGINT or HUGEINT; other types only when
// equal), so equal values hash equally; NULL keys all land in one
// partition. Small inputs must not be on the preserved side of an outer
// join whose other side is partitioned (their unmatched rows would come
// out of every fragment), and each large input must be read once, by
// the join, so no subquery or CTE sees a part of it.

// shuffleJoin is what a shuffle partitions: a join's two large inputs
// and their keys, cast to hash alike (or one input and its key, for a
// grouped query), and the inputs every partition reads in full.
type shuffleJoin struct {
	sides []shuffleSide
	small []*input
	// setOp is the set operation ("intersect", …) whose branches the
	// sides are; "" for a join.
	setOp string
}

type shuffleSide struct {
	in   *input
	col  string // the key column, as the input's schema names it
	hash string // the expression the partition children hash
	// where are conjuncts of the query's WHERE over this input alone,
	// which its partition children apply before shipping rows
	// (pushedWhere); the query applies them again.
	where []node
}

// shuffle plans root as a shuffled join when its FROM joins two large
// inputs on a key and the statistics favour it. It returns why not when
// it does not.
func (pb *planBuilder) shuffle(ctx context.Context, root node, aggs map[string]bool) (*plan.Result, string, error) {
	if len(pb.workers) < 2 {
		return nil, "one worker", nil
	}
	sj, why := pb.shuffleable(ctx, root)
	if sj == nil {
		return nil, why, nil
	}
	a, b := sj.sides[0].in, sj.sides[1].in
	if b.bytes < a.bytes {
		a, b = b, a
	}
	if limit := pb.p.opts.ShuffleBytes; limit >= 0 && a.bytes < limit {
		over, ok := pb.overShare(ctx, a)
		if !ok {
			return nil, fmt.Sprintf("smaller side %s is %d bytes, below the shuffle size %d", a.ref, a.bytes, limit), nil
		}
		pb.note("cost", "shuffled below the shuffle size %d: %s", limit, over)
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, "", err
	}
	if why := pb.shuffleKeys(ctx, sj); why != "" {
		return nil, why, nil
	}
	n := min(len(pb.workers), pb.p.opts.ShufflePartitions)
	if selectScatterReason(root, aggs) == "" {
		res, err := pb.shufflePlan(ctx, sj, n, pb.noteShuffle(ctx, sj, n, "row-wise"), nil, nil)
		return res, "", err
	}
	tp, why := pb.split(root, aggs)
	if tp == nil {
		return nil, why, nil
	}
	ph, err := pb.phases(ctx, tp)
	if err != nil || ph == nil {
		return nil, "two-phase final does not bind to the query's schema", err
	}
	res, err := pb.shufflePlan(ctx, sj, n, pb.noteShuffle(ctx, sj, n, ph.kind), tp, ph)
	return res, "", err
}

// shuffleable finds the join's two large inputs and their keys.
func (pb *planBuilder) shuffleable(ctx context.Context, root node) (*shuffleJoin, string) {
	if str(root, "type") != "SELECT_NODE" {
		return nil, "not a select"
	}
	if hasCTE(root) {
		return nil, "common table expression"
	}
	if hasSubquery(root) {
		return nil, "subquery"
	}
	byView := map[string]*input{}
	large := map[*input]bool{}
	for _, in := range pb.b.inputs {
		byView[in.view] = in
		if in.meta != "" {
			return nil, "metadata table"
		}
		if pb.large(ctx, in) {
			if in.refs != 1 {
				return nil, fmt.Sprintf("large table %s is read %d times", in.ref, in.refs)
			}
			large[in] = true
		}
	}
	if len(large) != 2 {
		return nil, fmt.Sprintf("%d large tables, a shuffle joins 2", len(large))
	}
	from, _ := root["from_table"].(node)
	w := &joinWalk{pb: pb, ctx: ctx, byView: byView, large: large, where: whereConjuncts(root)}
	walk(from, func(n node) bool {
		if str(n, "type") == "BASE_TABLE" && byView[str(n, "table_name")] != nil {
			w.leaves = append(w.leaves, byView[str(n, "table_name")])
		}
		return true
	})
	if _, ok := w.visit(from); !ok {
		return nil, w.why
	}
	if w.found == nil {
		return nil, "no equality between the large tables' columns"
	}
	for _, in := range pb.b.inputs {
		if !large[in] {
			w.found.small = append(w.found.small, in)
		}
	}
	pushedWhere(w, root, w.found)
	return w.found, ""
}

// joinWalk checks a join tree bottom up: each subtree is partitioned
// (holds large inputs) or replicated (only small ones).
type joinWalk struct {
	pb     *planBuilder
	ctx    context.Context
	byView map[string]*input
	large  map[*input]bool
	where  []node
	leaves []*input // every input of the FROM, for unqualified columns
	found  *shuffleJoin
	why    string
}

func (w *joinWalk) fail(format string, args ...any) ([]*input, bool) {
	if w.why == "" {
		w.why = fmt.Sprintf(format, args...)
	}
	return nil, false
}

// visit returns the large inputs under n.
func (w *joinWalk) visit(n node) ([]*input, bool) {
	switch str(n, "type") {
	case "BASE_TABLE":
		return w.table(n)
	case "JOIN":
	default:
		return w.fail("join of %s", strings.ToLower(str(n, "type")))
	}
	jt, rt := str(n, "join_type"), str(n, "ref_type")
	if rt != "REGULAR" && rt != "CROSS" {
		return w.fail("%s join", strings.ToLower(rt))
	}
	cond, _ := n["condition"].(node)
	if cond != nil && exprReason(cond, nil) != "" {
		return w.fail("join condition with a subquery")
	}
	l, _ := n["left"].(node)
	r, _ := n["right"].(node)
	ll, lok := w.visit(l)
	rl, rok := w.visit(r)
	if !lok || !rok {
		return nil, false
	}
	switch {
	case len(ll) == 0 && len(rl) == 0:
		return nil, true
	case len(ll) > 0 && len(rl) > 0:
		return w.largeJoin(n, jt, cond, ll, rl)
	}
	return w.partitionedJoin(jt, ll, rl)
}

// table is a base table of the join tree: itself when it is one of the
// large tables, nothing when it is replicated.
func (w *joinWalk) table(n node) ([]*input, bool) {
	in := w.byView[str(n, "table_name")]
	if in == nil || n["sample"] != nil {
		return w.fail("join of something other than tables")
	}
	if len(anyList(n["column_name_alias"])) > 0 && w.large[in] {
		return w.fail("large table with renamed columns")
	}
	if w.large[in] {
		return []*input{in}, true
	}
	return nil, true
}

// largeJoin is a join of the two large tables (ll and rl, one each): its
// kind must allow a hash partitioning and its conditions (with the
// WHERE's) give the keys.
func (w *joinWalk) largeJoin(n node, jt string, cond node, ll, rl []*input) ([]*input, bool) {
	if len(ll) != 1 || len(rl) != 1 || len(anyList(n["using_columns"])) > 0 {
		return w.fail("join of large tables with USING")
	}
	switch jt {
	case "INNER", "LEFT", "RIGHT", "OUTER", "FULL", "SEMI", "ANTI":
	default:
		return w.fail("%s join of the large tables", strings.ToLower(jt))
	}
	conds := slices.Clone(w.where)
	if cond != nil {
		conds = append(conds, conjuncts(cond)...)
	}
	if !w.keys(conds, ll[0], rl[0]) {
		return w.fail("no equality between %s and %s", ll[0].ref, rl[0].ref)
	}
	return append(ll, rl...), true
}

// partitionedJoin is a join with one side partitioned, the other
// replicated: the replicated side's rows must not be preserved.
func (w *joinWalk) partitionedJoin(jt string, ll, rl []*input) ([]*input, bool) {
	part := "left"
	if len(ll) == 0 {
		part = "right"
	}
	switch {
	case jt == "INNER":
	case (jt == "LEFT" || jt == "SEMI" || jt == "ANTI") && part == "left":
	case jt == "RIGHT" && part == "right":
	default:
		return w.fail("small table on the preserved side of a %s join", strings.ToLower(jt))
	}
	return append(ll, rl...), true
}

// whereConjuncts are the top-level conjuncts of root's WHERE.
func whereConjuncts(root node) []node {
	w, _ := root["where_clause"].(node)
	if w == nil {
		return nil
	}
	return conjuncts(w)
}

// hasCTE tells whether root defines common table expressions.
func hasCTE(root node) bool {
	m, _ := root["cte_map"].(node)
	return m != nil && len(anyList(m["map"])) > 0
}

// hasSubquery tells whether a subquery appears anywhere under n: it could
// read a large input, of which a fragment holds only a part.
func hasSubquery(n node) bool {
	found := false
	walk(n, func(x node) bool {
		if str(x, "class") == "SUBQUERY" || (isTableRef(x) && str(x, "type") == "SUBQUERY") {
			found = true
		}
		return !found
	})
	return found
}

// keys finds an equality between a column of a and one of b.
func (w *joinWalk) keys(conds []node, a, b *input) bool {
	for _, c := range conds {
		if str(c, "class") != "COMPARISON" || (str(c, "type") != "COMPARE_EQUAL" && str(c, "type") != "COMPARE_NOT_DISTINCT_FROM") {
			continue
		}
		l, _ := c["left"].(node)
		r, _ := c["right"].(node)
		lin, lcol := w.column(l)
		rin, rcol := w.column(r)
		if lin == b && rin == a {
			lin, rin, lcol, rcol = rin, lin, rcol, lcol
		}
		if lin == a && rin == b {
			w.found = &shuffleJoin{sides: []shuffleSide{{in: a, col: lcol}, {in: b, col: rcol}}}
			return true
		}
	}
	return false
}

// column resolves a column reference to its input and the column's name
// in the input's schema; nil when it is not a plain column of one input.
func (w *joinWalk) column(n node) (*input, string) {
	if str(n, "class") != "COLUMN_REF" {
		return nil, ""
	}
	var parts []string
	for _, p := range anyList(n["column_names"]) {
		s, _ := p.(string)
		parts = append(parts, s)
	}
	var cands []*input
	switch len(parts) {
	case 1:
		cands = w.leaves
	case 2:
		if in := w.pb.b.aliases[strings.ToLower(parts[0])]; in != nil {
			cands = []*input{in}
		}
	default:
		return nil, ""
	}
	var found *input
	name := ""
	for _, in := range cands {
		sch, err := inputSchema(w.ctx, in)
		if err != nil {
			return nil, ""
		}
		for _, f := range sch.Fields() {
			if strings.EqualFold(f.Name, parts[len(parts)-1]) {
				if found != nil && found != in {
					return nil, "" // ambiguous
				}
				found, name = in, f.Name
			}
		}
	}
	return found, name
}

// shuffleKeys sets the hash expressions of both sides, cast to one type,
// or says why the keys cannot hash alike.
func (pb *planBuilder) shuffleKeys(ctx context.Context, sj *shuffleJoin) string {
	a, b := &sj.sides[0], &sj.sides[1]
	ta, tb := pb.keyType(ctx, a.in, a.col), pb.keyType(ctx, b.in, b.col)
	if ta == "" || tb == "" {
		return "key type unknown"
	}
	var ok bool
	if a.hash, ok = hashKey(engine.Quote(a.col), ta, tb); !ok {
		return fmt.Sprintf("keys of types %s and %s do not hash alike", ta, tb)
	}
	b.hash, _ = hashKey(engine.Quote(b.col), tb, ta)
	return ""
}

// hashType is the type both keys are cast to before hashing: DuckDB's
// hash depends on the type, and an equality compares across integer
// types.
func hashType(a, b string) (string, bool) {
	if a == b {
		return a, true
	}
	rank := map[string]int{"TINYINT": 1, "SMALLINT": 1, "INTEGER": 1, "BIGINT": 1, "UTINYINT": 1, "USMALLINT": 1, "UINTEGER": 1, "UBIGINT": 2, "HUGEINT": 2}
	ra, rb := rank[a], rank[b]
	switch {
	case ra == 0 || rb == 0:
		return "", false
	case ra == 2 || rb == 2:
		return "HUGEINT", true
	}
	return "BIGINT", true
}

// noteShuffle explains the decision with the statistics it was made on;
// it returns the strategy as the plan's label.
func (pb *planBuilder) noteShuffle(ctx context.Context, sj *shuffleJoin, n int, kind string) string {
	a, b := sj.sides[0], sj.sides[1]
	label := fmt.Sprintf("shuffle %s (hash join of %s and %s on %s = %s in %d partitions)", kind, a.in.ref, b.in.ref, a.col, b.col, n)
	pb.note("strategy", "%s", label)
	pb.note("estimate", "%s: %d bytes, %s; %s: %d bytes, %s; broadcast up to %d bytes, shuffle from %d bytes",
		a.in.ref, a.in.bytes, pb.p.rowsNote(ctx, a.in), b.in.ref, b.in.bytes, pb.p.rowsNote(ctx, b.in),
		pb.p.opts.BroadcastBytes, max(pb.p.opts.ShuffleBytes, 0))
	pb.notePartitions(sj, n)
	return label
}

// notePartitions lists what each partition reads.
func (pb *planBuilder) notePartitions(sj *shuffleJoin, n int) {
	for _, s := range sj.small {
		pb.note("broadcast", "%s read in full by every partition", s.ref)
	}
	for _, s := range sj.sides {
		pb.note("partition", "%s: %s", s.in.ref, hashPartition("SELECT * FROM "+engine.Quote(s.in.view), []string{s.hash}, n))
	}
}

// shufflePlan is sj over n partitions: a fragment of n instances,
// instance j reading partition j of every partitioned input through a
// hash exchange (children over every group, run where the group's files
// are) and the small inputs whole. Row-wise (tp nil) its instances are the
// endpoints; else each runs tp's partial step, with one final over them.
func (pb *planBuilder) shufflePlan(ctx context.Context, sj *shuffleJoin, n int, label string, tp *twoPhase, ph *phases) (*plan.Result, error) {
	op := "join"
	if sj.setOp != "" {
		op = sj.setOp
	}
	var in []plan.Node
	var on []string
	for _, s := range sj.sides {
		sql, viewSchema, err := pb.producerSQL(ctx, s)
		if err != nil {
			return nil, err
		}
		sc := pb.scan(s.in, false)
		prod := &plan.Fragment{Role: "partition", SQL: sql, Schema: viewSchema, Per: sc, Place: plan.PlaceGroups, In: []plan.Node{sc}}
		// The fragment streams a view it reads once (the same table in
		// both branches of a set operation is read twice).
		in = append(in, &plan.Exchange{Kind: plan.ExchangeHash, View: s.in.view, Keys: [][]string{{s.hash}}, Partitions: n,
			Stream: s.in.refs == 1, In: []plan.Node{prod}})
		on = append(on, s.in.ref.String()+"."+s.col)
	}
	if len(sj.small) > 0 {
		bc, _ := pb.broadcast(sj.small)
		in = append(in, bc)
	}
	var body plan.Node = in[0]
	if len(sj.sides) > 1 || len(sj.small) > 0 {
		body = &plan.Join{Op: op, On: strings.Join(on, " = "), In: in}
	}
	part := &plan.Fragment{Role: "partition join", SQL: pb.b.sql, Schema: pb.b.schema, Partitions: n, Place: plan.PlacePartitions, In: []plan.Node{body}}
	if len(sj.sides) == 1 {
		part.Role = "partition"
	}
	res := &plan.Result{Strategy: plan.Shuffle, Label: label}
	if tp == nil {
		res.Endpoints = []*plan.Fragment{part}
	} else {
		part.SQL, part.Schema = ph.partialSQL, ph.partialSchema
		part.In = []plan.Node{&plan.Aggregate{Phase: plan.Partial, Kind: tp.kind, Rows: tp.partialRows, Global: tp.global, In: body}}
		res.Endpoints = []*plan.Fragment{pb.finalOver(part, tp, ph)}
	}
	if err := pb.streamOnce(ctx, part.SQL, in); err != nil {
		return nil, err
	}
	return res, nil
}

// streamOnce turns Stream off on the hash exchanges among nodes whose
// view DuckDB's plan of sql over the stand-ins scans more than once: its
// optimizer may read a table the query names once twice (a window
// aggregate without ORDER BY becomes a join of the table with its
// grouped aggregate), and a streamed view can be scanned once. Over
// empty stand-ins DuckDB may plan no scan at all; the worker loads the
// views and runs again should its plan scan one twice after all.
func (pb *planBuilder) streamOnce(ctx context.Context, sql string, nodes []plan.Node) error {
	scans, err := planScans(ctx, pb.conn, sql)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if ex, ok := n.(*plan.Exchange); ok && ex.Kind == plan.ExchangeHash && ex.Stream && scans[ex.View] > 1 {
			ex.Stream = false
			pb.note("exchange", "%s is loaded before the query runs: DuckDB's plan scans it %d times", ex.View, scans[ex.View])
		}
	}
	return nil
}

// planScans counts the scans of each table in DuckDB's physical plan of
// sql.
func planScans(ctx context.Context, conn *engine.Conn, sql string) (map[string]int, error) {
	rdr, err := conn.Query(ctx, "EXPLAIN (FORMAT json) "+sql, engine.QueryOptions{})
	if err != nil {
		return nil, fmt.Errorf("plan of a partition fragment: %w", err)
	}
	defer rdr.Release()
	type op struct {
		Children  []*op `json:"children"`
		ExtraInfo struct {
			Table string `json:"Table"`
		} `json:"extra_info"`
	}
	scans := map[string]int{}
	var count func(ops []*op)
	count = func(ops []*op) {
		for _, o := range ops {
			if t := o.ExtraInfo.Table; t != "" {
				scans[t[strings.LastIndexByte(t, '.')+1:]]++
			}
			count(o.Children)
		}
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		col, ok := rec.Column(int(rec.NumCols()) - 1).(*array.String)
		if !ok {
			return nil, fmt.Errorf("plan of a partition fragment: EXPLAIN column of type %s", rec.Column(int(rec.NumCols())-1).DataType())
		}
		for i := range col.Len() {
			var ops []*op
			if err := json.Unmarshal([]byte(col.Value(i)), &ops); err != nil {
				return nil, fmt.Errorf("plan of a partition fragment: %w", err)
			}
			count(ops)
		}
	}
	return scans, rdr.Err()
}

// partitionPlace puts fragment j on worker j, the next as fallback.
func (pb *planBuilder) partitionPlace(j int) place {
	return place{owner: j % len(pb.workers), fallback: (j + 1) % len(pb.workers)}
}

// pushedWhere sets each side's where: the top-level WHERE conjuncts whose
// columns all belong to that side's input. Only for inner joins (and a
// single table): filtering a side of an outer join before it joins could
// change which rows are null-extended. A conjunct without columns, with a
// parameter or a volatile function stays in the query alone.
func pushedWhere(w *joinWalk, root node, sj *shuffleJoin) {
	from, _ := root["from_table"].(node)
	if !innerJoins(from) {
		return
	}
	for _, c := range whereConjuncts(root) {
		ins, ok := w.conjunctInputs(c)
		if !ok || len(ins) != 1 {
			continue
		}
		owner := ins[0]
		for i := range sj.sides {
			if sj.sides[i].in == owner {
				sj.sides[i].where = append(sj.sides[i].where, c)
			}
		}
	}
}

// conjunctInputs are the inputs whose columns c reads, each once; ok is
// false when c has a parameter, a subquery, a volatile function or a
// column of no one input — a conjunct that must stay in the query alone.
func (w *joinWalk) conjunctInputs(c node) (ins []*input, ok bool) {
	ok = true
	walk(c, func(n node) bool {
		switch {
		case !ok:
		case str(n, "class") == "PARAMETER" || str(n, "class") == "SUBQUERY":
			ok = false
		case str(n, "class") == "FUNCTION" && volatile[strings.ToLower(str(n, "function_name"))]:
			ok = false
		case str(n, "class") == "COLUMN_REF":
			in, _ := w.column(n)
			if in == nil {
				ok = false
			} else if !slices.Contains(ins, in) {
				ins = append(ins, in)
			}
		}
		return ok
	})
	return ins, ok
}

// volatile are functions whose value changes between evaluations.
var volatile = map[string]bool{"random": true, "uuid": true, "gen_random_uuid": true, "nextval": true, "currval": true, "setseed": true}

// producerSQL is what each group of a side's input sends to the
// partitions: its rows, filtered by the side's pushed conjuncts under the
// alias the query gives the input, so their column references resolve as
// in the query — and the schema of its rows, the input's.
func (pb *planBuilder) producerSQL(ctx context.Context, s shuffleSide) (string, *arrow.Schema, error) {
	plain := "SELECT * FROM " + engine.Quote(s.in.view)
	want, err := pb.conn.QuerySchema(ctx, plain)
	if err != nil || len(s.where) == 0 {
		return plain, want, err
	}
	alias := ""
	walk(pb.b.ast.root, func(n node) bool {
		if alias == "" && isTableRef(n) && str(n, "type") == "BASE_TABLE" && str(n, "table_name") == s.in.view {
			alias = str(n, "alias")
		}
		return alias == ""
	})
	if alias == "" {
		alias = s.in.view
	}
	// A template whose WHERE is one constant, or a conjunction of two,
	// takes the conjuncts in place of its constants.
	cond := "true"
	if len(s.where) > 1 {
		cond = "true AND true"
	}
	root, err := parseNode(ctx, pb.conn, plain+" AS "+engine.Quote(alias)+" WHERE "+cond)
	if err != nil {
		return "", nil, err
	}
	if len(s.where) == 1 {
		root["where_clause"] = clone(s.where[0])
	} else {
		w, _ := root["where_clause"].(node)
		if str(w, "class") != "CONJUNCTION" {
			return plain, want, nil
		}
		kids := make([]any, len(s.where))
		for i, c := range s.where {
			kids[i] = clone(c)
		}
		w["children"] = kids
	}
	sql, err := pb.deparse(statement(root))
	if err != nil {
		return "", nil, err
	}
	// The filtered rows keep the input's columns, names and types; if
	// not, the side ships its rows unfiltered.
	if got, err := pb.conn.QuerySchema(ctx, sql); err != nil || !sameSchema(got, want) {
		return plain, want, nil
	}
	return sql, want, nil
}
