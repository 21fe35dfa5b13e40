package parse

import (
	"strconv"
	"strings"
	"time"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// RefChange is one of Spark's branch and tag statements of ALTER TABLE:
// CREATE [OR REPLACE] | REPLACE | DROP BRANCH|TAG.
type RefChange struct {
	// Branch: a branch, else a tag.
	Branch                bool
	Name                  string
	Create, Replace, Drop bool
	IfNotExists, IfExists bool
	// Version is AS OF VERSION's snapshot id (nil: the current one).
	Version *int64
	// RetainMs is RETAIN's max-ref-age-ms (0 unset); MinSnapshots and
	// MaxSnapshotAgeMs are WITH SNAPSHOT RETENTION's (0 unset).
	RetainMs         int64
	MinSnapshots     int
	MaxSnapshotAgeMs int64
}

func (*RefChange) alterAction() {}

// atRefDDL reports whether a branch or tag statement starts here.
func atRefDDL(c *cursor) bool {
	for _, kind := range []string{"BRANCH", "TAG"} {
		if c.at("CREATE", kind) || c.at("CREATE", "OR", "REPLACE", kind) || c.at("REPLACE", kind) || c.at("DROP", kind) {
			return true
		}
	}
	return false
}

// parseRefChange reads the branch or tag statement at c.
func parseRefChange(c *cursor) (AlterAction, error) {
	d := &RefChange{}
	switch {
	case c.accept("CREATE", "OR", "REPLACE"):
		d.Create, d.Replace = true, true
	case c.accept("CREATE"):
		d.Create = true
	case c.accept("REPLACE"):
		d.Replace = true
	case c.accept("DROP"):
		d.Drop = true
	}
	if c.accept("BRANCH") {
		d.Branch = true
	} else if !c.accept("TAG") {
		return nil, c.unexpected()
	}
	switch {
	case d.Drop && c.accept("IF", "EXISTS"):
		d.IfExists = true
	case d.Create && !d.Replace && c.accept("IF", "NOT", "EXISTS"):
		d.IfNotExists = true
	}
	name, err := c.ident()
	if err != nil {
		return nil, err
	}
	d.Name = name
	if d.Drop {
		return d, c.end()
	}
	if c.accept("AS", "OF", "VERSION") {
		if c.done() || c.peek().Kind != sqltok.Number {
			return nil, c.unexpected()
		}
		v, err := strconv.ParseInt(c.peek().Value, 10, 64)
		if err != nil {
			return nil, c.unexpected()
		}
		c.pos++
		d.Version = &v
	}
	if c.accept("RETAIN") {
		if d.RetainMs, err = c.durationMs(); err != nil {
			return nil, err
		}
	}
	if c.accept("WITH", "SNAPSHOT", "RETENTION") {
		if err := d.retention(c); err != nil {
			return nil, err
		}
	}
	return d, c.end()
}

// retention reads WITH SNAPSHOT RETENTION's [N SNAPSHOTS] [N units].
func (d *RefChange) retention(c *cursor) error {
	if !d.Branch {
		return invalidf("tags keep one snapshot; WITH SNAPSHOT RETENTION is for branches")
	}
	if c.pos+1 < len(c.toks) && c.peek().Kind == sqltok.Number && c.toks[c.pos+1].Is("SNAPSHOTS") {
		n, _ := strconv.Atoi(c.peek().Value)
		d.MinSnapshots = n
		c.pos += 2
	}
	if !c.done() {
		var err error
		if d.MaxSnapshotAgeMs, err = c.durationMs(); err != nil {
			return err
		}
	}
	if d.MinSnapshots <= 0 && d.MaxSnapshotAgeMs == 0 {
		return c.unexpected()
	}
	return nil
}

// durationMs reads "N DAYS|HOURS|MINUTES" as milliseconds.
func (c *cursor) durationMs() (int64, error) {
	if c.pos+1 >= len(c.toks) || c.peek().Kind != sqltok.Number {
		return 0, c.unexpected()
	}
	n, err := strconv.ParseInt(c.peek().Value, 10, 64)
	if err != nil || n <= 0 {
		return 0, invalidf("%s: want a positive whole number", c.peek().Value)
	}
	units := map[string]time.Duration{"DAYS": 24 * time.Hour, "DAY": 24 * time.Hour, "HOURS": time.Hour, "HOUR": time.Hour, "MINUTES": time.Minute, "MINUTE": time.Minute}
	unit := c.toks[c.pos+1]
	u, ok := units[strings.ToUpper(unit.Value)]
	if !ok || unit.Kind != sqltok.Word {
		c.pos++
		return 0, c.unexpected()
	}
	c.pos += 2
	return n * u.Milliseconds(), nil
}
