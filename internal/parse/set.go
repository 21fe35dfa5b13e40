package parse

import (
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Set is SET name = value (or TO value) and RESET name of a session
// setting icefloe has: only result_cache, whose value is on or off
// (true/false); every other SET stays refused. Reset (or DEFAULT) goes
// back to the server's default.
type Set struct {
	Name string
	// On is the value set; meaningless when Reset.
	On    bool
	Reset bool
}

func (*Set) body() {}

// SettingResultCache is the name of the result cache's session setting.
const SettingResultCache = "result_cache"

func parseSet(c *cursor) (Body, error) {
	c.pos = 0
	reset := c.accept("RESET")
	if !reset && !c.accept("SET") {
		return nil, c.unexpected()
	}
	name, err := c.ident()
	if err != nil {
		return nil, err
	}
	s := &Set{Name: strings.ToLower(name), Reset: reset}
	if reset {
		return s, c.end()
	}
	if !c.acceptPunct("=") && !c.accept("TO") {
		return nil, c.unexpected()
	}
	if c.done() {
		return nil, c.unexpected()
	}
	t := c.peek()
	c.pos++
	switch v := strings.ToLower(t.Value); {
	case t.Kind == sqltok.Word && v == "default":
		s.Reset = true
	case (t.Kind == sqltok.Word || t.Kind == sqltok.String) && (v == "on" || v == "true"):
		s.On = true
	case (t.Kind == sqltok.Word || t.Kind == sqltok.String) && (v == "off" || v == "false"):
	default:
		return nil, fmt.Errorf("%w: %s is on or off, not %s", ErrInvalid, s.Name, t.Value)
	}
	return s, c.end()
}
