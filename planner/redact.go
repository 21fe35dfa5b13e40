package planner

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/planner/plan"
)

// Plans are shown to others than the client who sent the query: the
// status page and system.runtime.queries show an admin every
// principal's plans. Plan.Redacted is printed from the plan with the
// client's values replaced where the plan holds them — each fragment's
// SQL tokenized whole (audit.Redact), each pushed filter printed with ?
// for its literals — so a literal that spans lines, or a filter that
// prints its literal unquoted, cannot escape as redacting the printed
// text line by line let them.

// redactedLines are explainLines of the plan with the client's values
// replaced.
func redactedLines(res *plan.Result, scans []*plan.Scan) []string {
	copies := make([]*plan.Scan, len(scans))
	for i, s := range scans {
		c := *s
		c.Filter = s.FilterRedacted
		copies[i] = &c
	}
	return explainLines(plan.Redacted(res, audit.Redact), copies)
}

// redactedFilter prints e as its String does, with ? for each literal.
// An expression it cannot walk prints as "?".
func redactedFilter(e iceberg.BooleanExpression) string {
	s, err := iceberg.VisitExpr[string](e, filterPrinter{})
	if err != nil {
		return "?"
	}
	return s
}

// filterPrinter prints a filter without its literals.
type filterPrinter struct{}

func (filterPrinter) VisitTrue() string            { return "AlwaysTrue()" }
func (filterPrinter) VisitFalse() string           { return "AlwaysFalse()" }
func (filterPrinter) VisitNot(child string) string { return "Not(child=" + child + ")" }
func (filterPrinter) VisitAnd(l, r string) string  { return "And(left=" + l + ", right=" + r + ")" }
func (filterPrinter) VisitOr(l, r string) string   { return "Or(left=" + l + ", right=" + r + ")" }
func (filterPrinter) VisitUnbound(p iceberg.UnboundPredicate) string {
	return predicate(p.Op(), p.Term())
}
func (filterPrinter) VisitBound(p iceberg.BoundPredicate) string { return predicate(p.Op(), p.Term()) }

// predicate prints one predicate of op on term (a column reference or a
// transform of one), its literals as ?.
func predicate(op iceberg.Operation, term fmt.Stringer) string {
	switch op {
	case iceberg.OpIsNull, iceberg.OpNotNull, iceberg.OpIsNan, iceberg.OpNotNan:
		return fmt.Sprintf("%s(term=%s)", op, term)
	case iceberg.OpIn, iceberg.OpNotIn:
		return fmt.Sprintf("%s(term=%s, {?})", op, term)
	}
	return fmt.Sprintf("%s(term=%s, literal=?)", op, term)
}
