package parse

import (
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Call is CALL [catalog.]system.name( [name =>] value, … ): a table
// maintenance procedure (package statement binds its arguments).
type Call struct {
	// Name is the procedure's name as written, one to three parts.
	Name []string
	Args []Arg
}

func (*Call) body() {}

// Arg is one argument of CALL or ALTER TABLE … EXECUTE: its name
// (lower-cased; empty when positional) and its value.
type Arg struct {
	Name  string
	Value Value
}

// Value is a literal argument: a string, a number, TRUE, FALSE, NULL,
// TIMESTAMP '…', or a map(…) or array(…) of such.
type Value struct {
	// Kind is sqltok.String, sqltok.Number or sqltok.Word (TRUE, FALSE,
	// NULL, upper-cased in Text); zero for map(…) and array(…).
	Kind sqltok.Kind
	Text string
	// Typed is TIMESTAMP for TIMESTAMP '…' (and TIMESTAMPTZ, DATE).
	Typed string
	// Ctor is "map" or "array" for a constructor, Items its arguments.
	Ctor  string
	Items []Value
}

// Null says the value is NULL.
func (v Value) Null() bool { return v.Kind == sqltok.Word && v.Text == "NULL" && v.Ctor == "" }

func parseCall(c *cursor) (Body, error) {
	name, err := c.name(3)
	if err != nil {
		return nil, err
	}
	args, err := c.args()
	if err != nil {
		return nil, err
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	return &Call{Name: name, Args: args}, nil
}

// args reads "( [name =>] value, … )".
func (c *cursor) args() ([]Arg, error) {
	if !c.acceptPunct("(") {
		return nil, c.unexpected()
	}
	if c.acceptPunct(")") {
		return nil, nil
	}
	var args []Arg
	for {
		var a Arg
		switch t := c.toks; {
		case c.pos+1 < len(t) && t[c.pos].IsIdent() && t[c.pos+1].IsOp("=>"):
			a.Name = strings.ToLower(t[c.pos].Value)
			c.pos += 2
		case c.pos+2 < len(t) && t[c.pos].IsIdent() && t[c.pos+1].IsOp("=") && t[c.pos+2].IsOp(">"):
			a.Name = strings.ToLower(t[c.pos].Value)
			c.pos += 3
		}
		v, err := c.value()
		if err != nil {
			return nil, err
		}
		a.Value = v
		args = append(args, a)
		if c.acceptPunct(")") {
			return args, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
}

// value reads one literal argument.
func (c *cursor) value() (Value, error) {
	if c.done() {
		return Value{}, c.unexpected()
	}
	toks, t := c.toks, c.peek()
	switch {
	case t.Kind == sqltok.String, t.Kind == sqltok.Number:
		c.pos++
		return Value{Kind: t.Kind, Text: t.Value}, nil
	case t.IsOp("-") && c.pos+1 < len(toks) && toks[c.pos+1].Kind == sqltok.Number:
		c.pos += 2
		return Value{Kind: sqltok.Number, Text: "-" + toks[c.pos-1].Value}, nil
	case t.Is("TRUE"), t.Is("FALSE"), t.Is("NULL"):
		c.pos++
		return Value{Kind: sqltok.Word, Text: strings.ToUpper(t.Value)}, nil
	case (t.Is("TIMESTAMP") || t.Is("TIMESTAMPTZ") || t.Is("DATE")) && c.pos+1 < len(toks) && toks[c.pos+1].Kind == sqltok.String:
		c.pos += 2
		return Value{Kind: sqltok.String, Text: toks[c.pos-1].Value, Typed: "TIMESTAMP"}, nil
	case (t.Is("map") || t.Is("array")) && c.pos+1 < len(toks) && toks[c.pos+1].IsOp("("):
		c.pos += 2
		v := Value{Ctor: strings.ToLower(t.Value)}
		if c.acceptPunct(")") {
			return v, nil
		}
		for {
			item, err := c.value()
			if err != nil {
				return Value{}, err
			}
			v.Items = append(v.Items, item)
			if c.acceptPunct(")") {
				return v, nil
			}
			if !c.acceptPunct(",") {
				return Value{}, c.unexpected()
			}
		}
	}
	return Value{}, invalidf("argument at offset %d: want a literal (string, number, boolean, TIMESTAMP '…', map(…) or array(…))", t.Pos)
}
