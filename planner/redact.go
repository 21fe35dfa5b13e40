package planner

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

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
// text line by line let them. Tokenizing the fragments' SQL waits until
// someone reads the plan (RedactedPlan.Text): it is not the statement's
// work.

// RedactedPlan is Plan.Redacted: the plan's lines with the client's
// values replaced, the fragments' SQL redacted when the text is first
// made. It holds the lines and the SQL, not the plan. Safe for
// concurrent use.
type RedactedPlan struct {
	lines []string // a mark where each fragment's SQL goes
	sql   []string // the fragments' SQL, by mark number
	once  sync.Once
	text  string
}

// redactMark is the mark a redacted plan's lines hold for fragment k's
// SQL: a NUL byte (which no client text holds) and a nonce of this
// process, so no SQL can hold it.
func redactMark(k int) string { return "\x00" + markNonce + strconv.Itoa(k) + "\x00" }

var markNonce = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// defer holds sql for redacting later and returns its mark.
func (r *RedactedPlan) deferSQL(sql string) string {
	r.sql = append(r.sql, sql)
	return redactMark(len(r.sql) - 1)
}

// Text is the redacted plan, one "key<TAB>value" line per item.
func (r *RedactedPlan) Text() string {
	if r == nil {
		return ""
	}
	r.once.Do(func() {
		pairs := make([]string, 0, 2*len(r.sql))
		for k, sql := range r.sql {
			pairs = append(pairs, redactMark(k), audit.Redact(sql))
		}
		r.text = strings.NewReplacer(pairs...).Replace(strings.Join(r.lines, "\n") + "\n")
	})
	return r.text
}

// Len is how many bytes the plan holds until its text is made.
func (r *RedactedPlan) Len() int {
	if r == nil {
		return 0
	}
	n := 0
	for _, l := range r.lines {
		n += len(l) + 1
	}
	for _, s := range r.sql {
		n += len(s)
	}
	return n
}

// redactedLines are explainLines of the plan with the client's values
// replaced, each fragment's SQL as its mark of r.
func redactedLines(res *plan.Result, scans []*plan.Scan, r *RedactedPlan) []string {
	copies := make([]*plan.Scan, len(scans))
	for i, s := range scans {
		c := *s
		c.Filter = s.FilterRedacted
		copies[i] = &c
	}
	return explainLines(plan.Redacted(res, r.deferSQL), copies)
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
