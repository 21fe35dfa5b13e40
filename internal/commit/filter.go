package commit

import (
	"bytes"
	"math"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// A conflict filter evaluated against the metrics of one data file: may
// the file hold a row the filter matches? iceberg-go v0.7.0 has this
// evaluator (its inclusive metrics evaluator) but keeps it unexported, and
// its incremental append scan, the public way to reach it, sees append
// snapshots only; a concurrent UPDATE's overwrite adds data files too.
// The rules are the inclusive ones of Iceberg's InclusiveMetricsEvaluator:
// a file is ruled out only when its value counts, null counts or
// lower/upper bounds prove no row can match; anything not known (a
// column without bounds, a transform, NaN bounds) may match. A column
// without bounds but an identity partition field takes the partition
// value as both bounds.

// fileFilter is a conflict filter bound to a table's schema.
type fileFilter struct {
	expr iceberg.BooleanExpression // bound, NOT rewritten away
	meta table.Metadata
}

// bindFilter binds expr (nil is every row) to meta's current schema; a
// filter that does not bind (a column since dropped) matches every file.
func bindFilter(expr iceberg.BooleanExpression, meta table.Metadata) fileFilter {
	if expr == nil {
		return fileFilter{expr: iceberg.AlwaysTrue{}, meta: meta}
	}
	rewritten, err := iceberg.RewriteNotExpr(expr)
	if err == nil {
		if bound, err := iceberg.BindExpr(meta.CurrentSchema(), rewritten, false); err == nil {
			return fileFilter{expr: bound, meta: meta}
		}
	}
	return fileFilter{expr: iceberg.AlwaysTrue{}, meta: meta}
}

// mayMatch says whether df may hold a row the filter matches. An empty
// file holds none.
func (f fileFilter) mayMatch(df iceberg.DataFile) bool {
	if df.Count() == 0 {
		return false
	}
	if _, ok := f.expr.(iceberg.AlwaysTrue); ok {
		return true
	}
	ev := &fileEval{file: df, part: identityValues(f.meta, df)}
	ok, err := iceberg.VisitExpr(f.expr, iceberg.BooleanExprVisitor[bool](ev))
	return err != nil || ok
}

// identityValues are the values of df's identity partition fields by
// source field id.
func identityValues(meta table.Metadata, df iceberg.DataFile) map[int]any {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil
	}
	part := df.Partition()
	var out map[int]any
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
			continue
		}
		if v, ok := part[pf.FieldID]; ok {
			if out == nil {
				out = map[int]any{}
			}
			out[pf.SourceID()] = v
		}
	}
	return out
}

// fileEval is one evaluation of a bound filter against one file's
// metrics.
type fileEval struct {
	file iceberg.DataFile
	part map[int]any // identity partition values by source field id
}

var _ iceberg.BoundBooleanExprVisitor[bool] = (*fileEval)(nil)

func (e *fileEval) VisitTrue() bool                            { return true }
func (e *fileEval) VisitFalse() bool                           { return false }
func (e *fileEval) VisitNot(bool) bool                         { return true } // rewritten away; a "may" cannot be negated
func (e *fileEval) VisitAnd(l, r bool) bool                    { return l && r }
func (e *fileEval) VisitOr(l, r bool) bool                     { return l || r }
func (e *fileEval) VisitUnbound(iceberg.UnboundPredicate) bool { return true }

func (e *fileEval) VisitBound(p iceberg.BoundPredicate) bool {
	if _, ok := p.Term().(iceberg.BoundReference); !ok {
		return true // a transform or an extract: not known from the column's bounds
	}
	return iceberg.VisitBoundPredicate(p, iceberg.BoundBooleanExprVisitor[bool](e))
}

// allNull says the file's column holds only nulls.
func (e *fileEval) allNull(t iceberg.BoundTerm) bool {
	id := t.Ref().Field().ID
	n, okN := e.file.NullValueCounts()[id]
	v, okV := e.file.ValueCounts()[id]
	return okN && okV && n == v
}

// bounds are the file's lower and upper bounds of t's column (nil where
// unknown or unusable).
func (e *fileEval) bounds(t iceberg.BoundTerm) (lo, hi iceberg.Literal) {
	f := t.Ref().Field()
	decode := func(raw []byte) iceberg.Literal {
		if raw == nil {
			return nil
		}
		lit, err := iceberg.LiteralFromBytes(f.Type, raw)
		if err != nil || isNaN(lit) {
			return nil
		}
		return lit
	}
	lo, hi = decode(e.file.LowerBoundValues()[f.ID]), decode(e.file.UpperBoundValues()[f.ID])
	if lo == nil && hi == nil {
		if v, ok := e.part[f.ID]; ok && v != nil {
			if lit, ok := partitionLiteral(v, f.Type); ok {
				lo, hi = lit, lit
			}
		}
	}
	return lo, hi
}

func (e *fileEval) VisitIsNull(t iceberg.BoundTerm) bool {
	n, ok := e.file.NullValueCounts()[t.Ref().Field().ID]
	return !ok || n > 0
}

func (e *fileEval) VisitNotNull(t iceberg.BoundTerm) bool { return !e.allNull(t) }
func (e *fileEval) VisitIsNan(iceberg.BoundTerm) bool     { return true }
func (e *fileEval) VisitNotNan(iceberg.BoundTerm) bool    { return true }

func (e *fileEval) VisitEqual(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	if e.allNull(t) {
		return false
	}
	lo, hi := e.bounds(t)
	return within(lit, lo, hi)
}

func (e *fileEval) VisitNotEqual(iceberg.BoundTerm, iceberg.Literal) bool { return true }

func (e *fileEval) VisitLess(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	lo, _ := e.bounds(t)
	return !e.allNull(t) && !(lo != nil && compare(lo, lit) >= 0)
}

func (e *fileEval) VisitLessEqual(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	lo, _ := e.bounds(t)
	return !e.allNull(t) && !(lo != nil && compare(lo, lit) > 0)
}

func (e *fileEval) VisitGreater(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	_, hi := e.bounds(t)
	return !e.allNull(t) && !(hi != nil && compare(hi, lit) <= 0)
}

func (e *fileEval) VisitGreaterEqual(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	_, hi := e.bounds(t)
	return !e.allNull(t) && !(hi != nil && compare(hi, lit) < 0)
}

func (e *fileEval) VisitIn(t iceberg.BoundTerm, set iceberg.Set[iceberg.Literal]) bool {
	if e.allNull(t) {
		return false
	}
	lo, hi := e.bounds(t)
	if lo == nil && hi == nil {
		return true
	}
	return !set.All(func(lit iceberg.Literal) bool { return !within(lit, lo, hi) })
}

func (e *fileEval) VisitNotIn(iceberg.BoundTerm, iceberg.Set[iceberg.Literal]) bool { return true }

func (e *fileEval) VisitStartsWith(t iceberg.BoundTerm, lit iceberg.Literal) bool {
	if e.allNull(t) {
		return false
	}
	prefix, ok := lit.(iceberg.TypedLiteral[string])
	if !ok {
		return true
	}
	p := prefix.Value()
	lo, hi := e.bounds(t)
	if l, ok := lo.(iceberg.TypedLiteral[string]); ok {
		if v := l.Value(); len(v) >= len(p) && v[:len(p)] > p {
			return false
		}
	}
	if h, ok := hi.(iceberg.TypedLiteral[string]); ok {
		if v := h.Value(); v[:min(len(v), len(p))] < p {
			return false
		}
	}
	return true
}

func (e *fileEval) VisitNotStartsWith(iceberg.BoundTerm, iceberg.Literal) bool { return true }

// within says lit may lie in [lo, hi] (an unknown bound does not bound).
func within(lit, lo, hi iceberg.Literal) bool {
	return !(lo != nil && compare(lo, lit) > 0) && !(hi != nil && compare(hi, lit) < 0)
}

// compare orders two literals of one type; literals it cannot order
// compare equal (so that nothing is ruled out by them).
func compare(a, b iceberg.Literal) int {
	switch a := a.(type) {
	case iceberg.TypedLiteral[bool]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[int32]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[int64]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[float32]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[float64]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[iceberg.Date]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[iceberg.Time]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[iceberg.Timestamp]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[iceberg.TimestampNano]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[string]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[[]byte]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[uuid.UUID]:
		return compareTyped(a, b)
	case iceberg.TypedLiteral[iceberg.Decimal]:
		return compareTyped(a, b)
	}
	return 0
}

func compareTyped[T iceberg.LiteralType](a iceberg.TypedLiteral[T], b iceberg.Literal) int {
	bt, ok := b.(iceberg.TypedLiteral[T])
	if !ok {
		if conv, err := b.To(a.Type()); err == nil {
			bt, ok = conv.(iceberg.TypedLiteral[T])
		}
	}
	if !ok {
		return 0
	}
	return a.Comparator()(a.Value(), bt.Value())
}

func isNaN(lit iceberg.Literal) bool {
	switch v := lit.(type) {
	case iceberg.Float32Literal:
		return math.IsNaN(float64(v))
	case iceberg.Float64Literal:
		return math.IsNaN(float64(v))
	}
	return false
}

// partitionLiteral is an identity partition value as a literal of typ.
func partitionLiteral(v any, typ iceberg.Type) (iceberg.Literal, bool) {
	var lit iceberg.Literal
	switch v := v.(type) {
	case bool:
		lit = iceberg.NewLiteral(v)
	case int32:
		lit = iceberg.NewLiteral(v)
	case int64:
		lit = iceberg.NewLiteral(v)
	case float32:
		lit = iceberg.NewLiteral(v)
	case float64:
		lit = iceberg.NewLiteral(v)
	case string:
		lit = iceberg.NewLiteral(v)
	case []byte:
		lit = iceberg.NewLiteral(bytes.Clone(v))
	case iceberg.Date:
		lit = iceberg.NewLiteral(v)
	case iceberg.Time:
		lit = iceberg.NewLiteral(v)
	case iceberg.Timestamp:
		lit = iceberg.NewLiteral(v)
	case iceberg.TimestampNano:
		lit = iceberg.NewLiteral(v)
	case uuid.UUID:
		lit = iceberg.NewLiteral(v)
	case iceberg.Decimal:
		lit = iceberg.NewLiteral(v)
	default:
		return nil, false
	}
	if !lit.Type().Equals(typ) {
		conv, err := lit.To(typ)
		if err != nil {
			return nil, false
		}
		lit = conv
	}
	return lit, !isNaN(lit)
}
