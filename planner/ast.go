package planner

import (
	"encoding/json"
	"fmt"
	"strings"
)

// node is one object of DuckDB's JSON AST (json_serialize_sql).
type node = map[string]any

// parsed is a statement parsed by DuckDB.
type parsed struct {
	root node // statements[0]
}

// parseAST decodes json_serialize_sql output. It returns ErrSyntax for parse
// errors, ErrUnsupported for statements DuckDB cannot serialize (anything
// but SELECT) and ErrInvalid for more than one statement.
func parseAST(text string) (*parsed, error) {
	var doc struct {
		Error      bool   `json:"error"`
		ErrorType  string `json:"error_type"`
		ErrorMsg   string `json:"error_message"`
		Statements []node `json:"statements"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("planner: decode ast: %w", err)
	}
	if doc.Error {
		if doc.ErrorType == "not implemented" {
			return nil, fmt.Errorf("%w: %s", ErrUnsupported, doc.ErrorMsg)
		}
		return nil, fmt.Errorf("%w: %s", ErrSyntax, doc.ErrorMsg)
	}
	switch len(doc.Statements) {
	case 0:
		return nil, fmt.Errorf("%w: empty statement", ErrSyntax)
	case 1:
	default:
		return nil, fmt.Errorf("%w: one statement at a time, got %d", ErrInvalid, len(doc.Statements))
	}
	return &parsed{root: doc.Statements[0]}, nil
}

// document returns the JSON json_deserialize_sql takes.
func (p *parsed) document() (string, error) {
	b, err := json.Marshal(map[string]any{"error": false, "statements": []node{p.root}})
	return string(b), err
}

// isTableRef tells table references (they have "type" but no "class")
// from expressions.
func isTableRef(n node) bool {
	_, hasClass := n["class"]
	t, _ := n["type"].(string)
	return !hasClass && t != "" && tableRefTypes[t]
}

var tableRefTypes = map[string]bool{
	"BASE_TABLE": true, "TABLE_FUNCTION": true, "JOIN": true, "SUBQUERY": true,
	"EMPTY": true, "EXPRESSION_LIST": true, "PIVOT": true, "SHOW_REF": true,
	"COLUMN_DATA": true, "DELIM_GET": true, "BOUND_TABLE_REF": true,
}

// walk calls fn for every object in the tree, parents first. fn returns
// false to skip the object's children.
func walk(v any, fn func(n node) bool) {
	switch x := v.(type) {
	case node:
		if !fn(x) {
			return
		}
		for _, c := range x {
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}

func str(n node, key string) string {
	s, _ := n[key].(string)
	return s
}
