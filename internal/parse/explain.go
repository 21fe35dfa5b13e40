package parse

import "strings"

// Explain is EXPLAIN [ANALYZE] statement.
type Explain struct {
	Analyze bool
	// Inner is the statement explained, parsed from the same tokens.
	Inner *Statement
}

func (*Explain) body() {}

// parseExplain reads EXPLAIN [ANALYZE] statement. EXPLAIN of EXPLAIN, of
// ANALYZE and of CALL (which would run the procedure) is refused.
func parseExplain(c *cursor) (Body, error) {
	ex := &Explain{Analyze: c.accept("ANALYZE")}
	if c.done() {
		return nil, syntaxf("EXPLAIN needs a statement")
	}
	if c.at("ANALYZE") || c.at("EXPLAIN") || c.at("CALL") {
		return nil, unsupportedf("EXPLAIN %s", strings.ToUpper(c.peek().Value))
	}
	inner, err := c.st.subStatement(c.pos, c.last())
	if err != nil {
		return nil, err
	}
	ex.Inner = inner
	return ex, nil
}
