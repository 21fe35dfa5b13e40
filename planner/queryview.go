package planner

// queryView is the typed view of a bound query that the rules read: the
// parts of DuckDB's JSON AST their guards and choices look at, decoded
// once (viewOf) instead of each rule reading the map. root keeps the AST
// itself for the rewrites that build fragments' SQL from it.
type queryView struct {
	// Type is the query node's type: SELECT_NODE, SET_OPERATION_NODE, …;
	// "" without a query node.
	Type string
	// From is a SELECT's FROM; the zero tableRef (Type "") otherwise.
	From *tableRef
	// SetOp and All are a set operation's kind (UNION, INTERSECT, EXCEPT)
	// and whether it keeps duplicates.
	SetOp string
	All   bool
	// CTEs counts the common table expressions the node defines.
	CTEs int

	root node
	aggs map[string]bool
	// tables is how many inputs the query reads.
	tables int
	// subquery: a subquery anywhere in the query (hasSubquery).
	subquery bool
	// scatter is why the query is not row-wise over its FROM
	// (selectScatterReason), "" when it is.
	scatter string
	// why is why the query gathers, as the rules that came closest to
	// applying say: gather's reason.
	why string
}

// tableRef is a FROM item: a base table, a join of two, a subquery, ….
type tableRef struct {
	// Type is BASE_TABLE, JOIN, SUBQUERY, TABLE_FUNCTION, ….
	Type string
	// Table and Alias name a base table: its view and the query's alias.
	Table, Alias string
	// JoinType (INNER, LEFT, …) and RefType (REGULAR, CROSS, …) of a join,
	// its sides and its condition (nil for a cross join).
	JoinType, RefType string
	Left, Right       *tableRef
	Condition         node
	// Using are a join's USING columns; Renamed a table's column aliases.
	Using, Renamed int
	// Sampled: a TABLESAMPLE on the table.
	Sampled bool

	raw node
}

// viewOf decodes root, a query node of tables inputs.
func viewOf(root node, aggs map[string]bool, tables int) *queryView {
	q := &queryView{root: root, aggs: aggs, tables: tables, From: &tableRef{}, why: "no query node"}
	if root == nil {
		return q
	}
	q.Type = str(root, "type")
	q.SetOp, _ = root["setop_type"].(string)
	q.All, _ = root["setop_all"].(bool)
	if m, _ := root["cte_map"].(node); m != nil {
		q.CTEs = len(anyList(m["map"]))
	}
	if from, _ := root["from_table"].(node); from != nil {
		q.From = fromRef(from)
	}
	q.subquery = hasSubquery(root)
	q.scatter = selectScatterReason(root, aggs)
	q.why = q.scatter
	return q
}

// refOf decodes a FROM item and the items under it.
func fromRef(n node) *tableRef {
	if n == nil {
		return nil
	}
	r := &tableRef{Type: str(n, "type"), Table: str(n, "table_name"), Alias: str(n, "alias"),
		JoinType: str(n, "join_type"), RefType: str(n, "ref_type"), Sampled: n["sample"] != nil,
		Using: len(anyList(n["using_columns"])), Renamed: len(anyList(n["column_name_alias"])), raw: n}
	r.Condition, _ = n["condition"].(node)
	if r.Type == "JOIN" {
		r.Left = fromRef(asNode(n["left"]))
		r.Right = fromRef(asNode(n["right"]))
	}
	return r
}

// leaves are the base tables (and other non-join items) under r, leftmost
// first.
func (r *tableRef) leaves() []*tableRef {
	if r == nil {
		return nil
	}
	if r.Type != "JOIN" {
		return []*tableRef{r}
	}
	return append(r.Left.leaves(), r.Right.leaves()...)
}

// inner tells whether every join under r is an inner or cross join.
func (r *tableRef) inner() bool {
	if r == nil || r.Type != "JOIN" {
		return true
	}
	return r.JoinType == "INNER" && (r.RefType == "REGULAR" || r.RefType == "CROSS") && r.Left.inner() && r.Right.inner()
}
