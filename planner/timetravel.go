package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/commit"
)

// pinnedInput is a table reference resolved to what one input reads: the
// live table, the table as of a snapshot (time travel), or one of its
// metadata tables.
type pinnedInput struct {
	*catalog.Pinned
	// snapshot is the time-travel snapshot; 0 for a live read. When set,
	// Pinned.Table presents that snapshot and its schema as current, so
	// binding, pruning and file planning need no special case; the ticket
	// carries the snapshot id for the worker, which reopens the real
	// metadata location.
	snapshot int64
	// meta names a metadata table ("snapshots", "files", …); "" for data.
	meta string
}

// inputKey tells inputs apart: one table read at two versions, or as a
// metadata table, is two inputs.
func inputKey(ref catalog.TableRef, at node) catalog.TableRef {
	if at == nil {
		return ref
	}
	b, _ := json.Marshal(at)
	ref.Table += "\x00" + string(b)
	return ref
}

// pinInput loads the table ref names, for an AT (…) clause, a "t$kind"
// metadata table name or the session's WAP branch.
func (p *Planner) pinInput(ctx context.Context, s Session, ref catalog.TableRef, at node) (*pinnedInput, error) {
	base, kind := splitMetaTable(ref.Table)
	if kind != "" {
		ref.Table = base
	}
	pinned, err := p.opts.Mounts.LoadTable(ctx, ref)
	if err != nil {
		if errors.Is(err, catalog.ErrTableNotFound) || errors.Is(err, catalog.ErrCatalogNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return nil, err
	}
	out := &pinnedInput{Pinned: pinned, meta: kind}
	if kind != "" {
		if at != nil {
			return nil, fmt.Errorf("%w: AT (…) on metadata table %s$%s", ErrUnsupported, ref, kind)
		}
		return out, nil
	}
	if at == nil {
		b := sessionBranch(s, pinned.Table)
		if b == "" {
			return out, nil
		}
		at = versionAt(b)
	}
	snap, err := snapshotAt(pinned.Table, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	tbl, err := asOfSnapshot(pinned.Table, snap)
	if err != nil {
		return nil, fmt.Errorf("%w: %s at snapshot %d: %v", ErrInvalid, ref, snap, err)
	}
	cp := *pinned
	cp.Table = tbl
	out.Pinned = &cp
	out.snapshot = snap
	return out, nil
}

// snapshotAt resolves an AT clause: VERSION => snapshot id, branch or tag
// name; TIMESTAMP => the snapshot current at that time.
func snapshotAt(tbl *table.Table, at node) (int64, error) {
	unit := strings.ToUpper(str(at, "unit"))
	expr, _ := at["expr"].(node)
	val, typ, ok := atConstant(expr)
	if !ok {
		return 0, fmt.Errorf("%w: AT (%s => …) takes a constant", ErrUnsupported, unit)
	}
	switch unit {
	case "VERSION":
		if typ == "VARCHAR" {
			if snap := tbl.SnapshotByName(val); snap != nil {
				return snap.SnapshotID, nil
			}
			if _, err := strconv.ParseInt(val, 10, 64); err != nil {
				return 0, fmt.Errorf("%w: no branch or tag %q", ErrNotFound, val)
			}
		}
		id, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: AT (VERSION => %s): want a snapshot id, branch or tag", ErrInvalid, val)
		}
		if tbl.SnapshotByID(id) == nil {
			return 0, fmt.Errorf("%w: no snapshot %d", ErrNotFound, id)
		}
		return id, nil
	case "TIMESTAMP":
		ts, err := AtTimestamp(val, typ)
		if err != nil {
			return 0, fmt.Errorf("%w: AT (TIMESTAMP => %s): %v", ErrInvalid, val, err)
		}
		snap := tbl.SnapshotAsOf(ts.UnixMilli(), true)
		if snap == nil {
			return 0, fmt.Errorf("%w: no snapshot at or before %s", ErrNotFound, ts.UTC().Format(time.RFC3339Nano))
		}
		return snap.SnapshotID, nil
	default:
		return 0, fmt.Errorf("%w: AT (%s => …)", ErrUnsupported, unit)
	}
}

// atConstant returns a constant expression's value as text and its type: a
// literal, or a cast of one (TIMESTAMP '…').
func atConstant(expr node) (val, typ string, ok bool) {
	if expr == nil {
		return "", "", false
	}
	switch str(expr, "class") {
	case "CONSTANT":
		v, _ := expr["value"].(node)
		if v == nil || v["is_null"] == true {
			return "", "", false
		}
		t, _ := v["type"].(node)
		typ = str(t, "id")
		switch x := v["value"].(type) {
		case string:
			return x, typ, true
		case json.Number:
			return x.String(), typ, true
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), typ, true
		}
	case "CAST":
		child, _ := expr["child"].(node)
		v, _, ok := atConstant(child)
		ct, _ := expr["cast_type"].(node)
		return v, str(ct, "id"), ok
	}
	return "", "", false
}

// AtTimestamp reads a timestamp literal s of DuckDB type typ (a number of
// milliseconds for other types); one without a zone is UTC.
func AtTimestamp(s, typ string) (time.Time, error) {
	if typ != "VARCHAR" && typ != "TIMESTAMP" && typ != "TIMESTAMP WITH TIME ZONE" && typ != "TIMESTAMP_TZ" && typ != "DATE" {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.UnixMilli(ms), nil
		}
	}
	for _, layout := range []string{
		time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a timestamp")
}

// asOfSnapshot returns tbl as a table whose current snapshot and schema are
// snapshot id's. Only planning reads it; nothing commits through it.
func asOfSnapshot(tbl *table.Table, id int64) (*table.Table, error) {
	snap := tbl.SnapshotByID(id)
	if snap == nil {
		return nil, fmt.Errorf("no snapshot %d", id)
	}
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if snap.SchemaID != nil {
		if err := b.SetCurrentSchemaID(*snap.SchemaID); err != nil {
			return nil, err
		}
	}
	if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	fsF := func(ctx context.Context) (icebergio.IO, error) { return tbl.FS(ctx) }
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), fsF, nil), nil
}

// inputSchema is the Arrow schema an input's view has.
func inputSchema(ctx context.Context, in *input) (*arrow.Schema, error) {
	if in.meta != "" {
		return metaTableSchema(ctx, in.pinned.Table, in.meta)
	}
	return catalog.ScanSchema(in.pinned.Table, 0, in.cols)
}

// pinRef checks SELECT on the table ref names and pins it (see
// pinInput). When no table has that
// name and the reference is Spark's spelling of a branch or tag
// (t.branch_b, t.tag_v, without an AT clause), it pins that table at that
// ref instead; raw are the reference's catalog, schema and table as
// written (empty when left out). It returns the reference and AT clause it
// pinned.
func (p *Planner) pinRef(ctx context.Context, s Session, ref catalog.TableRef, raw []string, at node) (catalog.TableRef, node, *pinnedInput, error) {
	pinned, err := p.authorizedPin(ctx, s, ref, at)
	if err == nil || !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrDenied) || at != nil {
		return ref, at, pinned, err
	}
	var parts []string
	for _, r := range raw {
		if r != "" {
			parts = append(parts, r)
		}
	}
	tableParts, name, ok := sparkRefName(parts, true)
	if !ok {
		return ref, at, nil, err
	}
	alt, aerr := TableName(s, tableParts)
	if aerr != nil {
		return ref, at, nil, err
	}
	at = versionAt(name)
	pinned, aerr = p.authorizedPin(ctx, s, alt, at)
	if aerr != nil {
		if errors.Is(aerr, ErrNotFound) {
			if errors.Is(err, ErrDenied) {
				return ref, nil, nil, err
			}
			return ref, nil, nil, fmt.Errorf("%w (nor a branch or tag %q of %s)", err, name, alt)
		}
		return ref, nil, nil, aerr
	}
	return alt, at, pinned, nil
}

// sparkRefName reads Spark's spelling of a branch or tag read (t.branch_b,
// schema.t.tag_v): parts name a table plus a last part branch_<name> or
// tag_<name>. It returns the table's parts and the ref name.
func sparkRefName(parts []string, tags bool) (tableParts []string, ref string, ok bool) {
	if len(parts) < 2 {
		return nil, "", false
	}
	last := parts[len(parts)-1]
	prefixes := []string{"branch_"}
	if tags {
		prefixes = append(prefixes, "tag_")
	}
	for _, prefix := range prefixes {
		if len(last) > len(prefix) && strings.EqualFold(last[:len(prefix)], prefix) {
			return parts[:len(parts)-1], last[len(prefix):], true
		}
	}
	return nil, "", false
}

// versionAt is the AT clause node of AT (VERSION => 'name').
func versionAt(name string) node {
	return node{"unit": "VERSION", "expr": node{"class": "CONSTANT",
		"value": node{"is_null": false, "type": node{"id": "VARCHAR"}, "value": name}}}
}

// WAPEnabledKey is the table property that lets a session's wap branch
// (write-audit-publish) take the table's writes and reads.
const WAPEnabledKey = "write.wap.enabled"

// sessionBranch is the branch a session reads and writes tbl on: its WAP
// branch when the table enables WAP and the branch exists; "" is main.
func sessionBranch(s Session, tbl *table.Table) string {
	if s.WAPBranch == "" || tbl.Properties().Get(WAPEnabledKey, "false") != "true" {
		return ""
	}
	if r, ok := commit.FindRef(tbl, s.WAPBranch); ok && r.SnapshotRefType == table.BranchRef {
		return s.WAPBranch
	}
	return ""
}
