package planner

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
)

// Bound parameters.
//
// A statement's `?` (or `$n`) placeholders take the trailing args of Plan,
// Bind and statement.Executor.Exec, in order. An arg is a Go value (nil,
// bool, any int or uint, float32, float64, string, []byte, time.Time) or an arrow
// scalar.Scalar, which carries its exact type (date32, time64, timestamps
// with or without a zone, decimal128, binary, uuid, …); flightsql hands
// each row of a client's parameter batch over as scalars.
//
// Queries: the PARAMETER nodes of DuckDB's JSON AST are replaced by
// CONSTANT nodes wrapped in a CAST to the value's DuckDB type, and DuckDB
// itself prints the query again (json_deserialize_sql): no value is ever
// spliced into SQL text by icefloe. Updates (INSERT … VALUES): the values
// are passed to DuckDB's own prepared-statement binding.

// paramKinds are DuckDB's types of a statement's parameters, in order.
type paramKinds = []engine.ParamType

// paramValue is one bound value, normalised.
type paramValue struct {
	null   bool
	duck   node // DuckDB LogicalType JSON of the value (the CAST target)
	child  node // the CONSTANT's Value JSON: same type, or VARCHAR text cast to duck
	driver any  // the value for DuckDB's database/sql binding
}

func duckType(id string) node { return node{"id": id, "type_info": nil} }

func decimalType(width, scale int32) node {
	return node{"id": "DECIMAL", "type_info": node{
		"type": "DECIMAL_TYPE_INFO", "alias": "", "extension_info": nil, "width": width, "scale": scale,
	}}
}

func constValue(t node, v any) node { return node{"type": t, "is_null": false, "value": v} }

// textParam is a value DuckDB receives as text and casts to t.
func textParam(t node, text string) paramValue {
	return paramValue{duck: t, child: constValue(duckType("VARCHAR"), text), driver: text}
}

func typedParam(t node, v any, drv any) paramValue {
	return paramValue{duck: t, child: constValue(t, v), driver: drv}
}

// toParam normalises one argument.
func toParam(arg any) (paramValue, error) {
	switch v := arg.(type) {
	case nil:
		return paramValue{null: true, duck: duckType("NULL")}, nil
	case scalar.Scalar:
		return scalarParam(v)
	case bool:
		return typedParam(duckType("BOOLEAN"), v, v), nil
	case int8:
		return typedParam(duckType("TINYINT"), v, v), nil
	case int16:
		return typedParam(duckType("SMALLINT"), v, v), nil
	case int32:
		return typedParam(duckType("INTEGER"), v, v), nil
	case int:
		return typedParam(duckType("BIGINT"), int64(v), int64(v)), nil
	case int64:
		return typedParam(duckType("BIGINT"), v, v), nil
	case uint8:
		return typedParam(duckType("UTINYINT"), v, v), nil
	case uint16:
		return typedParam(duckType("USMALLINT"), v, v), nil
	case uint32:
		return typedParam(duckType("UINTEGER"), v, v), nil
	case uint64:
		return typedParam(duckType("UBIGINT"), v, v), nil
	case uint:
		return typedParam(duckType("UBIGINT"), uint64(v), uint64(v)), nil
	case float32:
		if textFloat(float64(v)) {
			return textParam(duckType("FLOAT"), strconv.FormatFloat(float64(v), 'g', -1, 32)), nil
		}
		return typedParam(duckType("FLOAT"), floatJSON{float64(v), 32}, v), nil
	case float64:
		if textFloat(v) {
			return textParam(duckType("DOUBLE"), strconv.FormatFloat(v, 'g', -1, 64)), nil
		}
		return typedParam(duckType("DOUBLE"), floatJSON{v, 64}, v), nil
	case string:
		return typedParam(duckType("VARCHAR"), v, v), nil
	case []byte:
		return blobParam(v), nil
	case time.Time:
		return typedParam(duckType("TIMESTAMP WITH TIME ZONE"), v.UnixMicro(), v), nil
	}
	return paramValue{}, fmt.Errorf("%w: parameter of Go type %T", ErrUnsupported, arg)
}

// textFloat tells the floats a constant cannot carry, which go as text
// that DuckDB casts ('NaN', 'Infinity', '-0'): JSON has no number for NaN
// and the infinities, and DuckDB prints a -0.0 constant as -0.0, which
// it reads back as the decimal 0.0 negated, 0.
func textFloat(v float64) bool {
	return math.IsNaN(v) || math.IsInf(v, 0) || v == 0 && math.Signbit(v)
}

// floatJSON is the value of a FLOAT (bits 32) or DOUBLE (bits 64)
// constant as DuckDB's JSON deserializer takes it: a JSON number with a
// fraction or an exponent, which it reads as a double. Go's encoder
// writes a whole number without either (7.0 as 7, -0.0 as -0), which
// DuckDB reads as an integer and refuses for a DOUBLE value (and would
// lose the sign of -0.0, which goes as text: textFloat).
type floatJSON struct {
	v    float64
	bits int
}

func (f floatJSON) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, f.v, 'g', -1, f.bits)
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// blobParam sends bytes as DuckDB's escaped blob text ('\xAB…'::BLOB),
// which keeps every byte, NUL included.
func blobParam(b []byte) paramValue {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteString(`\x`)
		sb.WriteString(hex.EncodeToString([]byte{c}))
	}
	p := textParam(duckType("BLOB"), sb.String())
	p.driver = append([]byte(nil), b...)
	return p
}

// scalarParam normalises an Arrow scalar by its type.
func scalarParam(s scalar.Scalar) (paramValue, error) {
	if !s.IsValid() {
		p := paramValue{null: true, duck: duckType("NULL")}
		if t, err := nullType(s.DataType()); err == nil {
			p.duck = t
		}
		return p, nil
	}
	switch v := s.(type) {
	case *scalar.Boolean:
		return toParam(v.Value)
	case *scalar.Int8:
		return toParam(v.Value)
	case *scalar.Int16:
		return toParam(v.Value)
	case *scalar.Int32:
		return toParam(v.Value)
	case *scalar.Int64:
		return toParam(v.Value)
	case *scalar.Uint8:
		return toParam(v.Value)
	case *scalar.Uint16:
		return toParam(v.Value)
	case *scalar.Uint32:
		return toParam(v.Value)
	case *scalar.Uint64:
		return toParam(v.Value)
	case *scalar.Float32:
		return toParam(v.Value)
	case *scalar.Float64:
		return toParam(v.Value)
	case *scalar.String:
		return toParam(v.String())
	case *scalar.LargeString:
		return toParam(v.String())
	case *scalar.Binary:
		return blobParam(v.Data()), nil
	case *scalar.LargeBinary:
		return blobParam(v.Data()), nil
	case *scalar.FixedSizeBinary:
		return blobParam(v.Data()), nil
	}
	if p, ok := temporalParam(s); ok {
		return p, nil
	}
	if p, ok, err := textualParam(s); ok {
		return p, err
	}
	return paramValue{}, fmt.Errorf("%w: parameter of Arrow type %s", ErrUnsupported, s.DataType())
}

// temporalParam normalises a date, time or timestamp scalar; false for
// other types.
func temporalParam(s scalar.Scalar) (paramValue, bool) {
	switch v := s.(type) {
	case *scalar.Date32:
		d := int32(v.Value)
		return typedParam(duckType("DATE"), d, time.Unix(int64(d)*86400, 0).UTC()), true
	case *scalar.Date64:
		d := int32(int64(v.Value) / 86400000)
		return typedParam(duckType("DATE"), d, time.Unix(int64(d)*86400, 0).UTC()), true
	case *scalar.Time32:
		unit := v.Type.(*arrow.Time32Type).Unit
		return timeParam(int64(v.Value) * int64(unit.Multiplier()) / 1000), true
	case *scalar.Time64:
		unit := v.Type.(*arrow.Time64Type).Unit
		return timeParam(int64(v.Value) * int64(unit.Multiplier()) / 1000), true
	case *scalar.Timestamp:
		tt := v.Type.(*arrow.TimestampType)
		t := v.Value.ToTime(tt.Unit)
		id := "TIMESTAMP"
		if tt.TimeZone != "" {
			id = "TIMESTAMP WITH TIME ZONE"
		}
		if tt.Unit == arrow.Nanosecond {
			if tt.TimeZone == "" {
				return typedParam(duckType("TIMESTAMP_NS"), int64(v.Value), t), true
			}
		}
		return typedParam(duckType(id), t.UnixMicro(), t), true
	}
	return paramValue{}, false
}

// textualParam normalises a scalar DuckDB takes as typed text (a decimal,
// a UUID); false for other types.
func textualParam(s scalar.Scalar) (paramValue, bool, error) {
	switch v := s.(type) {
	case *scalar.Decimal128:
		dt := v.Type.(*arrow.Decimal128Type)
		text := v.Value.ToString(dt.Scale)
		return textParam(decimalType(dt.Precision, dt.Scale), text), true, nil
	case *scalar.Extension:
		if _, ok := v.Type.(*extensions.UUIDType); ok {
			if fb, ok := v.Value.(*scalar.FixedSizeBinary); ok && len(fb.Data()) == 16 {
				u, err := uuidText(fb.Data())
				if err != nil {
					return paramValue{}, true, err
				}
				return textParam(duckType("UUID"), u), true, nil
			}
		}
	}
	return paramValue{}, false, nil
}

func uuidText(b []byte) (string, error) {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return "", errors.New("planner: uuid is not 16 bytes")
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// timeParam is a time of day in microseconds.
func timeParam(us int64) paramValue {
	d := time.Duration(us) * time.Microsecond
	return typedParam(duckType("TIME"), us, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(d))
}

// nullType is the DuckDB type a typed NULL of t is cast to.
func nullType(t arrow.DataType) (node, error) {
	switch t.ID() {
	case arrow.BOOL:
		return duckType("BOOLEAN"), nil
	case arrow.INT8:
		return duckType("TINYINT"), nil
	case arrow.INT16:
		return duckType("SMALLINT"), nil
	case arrow.INT32:
		return duckType("INTEGER"), nil
	case arrow.INT64:
		return duckType("BIGINT"), nil
	case arrow.UINT8:
		return duckType("UTINYINT"), nil
	case arrow.UINT16:
		return duckType("USMALLINT"), nil
	case arrow.UINT32:
		return duckType("UINTEGER"), nil
	case arrow.UINT64:
		return duckType("UBIGINT"), nil
	case arrow.FLOAT32:
		return duckType("FLOAT"), nil
	case arrow.FLOAT64:
		return duckType("DOUBLE"), nil
	case arrow.STRING, arrow.LARGE_STRING:
		return duckType("VARCHAR"), nil
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return duckType("BLOB"), nil
	case arrow.DATE32, arrow.DATE64:
		return duckType("DATE"), nil
	case arrow.TIME32, arrow.TIME64:
		return duckType("TIME"), nil
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone != "" {
			return duckType("TIMESTAMP WITH TIME ZONE"), nil
		}
		return duckType("TIMESTAMP"), nil
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return decimalType(d.Precision, d.Scale), nil
	}
	return nil, fmt.Errorf("%w: NULL parameter of Arrow type %s", ErrUnsupported, t)
}

// constantNode is the AST expression for p: CAST(constant AS type), or
// the bare constant for NULL and text.
func (p paramValue) constantNode() node {
	const noLocation = uint64(math.MaxUint64)
	var value node
	if p.null {
		value = node{"type": duckType("NULL"), "is_null": true}
	} else {
		value = p.child
	}
	constant := node{"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": noLocation, "value": value}
	// An untyped NULL stays so, and text stays a string literal, which DuckDB
	// casts to whatever the parameter's place needs (UUID, a list, a
	// struct, a map: the types whose parameters bind as text), as it does
	// for a prepared statement's VARCHAR value; CAST(… AS VARCHAR) would
	// make BETWEEN and IN refuse to compare them.
	if id, _ := p.duck["id"].(string); id == "NULL" || id == "VARCHAR" && !p.null {
		return constant
	}
	return node{
		"class": "CAST", "type": "OPERATOR_CAST", "alias": "", "query_location": noLocation,
		"child": constant, "cast_type": p.duck, "try_cast": false,
	}
}

// paramNodes returns the PARAMETER nodes of the tree with their 1-based
// positions. Named parameters are refused.
func paramNodes(root node) (map[int][]node, int, error) {
	out := map[int][]node{}
	n := 0
	var err error
	walk(root, func(x node) bool {
		if err != nil {
			return false
		}
		if str(x, "class") != "PARAMETER" {
			return true
		}
		i, aerr := strconv.Atoi(str(x, "identifier"))
		if aerr != nil || i < 1 {
			err = fmt.Errorf("%w: named parameter $%s; use ? or $1, $2, …", ErrUnsupported, str(x, "identifier"))
			return false
		}
		out[i] = append(out[i], x)
		n = max(n, i)
		return false
	})
	return out, n, err
}

// replaceParam turns the PARAMETER node x into y in place, keeping x's
// alias (SELECT ? AS x names its column x).
func replaceParam(x, y node) {
	alias := str(x, "alias")
	replaceNode(x, y)
	if alias != "" {
		x["alias"] = alias
	}
}

// nameParamColumns gives every select-list expression of the AST (at
// any depth: subqueries, UNION branches, CTEs) that holds a parameter
// and has no alias the name DuckDB gives it, so that the name survives
// the parameters' substitution: DuckDB names such a column by the
// expression's text, with its parameters as $1, $2, … (SELECT ? + 1 is
// "($1 + 1)"), and with the values in place it would name it by their
// text instead (CAST(1 AS BIGINT)). The names are DuckDB's own
// printing of each expression (json_deserialize_sql), all in one query.
func nameParamColumns(ctx context.Context, conn *engine.Conn, ast *parsed) error {
	var unnamed []node
	walk(ast.root, func(x node) bool {
		if str(x, "type") != "SELECT_NODE" {
			return true
		}
		for _, it := range anyList(x["select_list"]) {
			e, _ := it.(node)
			if e == nil || str(e, "alias") != "" || str(e, "class") == "STAR" {
				continue
			}
			if _, n, _ := paramNodes(e); n > 0 {
				unnamed = append(unnamed, e)
			}
		}
		return true
	})
	if len(unnamed) == 0 {
		return nil
	}
	skeleton, err := conn.SerializeSQL(ctx, "SELECT NULL")
	if err != nil {
		return err
	}
	docs := make([]json.RawMessage, len(unnamed))
	for i, e := range unnamed {
		one, err := parseAST(skeleton)
		if err != nil {
			return err
		}
		sel, _ := one.root["node"].(node)
		if sel == nil {
			return fmt.Errorf("planner: no select node in %s", skeleton)
		}
		sel["select_list"] = []any{clone(e)}
		doc, err := one.document()
		if err != nil {
			return err
		}
		docs[i] = json.RawMessage(doc)
	}
	list, err := json.Marshal(docs)
	if err != nil {
		return err
	}
	rows, err := conn.DB().QueryContext(ctx, `SELECT json_deserialize_sql(d) FROM (
		SELECT unnest(l) AS d, generate_subscripts(l, 1) AS i FROM (SELECT from_json(?::VARCHAR, '["JSON"]') AS l)) ORDER BY i`, string(list))
	if err != nil {
		return fmt.Errorf("%w: name parameter columns: %v", ErrInvalid, err)
	}
	defer rows.Close()
	k := 0
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return err
		}
		name, ok := strings.CutPrefix(text, "SELECT ")
		if !ok || k >= len(unnamed) {
			return fmt.Errorf("planner: unexpected printing of a select item: %q", text)
		}
		unnamed[k]["alias"] = name
		k++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: name parameter columns: %v", ErrInvalid, err)
	}
	if k != len(unnamed) {
		return fmt.Errorf("planner: named %d of %d parameter columns", k, len(unnamed))
	}
	return nil
}

// replaceNode turns x into y in place.
func replaceNode(x, y node) {
	for k := range x {
		delete(x, k)
	}
	for k, v := range y {
		x[k] = v
	}
}

// substituteParams replaces every parameter of the AST by its argument. It
// fails unless there is exactly one argument per parameter.
func substituteParams(ast *parsed, args []any) error {
	nodes, n, err := paramNodes(ast.root)
	if err != nil {
		return err
	}
	if n != len(args) {
		return fmt.Errorf("%w: the statement has %d parameters, %d values were bound", ErrInvalid, n, len(args))
	}
	for i := 1; i <= n; i++ {
		p, err := toParam(args[i-1])
		if err != nil {
			return fmt.Errorf("parameter %d: %w", i, err)
		}
		for _, x := range nodes[i] {
			replaceParam(x, p.constantNode())
		}
	}
	return nil
}

// hasParams tells whether the AST has any parameter.
func hasParams(ast *parsed) bool {
	_, n, _ := paramNodes(ast.root)
	return n > 0
}

// DriverArgs turns args into values for DuckDB's database/sql binding.
func DriverArgs(args []any) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		p, err := toParam(a)
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i+1, err)
		}
		if !p.null {
			out[i] = p.driver
		}
	}
	return out, nil
}

// paramArrowType is the Arrow type clients bind a parameter of DuckDB
// type p as: what they send is what the server then reads (flightsql
// turns each value into a scalar and toParam converts any Arrow type).
//
// Temporal types are typed the way the JDBC driver (arrow-java 18.3)
// fills them: it writes a java.sql Timestamp's epoch milliseconds and a
// Time's milliseconds of the day into the vector unscaled, whatever its
// unit (apache/arrow-java#838), so timestamps are timestamp[ms] (with a
// zone for TIMESTAMP WITH TIME ZONE, none for TIMESTAMP) and times
// time32[ms]. Decimals keep the precision and scale DuckDB infers (the
// column's, or the CAST's). Types without an Arrow counterpart here
// (UUID, nested types, parameters DuckDB cannot type) are strings, which
// DuckDB casts.
func paramArrowType(p engine.ParamType) arrow.DataType {
	if p.Type == duckdb.TYPE_DECIMAL {
		return &arrow.Decimal128Type{Precision: int32(p.Width), Scale: int32(p.Scale)}
	}
	if t, ok := paramArrowTypes[p.Type]; ok {
		return t
	}
	return arrow.BinaryTypes.String
}

var paramArrowTypes = map[duckdb.Type]arrow.DataType{
	duckdb.TYPE_BOOLEAN:   arrow.FixedWidthTypes.Boolean,
	duckdb.TYPE_TINYINT:   arrow.PrimitiveTypes.Int8,
	duckdb.TYPE_SMALLINT:  arrow.PrimitiveTypes.Int16,
	duckdb.TYPE_INTEGER:   arrow.PrimitiveTypes.Int32,
	duckdb.TYPE_BIGINT:    arrow.PrimitiveTypes.Int64,
	duckdb.TYPE_HUGEINT:   arrow.PrimitiveTypes.Int64,
	duckdb.TYPE_UTINYINT:  arrow.PrimitiveTypes.Uint8,
	duckdb.TYPE_USMALLINT: arrow.PrimitiveTypes.Uint16,
	duckdb.TYPE_UINTEGER:  arrow.PrimitiveTypes.Uint32,
	duckdb.TYPE_UBIGINT:   arrow.PrimitiveTypes.Uint64,
	duckdb.TYPE_UHUGEINT:  arrow.PrimitiveTypes.Uint64,
	duckdb.TYPE_FLOAT:     arrow.PrimitiveTypes.Float32,
	duckdb.TYPE_DOUBLE:    arrow.PrimitiveTypes.Float64,
	duckdb.TYPE_BLOB:      arrow.BinaryTypes.Binary,
	duckdb.TYPE_DATE:      arrow.FixedWidthTypes.Date32,
	duckdb.TYPE_TIME:      arrow.FixedWidthTypes.Time32ms,
	// Not arrow.FixedWidthTypes' timestamps: those have a UTC zone.
	duckdb.TYPE_TIMESTAMP:    &arrow.TimestampType{Unit: arrow.Millisecond},
	duckdb.TYPE_TIMESTAMP_S:  &arrow.TimestampType{Unit: arrow.Millisecond},
	duckdb.TYPE_TIMESTAMP_MS: &arrow.TimestampType{Unit: arrow.Millisecond},
	duckdb.TYPE_TIMESTAMP_NS: &arrow.TimestampType{Unit: arrow.Millisecond},
	duckdb.TYPE_TIMESTAMP_TZ: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
}

// paramNullType is the DuckDB type a parameter bound without a value is
// a NULL of, or nil where DuckDB's inferred type has no name here (the
// NULL then stays untyped).
func paramNullType(p engine.ParamType) node {
	if p.Type == duckdb.TYPE_DECIMAL {
		return decimalType(int32(p.Width), int32(p.Scale))
	}
	if name, ok := paramNullTypes[p.Type]; ok {
		return duckType(name)
	}
	return nil
}

var paramNullTypes = map[duckdb.Type]string{
	duckdb.TYPE_BOOLEAN: "BOOLEAN", duckdb.TYPE_TINYINT: "TINYINT", duckdb.TYPE_SMALLINT: "SMALLINT",
	duckdb.TYPE_INTEGER: "INTEGER", duckdb.TYPE_BIGINT: "BIGINT", duckdb.TYPE_UTINYINT: "UTINYINT",
	duckdb.TYPE_USMALLINT: "USMALLINT", duckdb.TYPE_UINTEGER: "UINTEGER", duckdb.TYPE_UBIGINT: "UBIGINT",
	duckdb.TYPE_HUGEINT: "HUGEINT", duckdb.TYPE_UHUGEINT: "UHUGEINT",
	duckdb.TYPE_FLOAT: "FLOAT", duckdb.TYPE_DOUBLE: "DOUBLE", duckdb.TYPE_VARCHAR: "VARCHAR",
	duckdb.TYPE_BLOB: "BLOB", duckdb.TYPE_DATE: "DATE", duckdb.TYPE_TIME: "TIME",
	duckdb.TYPE_TIMESTAMP: "TIMESTAMP", duckdb.TYPE_TIMESTAMP_TZ: "TIMESTAMP WITH TIME ZONE",
	duckdb.TYPE_TIMESTAMP_S: "TIMESTAMP_S", duckdb.TYPE_TIMESTAMP_MS: "TIMESTAMP_MS",
	duckdb.TYPE_TIMESTAMP_NS: "TIMESTAMP_NS", duckdb.TYPE_UUID: "UUID",
}

var emptyParamSchema = arrow.NewSchema(nil, nil)

// paramSchema is the parameter schema clients bind against.
func paramSchema(types []engine.ParamType) *arrow.Schema {
	fields := make([]arrow.Field, len(types))
	for i, t := range types {
		fields[i] = arrow.Field{Name: fmt.Sprintf("$%d", i+1), Type: paramArrowType(t), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// paramTypes prepares query, one statement of the given kind, on conn and
// returns the type DuckDB infers for each parameter.
func paramTypes(ctx context.Context, conn *engine.Conn, kind duckdb.StmtType, query string) ([]engine.ParamType, error) {
	types, err := conn.ParamTypes(ctx, kind, query)
	if err != nil {
		return nil, bindError(err)
	}
	return types, nil
}

// bindTypedNulls binds a query with parameters but no values (a prepared
// statement's schema): each parameter becomes a NULL of the type DuckDB
// expects there, and b.sql is printed again. It returns the parameter
// types.
func (b *bound) bindTypedNulls(ctx context.Context, conn *engine.Conn) ([]engine.ParamType, error) {
	types, err := paramTypes(ctx, conn, duckdb.STATEMENT_TYPE_SELECT, b.sql)
	if err != nil {
		return nil, err
	}
	nodes, _, err := paramNodes(b.ast.root)
	if err != nil {
		return nil, err
	}
	for i, t := range types {
		p := paramValue{null: true, duck: duckType("NULL")}
		if nt := paramNullType(t); nt != nil {
			p.duck = nt
		}
		for _, x := range nodes[i+1] {
			replaceParam(x, p.constantNode())
		}
	}
	doc, err := b.ast.document()
	if err != nil {
		return nil, err
	}
	if b.sql, err = conn.DeserializeSQL(ctx, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return types, nil
}

// Parameters returns the parameter schema of a statement: one field per
// placeholder, typed as DuckDB infers it from the context (string where it
// cannot tell). A statement without placeholders has an empty schema.
func (p *Planner) Parameters(ctx context.Context, s Session, st *parse.Statement) (*arrow.Schema, error) {
	if !st.HasParams() {
		return emptyParamSchema, nil
	}
	if !st.Info().Rows {
		// INSERT … VALUES, UPDATE and DELETE are described; other updates
		// (and one that cannot be prepared here, e.g. INSERT … SELECT)
		// report no parameters, and their statement still runs or fails as
		// usual.
		types, err := p.dmlParamTypes(ctx, s, st)
		if err != nil {
			return emptyParamSchema, nil
		}
		return paramSchema(types), nil
	}
	if st.Query() == nil {
		return emptyParamSchema, nil // EXPLAIN, CALL, SHOW
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, s, st, true)
	if err != nil {
		return nil, err
	}
	return paramSchema(b.paramTypes), nil
}

// insertParamTypes prepares an INSERT … VALUES against a stand-in of its
// target table and returns DuckDB's parameter types.
func (p *Planner) insertParamTypes(ctx context.Context, sess Session, ins *parse.Insert) ([]engine.ParamType, error) {
	if ins.Values == "" {
		return nil, nil // INSERT … SELECT: no parameters described
	}
	columns := ""
	if ins.Columns != nil {
		columns = "(" + QuotedNames(ins.Columns) + ")"
	}
	// The target as INSERT loads it, so t.branch_b is described too; its
	// column types are no one's business without INSERT.
	tgt, err := p.LoadTarget(ctx, sess, ins.Name, authz.Insert)
	if err != nil {
		return nil, err
	}
	ref := tgt.Ref
	schema := tgt.Pinned.Table.Schema()
	defs := make([]string, len(schema.Fields()))
	for i, f := range schema.Fields() {
		typ, err := DuckTypeOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("insert into %s: column %q: %w", ref, f.Name, err)
		}
		defs[i] = engine.Quote(f.Name) + " " + typ
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	standIn := engine.Quote(ref.Table)
	if err := conn.Exec(ctx, "CREATE TEMP TABLE "+standIn+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return nil, fmt.Errorf("insert into %s: stand-in: %w", ref, err)
	}
	if err := CheckValues(ctx, conn, ins.Values, p.opts.MaxValueBytes); err != nil {
		return nil, err
	}
	return paramTypes(ctx, conn, duckdb.STATEMENT_TYPE_INSERT, "INSERT INTO "+standIn+" "+columns+" "+ins.Values)
}

// dmlParamTypes returns DuckDB's parameter types of an INSERT … VALUES,
// UPDATE or DELETE, prepared against a stand-in of its target table (the
// statements icefloe runs for an UPDATE or DELETE, as they are printed).
func (p *Planner) dmlParamTypes(ctx context.Context, sess Session, st *parse.Statement) ([]engine.ParamType, error) {
	var parts []string
	var u updateText
	var pred string
	priv := authz.Delete
	switch b := st.Body.(type) {
	case *parse.Insert:
		return p.insertParamTypes(ctx, sess, b)
	case *parse.Update:
		u, priv = updateTextOf(b), authz.Update
		parts = u.parts
	case *parse.Delete:
		parts, pred = b.Name, b.Where
	default:
		return nil, nil // DDL takes no parameters
	}
	update := priv == authz.Update
	// Describing a statement's parameters needs what running it does.
	tgt, conn, err := p.targetConn(ctx, sess, parts, priv)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	standIn, err := CreateStandIn(ctx, conn, tgt.Ref, tgt.Pinned.Table.Schema(), false)
	if err != nil {
		return nil, err
	}
	if hasLineage(&input{pinned: tgt.Pinned}) {
		for _, c := range []string{iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberColumnName} {
			if err := conn.Exec(ctx, "ALTER TABLE "+standIn+" ADD COLUMN "+engine.Quote(c)+" BIGINT"); err != nil {
				return nil, err
			}
		}
	}
	var sql string
	if update {
		sql, _, _, err = updateSQL(ctx, conn, tgt, standIn, u)
	} else {
		_, sql, err = deleteSQL(ctx, conn, tgt, standIn, pred)
	}
	if err != nil {
		return nil, err
	}
	return paramTypes(ctx, conn, duckdb.STATEMENT_TYPE_SELECT, sql)
}

// ParamRows turns parameter batches (one column per placeholder, one row
// per execution) into one []any of Arrow scalars per row, the args of
// Plan, Bind and statement.Executor.Exec.
func ParamRows(recs []arrow.RecordBatch) ([][]any, error) {
	var rows [][]any
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				sc, err := scalar.GetScalar(rec.Column(c), r)
				if err != nil {
					return nil, fmt.Errorf("%w: parameter %d: %v", ErrUnsupported, c+1, err)
				}
				row[c] = sc
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}
