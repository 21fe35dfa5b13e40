package statement

import (
	"context"

	"errors"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/planner"
)

// Table maintenance procedures: CALL [catalog.]system.name(args), with
// Spark's procedure names, argument names and result columns
// (docs/sql.md lists them). A procedure runs on the coordinator when the
// statement is planned (Executor.Plan runs it; Executor.Bind answers its
// columns without running it) and answers what it did as rows, served like an EXPLAIN: one endpoint whose
// worker returns the rows from a VALUES list built here from the results
// (no client text reaches DuckDB).

// procKind is the type a procedure argument takes.
type procKind int

const (
	argString procKind = iota
	argInt
	argBool
	argTimestamp
	argMap       // map('k', 'v', …): string keys and values
	argLongArray // array(1, 2, …)
)

func (k procKind) String() string {
	return [...]string{"a string", "an integer", "a boolean", "a timestamp", "a map", "an array of snapshot ids"}[k]
}

// procParam is one named parameter of a procedure.
type procParam struct {
	name     string
	kind     procKind
	required bool
}

// procColumn is one result column: its name and DuckDB type.
type procColumn struct{ name, typ string }

// procedure is one CALL-able procedure. run returns the result rows, one
// value per column (int64, string, bool or nil).
type procedure struct {
	name    string
	params  []procParam
	columns []procColumn
	run     func(ctx context.Context, e *Executor, c *procCall) ([][]any, error)
}

// procCall is a parsed CALL: the session (whose catalog the CALL's
// catalog prefix replaces), the procedure and its bound arguments by
// parameter name.
type procCall struct {
	sess planner.Session
	proc *procedure
	args map[string]any
}

// procedures are the procedures CALL knows, by name.
var procedures = map[string]*procedure{}

func registerProcedure(pr *procedure) { procedures[pr.name] = pr }

// callSchema is the result schema of a CALL, without running it.
func (e *Executor) callSchema(ctx context.Context, s planner.Session, call *parse.Call) (*arrow.Schema, error) {
	c, err := bindCall(s, call)
	if err != nil {
		return nil, err
	}
	return e.planner.RowsSchema(ctx, rowsSQL(c.proc.columns, nil))
}

// planCall runs a CALL and has its result rows planned as one endpoint
// (planner.Planner.PlanRows). The arguments are bound and the result's
// shape checked before the procedure runs.
func (e *Executor) planCall(ctx context.Context, s planner.Session, st *parse.Statement) (*planner.Plan, error) {
	c, err := bindCall(s, st.Body.(*parse.Call))
	if err != nil {
		return nil, err
	}
	if _, err := e.planner.RowsSchema(ctx, rowsSQL(c.proc.columns, nil)); err != nil {
		return nil, err
	}
	// A procedure's own plans run on the workers (it writes).
	rows, err := c.proc.run(planner.WithoutAnswers(ctx), e, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.proc.name, err)
	}
	return e.planner.PlanRows(ctx, rowsSQL(c.proc.columns, rows))
}

// rowsSQL renders result rows as a query with exactly the columns' names
// and types; no rows is an empty result of that shape.
func rowsSQL(cols []procColumn, rows [][]any) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = engine.Quote(c.name)
	}
	if len(rows) == 0 {
		sel := make([]string, len(cols))
		for i, c := range cols {
			sel[i] = "CAST(NULL AS " + c.typ + ") AS " + names[i]
		}
		return "SELECT " + strings.Join(sel, ", ") + " WHERE false"
	}
	vals := make([]string, len(rows))
	for r, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = "CAST(" + sqlLiteral(row[i]) + " AS " + c.typ + ")"
		}
		vals[r] = "(" + strings.Join(cells, ", ") + ")"
	}
	return "SELECT * FROM (VALUES " + strings.Join(vals, ", ") + ") AS __icefloe_rows(" + strings.Join(names, ", ") + ")"
}

// sqlLiteral is a DuckDB literal of a result value.
func sqlLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return engine.QuoteString(x)
	}
	return engine.QuoteString(fmt.Sprint(v))
}

// bindCall finds the procedure of CALL [catalog.]system.name(…) and
// binds its arguments to the procedure's parameters.
func bindCall(s planner.Session, call *parse.Call) (*procCall, error) {
	parts := call.Name
	name := strings.ToLower(parts[len(parts)-1])
	if len(parts) >= 2 && !strings.EqualFold(parts[len(parts)-2], "system") {
		return nil, fmt.Errorf("%w: procedure %s: procedures live in the system namespace (CALL system.%s(…))", planner.ErrNotFound, strings.Join(parts, "."), name)
	}
	if len(parts) == 3 {
		s.Catalog = parts[0]
	}
	pr, ok := procedures[name]
	if !ok {
		return nil, fmt.Errorf("%w: procedure system.%s (known: %s)", planner.ErrNotFound, name, strings.Join(procedureNames(), ", "))
	}
	bound, err := bindArgs(pr, call.Args)
	if err != nil {
		return nil, err
	}
	return &procCall{sess: s, proc: pr, args: bound}, nil
}

func procedureNames() []string {
	var out []string
	for n := range procedures {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// bindArgs matches arguments to parameters: all by name or all by
// position (as Spark requires), each converted to its parameter's kind.
func bindArgs(pr *procedure, args []parse.Arg) (map[string]any, error) {
	out := map[string]any{}
	named := len(args) > 0 && args[0].Name != ""
	for i, a := range args {
		if (a.Name != "") != named {
			return nil, fmt.Errorf("%w: %s: pass all arguments by name or all by position", planner.ErrInvalid, pr.name)
		}
		var prm *procParam
		if named {
			for j := range pr.params {
				if pr.params[j].name == a.Name {
					prm = &pr.params[j]
				}
			}
			if prm == nil {
				return nil, fmt.Errorf("%w: %s has no argument %q (arguments: %s)", planner.ErrInvalid, pr.name, a.Name, paramNames(pr))
			}
		} else {
			if i >= len(pr.params) {
				return nil, fmt.Errorf("%w: %s takes at most %d arguments", planner.ErrInvalid, pr.name, len(pr.params))
			}
			prm = &pr.params[i]
		}
		if _, dup := out[prm.name]; dup {
			return nil, fmt.Errorf("%w: %s: argument %q given twice", planner.ErrInvalid, pr.name, prm.name)
		}
		if a.Value.Null() {
			continue
		}
		v, err := convertArg(prm.kind, a.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: argument %s must be %s: %v", planner.ErrInvalid, pr.name, prm.name, prm.kind, err)
		}
		out[prm.name] = v
	}
	for _, prm := range pr.params {
		if _, ok := out[prm.name]; prm.required && !ok {
			return nil, fmt.Errorf("%w: %s: missing argument %s", planner.ErrInvalid, pr.name, prm.name)
		}
	}
	return out, nil
}

func paramNames(pr *procedure) string {
	names := make([]string, len(pr.params))
	for i, p := range pr.params {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// convertArg converts a parsed value to kind: string, int64, bool,
// time.Time, map[string]string or []int64.
func convertArg(kind procKind, v parse.Value) (any, error) {
	if v.Ctor != "" {
		switch {
		case kind == argMap && v.Ctor == "map":
			if len(v.Items)%2 != 0 {
				return nil, errors.New("map(…) takes key, value pairs")
			}
			m := map[string]string{}
			for i := 0; i < len(v.Items); i += 2 {
				if v.Items[i].Ctor != "" || v.Items[i+1].Ctor != "" {
					return nil, errors.New("map keys and values are literals")
				}
				m[strings.ToLower(v.Items[i].Text)] = v.Items[i+1].Text
			}
			return m, nil
		case kind == argLongArray && v.Ctor == "array":
			var ids []int64
			for _, it := range v.Items {
				n, err := convertArg(argInt, it)
				if err != nil {
					return nil, err
				}
				ids = append(ids, n.(int64))
			}
			return ids, nil
		}
		return nil, fmt.Errorf("got %s(…)", v.Ctor)
	}
	switch kind {
	case argString:
		if v.Kind == sqltok.Word {
			return nil, fmt.Errorf("got %s", v.Text)
		}
		return v.Text, nil
	case argInt:
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err != nil || v.Kind == sqltok.Word {
			return nil, fmt.Errorf("got %q", v.Text)
		}
		return n, nil
	case argBool:
		switch strings.ToLower(v.Text) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("got %q", v.Text)
	case argTimestamp:
		if v.Kind == sqltok.Number {
			ms, err := strconv.ParseInt(v.Text, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("got %q", v.Text)
			}
			return time.UnixMilli(ms).UTC(), nil
		}
		if v.Kind != sqltok.String {
			return nil, fmt.Errorf("got %s", v.Text)
		}
		ts, err := planner.AtTimestamp(v.Text, "VARCHAR")
		if err != nil {
			return nil, fmt.Errorf("got %q", v.Text)
		}
		return ts, nil
	case argMap, argLongArray:
		return nil, fmt.Errorf("got %q", v.Text)
	}
	return nil, fmt.Errorf("unknown kind %d", kind)
}

// str returns a string argument, or def when absent.
func (c *procCall) str(name, def string) string {
	if v, ok := c.args[name].(string); ok {
		return v
	}
	return def
}

func (c *procCall) int(name string) (int64, bool) {
	v, ok := c.args[name].(int64)
	return v, ok
}

func (c *procCall) bool(name string, def bool) bool {
	if v, ok := c.args[name].(bool); ok {
		return v
	}
	return def
}

func (c *procCall) time(name string) (time.Time, bool) {
	v, ok := c.args[name].(time.Time)
	return v, ok
}

func (c *procCall) options() map[string]string {
	m, _ := c.args["options"].(map[string]string)
	return m
}

// target loads the table the "table" argument names ('t', 'schema.t' or
// 'catalog.schema.t', resolved like a statement's table name). Every
// procedure on a table changes it, so it asks ALTER on the table.
func (c *procCall) target(ctx context.Context, e *Executor) (*planner.WriteTarget, error) {
	ref, err := procTableRef(c.sess, c.str("table", ""))
	if err != nil {
		return nil, err
	}
	return e.planner.LoadTargetRef(ctx, ref, authz.Alter)
}

// procTableRef resolves a table name given as a string argument.
func procTableRef(s planner.Session, name string) (catalog.TableRef, error) {
	parts, err := parse.TableName(name)
	if err != nil {
		return catalog.TableRef{}, fmt.Errorf("%w: table argument %q: want table, schema.table or catalog.schema.table", planner.ErrInvalid, name)
	}
	return planner.TableName(s, parts)
}
