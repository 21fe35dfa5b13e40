package planner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/suggest"
)

// Name resolution as DuckDB and Trino do it: an unquoted name matches a
// catalog, schema or table whose name differs only in case when no name
// matches exactly; two such names are ambiguous. A quoted name matches only
// as written. Resolution lists only what the caller may see (the mounted
// catalogs are guarded), so neither a match nor a suggestion tells of a
// table the caller cannot see.

// UserError is an error whose message is written for the person who sent
// the statement: Error() keeps the package's sentinel prefix for logs,
// UserMessage() is what the client is shown.
type UserError struct {
	Kind error
	Msg  string
}

func (e *UserError) Error() string { return e.Kind.Error() + ": " + e.Msg }

// Unwrap returns the sentinel the error is classified by.
func (e *UserError) Unwrap() error { return e.Kind }

// UserMessage is the message without the package prefixes.
func (e *UserError) UserMessage() string { return e.Msg }

func userErrorf(kind error, format string, args ...any) error {
	return &UserError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// matchName picks the name among candidates that name refers to: itself
// if present, else (unless quoted) the one candidate equal to it but for
// case. It returns "" and the candidates that match but for case when
// that is not exactly one.
func matchName(name string, quoted bool, candidates []string) (string, []string) {
	if slices.Contains(candidates, name) {
		return name, nil
	}
	if quoted {
		return "", nil
	}
	var folded []string
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			folded = append(folded, c)
		}
	}
	if len(folded) == 1 {
		return folded[0], nil
	}
	return "", folded
}

// pick resolves one part of a name among candidates, or says why not.
func pick(kind, name, where string, quoted bool, candidates []string) (string, error) {
	got, folded := matchName(name, quoted, candidates)
	if got != "" {
		return got, nil
	}
	if len(folded) > 1 {
		slices.Sort(folded)
		return "", userErrorf(ErrInvalid, "%s name %s is ambiguous%s: it matches %s; quote the name to choose one",
			kind, name, where, quoteList(folded))
	}
	msg := fmt.Sprintf("%s %s does not exist%s", kind, name, where)
	if s := suggest.Nearest(name, candidates); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return "", &UserError{Kind: ErrNotFound, Msg: msg}
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = engine.Quote(n)
	}
	return strings.Join(q, " and ")
}

// visibleCatalogs are the mounted catalogs the caller may see.
func (p *Planner) visibleCatalogs(ctx context.Context) []string {
	var out []string
	for _, name := range p.opts.Mounts.Names() {
		if p.opts.Policy.CanSee(ctx, authz.Object{name}) {
			out = append(out, name)
		}
	}
	return out
}

// resolveCatalog resolves a catalog name.
func (p *Planner) resolveCatalog(ctx context.Context, name string, quoted bool) (string, error) {
	return pick("catalog", name, "", quoted, p.visibleCatalogs(ctx))
}

// schemaNames lists the schemas of a catalog the caller may see.
func (p *Planner) schemaNames(ctx context.Context, cat string) ([]string, error) {
	mt, err := p.opts.Mounts.Get(cat)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	nss, err := mt.Catalog.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list schemas of catalog %s: %w", cat, err)
	}
	out := make([]string, 0, len(nss))
	for _, ns := range nss {
		out = append(out, strings.Join(ns, "."))
	}
	slices.Sort(out)
	return out, nil
}

// resolveSchema resolves cat.schema, cat already resolved.
func (p *Planner) resolveSchema(ctx context.Context, cat, schema string, quoted bool) (string, error) {
	names, err := p.schemaNames(ctx, cat)
	if err != nil {
		return "", err
	}
	return pick("schema", schema, " in catalog "+cat, quoted, names)
}

// tableNames lists the tables of cat.schema the caller may see.
func (p *Planner) tableNames(ctx context.Context, cat, schema string) ([]string, error) {
	mt, err := p.opts.Mounts.Get(cat)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var out []string
	for ident, err := range mt.Catalog.ListTables(ctx, strings.Split(schema, ".")) {
		if err != nil {
			return nil, fmt.Errorf("list tables of %s.%s: %w", cat, schema, err)
		}
		if len(ident) > 0 {
			out = append(out, ident[len(ident)-1])
		}
	}
	slices.Sort(out)
	return out, nil
}

// resolveRef resolves each part of ref in turn, so the error names the
// first part that matches nothing: a wrong schema is a missing schema.
// quoted holds the names the statement quoted.
func (p *Planner) resolveRef(ctx context.Context, ref catalog.TableRef, quoted map[string]bool) (catalog.TableRef, error) {
	var err error
	if ref.Catalog, err = p.resolveCatalog(ctx, ref.Catalog, quoted[ref.Catalog]); err != nil {
		return ref, err
	}
	if ref.Schema, err = p.resolveSchema(ctx, ref.Catalog, ref.Schema, quoted[ref.Schema]); err != nil {
		return ref, err
	}
	base, kind := splitMetaTable(ref.Table)
	names, err := p.tableNames(ctx, ref.Catalog, ref.Schema)
	if err != nil {
		return ref, err
	}
	if base, err = pick("table", base, " in schema "+ref.Catalog+"."+ref.Schema, quoted[ref.Table], names); err != nil {
		return ref, err
	}
	ref.Table = base
	if kind != "" {
		ref.Table = base + "$" + kind
	}
	return ref, nil
}

// pin authorizes and pins the table ref names. A name the catalog does not
// hold as written is resolved (resolveRef) and pinned as resolved; the
// returned ref is the one pinned.
func (r *resolver) pin(ctx context.Context, ref catalog.TableRef, raw []string, at node) (catalog.TableRef, node, *pinnedInput, error) {
	ref2, at2, pinned, err := r.p.pinRef(ctx, r.s, ref, raw, at)
	if err == nil || !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrDenied) {
		return ref2, at2, pinned, err
	}
	canon, rerr := r.p.resolveRef(ctx, ref, r.b.quoted)
	switch {
	case rerr != nil && errors.Is(err, ErrDenied):
		return ref, at, nil, err
	case rerr != nil:
		return ref, at, nil, rerr
	case canon == ref:
		return ref, at, nil, err
	}
	pinned, err = r.p.authorizedPin(ctx, r.s, canon, at)
	return canon, at, pinned, err
}

// authorizedPin checks SELECT on the table, then pins it: a metadata
// table (t$snapshots) or an older version is still t.
func (p *Planner) authorizedPin(ctx context.Context, s Session, ref catalog.TableRef, at node) (*pinnedInput, error) {
	base := ref
	base.Table, _ = splitMetaTable(ref.Table)
	if err := p.Authorize(ctx, authz.TableObject(base), authz.Select); err != nil {
		return nil, err
	}
	return p.pinInput(ctx, s, ref, at)
}

// rewrittenName matches the names the rewrite gives tables and CTEs.
var rewrittenName = regexp.MustCompile(`__icefloe_[tc][0-9]+`)

// userText rewrites a DuckDB message about the rewritten query into the
// user's terms: each view or CTE is called what the statement called it,
// and the quoted line of rewritten SQL (which the user never wrote) goes.
func (b *bound) userText(msg string) string {
	msg = engine.WithoutExcerpt(msg)
	return rewrittenName.ReplaceAllStringFunc(msg, func(v string) string {
		if name, ok := b.names[v]; ok {
			return name
		}
		return v
	})
}

// ExistingSchema resolves the catalog and schema of a table (or view)
// about to be made, when they exist but are written in another case; otherwise ref
// stays as it is and the statement fails where it would have.
func (p *Planner) ExistingSchema(ctx context.Context, ref catalog.TableRef) catalog.TableRef {
	cat, err := p.resolveCatalog(ctx, ref.Catalog, false)
	if err != nil {
		return ref
	}
	sch, err := p.resolveSchema(ctx, cat, ref.Schema, false)
	if err != nil {
		return ref
	}
	ref.Catalog, ref.Schema = cat, sch
	return ref
}

// loadTable loads ref as written or, when the catalog has no table so
// written, as resolveRef resolves it; it returns the ref it loaded.
func (p *Planner) loadTable(ctx context.Context, ref catalog.TableRef) (catalog.TableRef, *catalog.Pinned, error) {
	pinned, err := p.opts.Mounts.LoadTable(ctx, ref)
	if err == nil || !errors.Is(err, catalog.ErrTableNotFound) && !errors.Is(err, catalog.ErrCatalogNotFound) {
		return ref, pinned, err
	}
	canon, rerr := p.resolveRef(ctx, ref, nil)
	if rerr != nil {
		return ref, nil, rerr
	}
	if canon == ref {
		return ref, nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	pinned, err = p.opts.Mounts.LoadTable(ctx, canon)
	if err != nil && errors.Is(err, catalog.ErrTableNotFound) {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return canon, pinned, err
}
