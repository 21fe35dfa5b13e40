package statement

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/planner"
)

// The branch and tag DDL: Spark's ALTER TABLE … CREATE [OR REPLACE] |
// REPLACE | DROP BRANCH|TAG, each one metadata commit with the refs it
// reads asserted (commitMeta). The procedures that move refs (rollback,
// cherry-pick, fast-forward) are in refprocs.go.

// refStatement reports whether the ALTER TABLE action at ps is one of the
// branch and tag statements.
func refStatement(ps *planner.Parser) bool {
	for _, kind := range []string{"BRANCH", "TAG"} {
		if ps.At("CREATE", kind) || ps.At("CREATE", "OR", "REPLACE", kind) || ps.At("REPLACE", kind) || ps.At("DROP", kind) {
			return true
		}
	}
	return false
}

// refDDL is one parsed branch or tag statement.
type refDDL struct {
	kind                  table.RefType
	name                  string
	create, replace, drop bool
	ifNotExists, ifExists bool
	version               *int64
	retain                int64 // max-ref-age-ms; 0 unset
	minSnapshots          int
	maxSnapshotAge        int64
}

// alterRefs runs ALTER TABLE t CREATE [OR REPLACE] | REPLACE | DROP
// BRANCH|TAG (Spark's grammar, docs/sql.md).
func (e *Executor) alterRefs(ctx context.Context, tgt *planner.WriteTarget, ps *planner.Parser) error {
	d, err := parseRefDDL(ps)
	if err != nil {
		return err
	}
	return e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		return d.change(tbl)
	})
}

// parseRefDDL reads the branch or tag statement at p.
func parseRefDDL(p *planner.Parser) (*refDDL, error) {
	d := &refDDL{}
	switch {
	case p.Accept("CREATE", "OR", "REPLACE"):
		d.create, d.replace = true, true
	case p.Accept("CREATE"):
		d.create = true
	case p.Accept("REPLACE"):
		d.replace = true
	case p.Accept("DROP"):
		d.drop = true
	}
	d.kind = table.TagRef
	if p.Accept("BRANCH") {
		d.kind = table.BranchRef
	} else if !p.Accept("TAG") {
		return nil, p.Unexpected()
	}
	switch {
	case d.drop && p.Accept("IF", "EXISTS"):
		d.ifExists = true
	case d.create && !d.replace && p.Accept("IF", "NOT", "EXISTS"):
		d.ifNotExists = true
	}
	name, err := p.Ident()
	if err != nil {
		return nil, err
	}
	d.name = name
	if d.drop {
		return d, p.End()
	}
	if p.Accept("AS", "OF", "VERSION") {
		if p.Pos >= len(p.Tokens()) || p.Tokens()[p.Pos].Kind != sqltok.Number {
			return nil, p.Unexpected()
		}
		v, err := strconv.ParseInt(p.Tokens()[p.Pos].Value, 10, 64)
		if err != nil {
			return nil, p.Unexpected()
		}
		p.Pos++
		d.version = &v
	}
	if p.Accept("RETAIN") {
		if d.retain, err = durationMs(p); err != nil {
			return nil, err
		}
	}
	if p.Accept("WITH", "SNAPSHOT", "RETENTION") {
		if d.kind != table.BranchRef {
			return nil, fmt.Errorf("%w: tags keep one snapshot; WITH SNAPSHOT RETENTION is for branches", planner.ErrInvalid)
		}
		if p.Pos+1 < len(p.Tokens()) && p.Tokens()[p.Pos].Kind == sqltok.Number && p.Tokens()[p.Pos+1].Is("SNAPSHOTS") {
			n, _ := strconv.Atoi(p.Tokens()[p.Pos].Value)
			d.minSnapshots = n
			p.Pos += 2
		}
		if p.Pos < len(p.Tokens()) {
			if d.maxSnapshotAge, err = durationMs(p); err != nil {
				return nil, err
			}
		}
		if d.minSnapshots <= 0 && d.maxSnapshotAge == 0 {
			return nil, p.Unexpected()
		}
	}
	return d, p.End()
}

// durationMs reads "N DAYS|HOURS|MINUTES" as milliseconds.
func durationMs(p *planner.Parser) (int64, error) {
	if p.Pos+1 >= len(p.Tokens()) || p.Tokens()[p.Pos].Kind != sqltok.Number {
		return 0, p.Unexpected()
	}
	n, err := strconv.ParseInt(p.Tokens()[p.Pos].Value, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s: want a positive whole number", planner.ErrInvalid, p.Tokens()[p.Pos].Value)
	}
	units := map[string]time.Duration{"DAYS": 24 * time.Hour, "DAY": 24 * time.Hour, "HOURS": time.Hour, "HOUR": time.Hour, "MINUTES": time.Minute, "MINUTE": time.Minute}
	u, ok := units[strings.ToUpper(p.Tokens()[p.Pos+1].Value)]
	if !ok || p.Tokens()[p.Pos+1].Kind != sqltok.Word {
		p.Pos++
		return 0, p.Unexpected()
	}
	p.Pos += 2
	return n * u.Milliseconds(), nil
}

// change is the metadata commit of the statement against tbl.
func (d *refDDL) change(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
	cur, exists := commit.FindRef(tbl, d.name)
	_, req := commit.RefHead(tbl, d.name)
	what := string(d.kind)
	switch {
	case exists && cur.SnapshotRefType != d.kind:
		return nil, nil, fmt.Errorf("%w: %q is a %s, not a %s", planner.ErrInvalid, d.name, cur.SnapshotRefType, d.kind)
	case d.drop && !exists:
		if d.ifExists {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("%w: no %s %q", planner.ErrNotFound, what, d.name)
	case d.drop && d.name == table.MainBranch:
		return nil, nil, fmt.Errorf("%w: the main branch cannot be dropped", planner.ErrInvalid)
	case d.drop:
		return []table.Requirement{req}, []table.Update{table.NewRemoveSnapshotRefUpdate(d.name)}, nil
	case d.create && !d.replace && exists:
		if d.ifNotExists {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("%w: %s %q", planner.ErrExists, what, d.name)
	case !d.create && !exists:
		return nil, nil, fmt.Errorf("%w: no %s %q to replace", planner.ErrNotFound, what, d.name)
	}
	var id int64
	switch {
	case d.version != nil:
		if tbl.SnapshotByID(*d.version) == nil {
			return nil, nil, fmt.Errorf("%w: no snapshot %d", planner.ErrNotFound, *d.version)
		}
		id = *d.version
	case tbl.CurrentSnapshot() != nil:
		id = tbl.CurrentSnapshot().SnapshotID
	default:
		return nil, nil, fmt.Errorf("%w: the table has no snapshot yet to put %s %q on", planner.ErrInvalid, what, d.name)
	}
	reqs := []table.Requirement{req}
	if d.version == nil {
		main, mreq := commit.RefHead(tbl, table.MainBranch)
		if main != nil {
			reqs = append(reqs, mreq)
		}
	}
	return reqs, []table.Update{table.NewSetSnapshotRefUpdate(d.name, id, d.kind, d.retain, d.maxSnapshotAge, d.minSnapshots)}, nil
}
