package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/icefloe/icefloe/internal/auth"
	"slices"
	"strings"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// Views are stored as Iceberg views in the catalogs that keep them
// (catalog.Mount.Views) and expanded at planning: a reference to a view
// becomes a subquery of the view's SQL, whose unqualified names resolve in
// the view's own catalog and schema. The reader needs SELECT on the view
// (checked as for a table, before the lookup) and on every table the view
// reads (invoker's rights, Trino's SECURITY INVOKER): a view never lends
// its creator's grants.

// maxViewDepth bounds views over views; a cycle ends there too.
const maxViewDepth = 16

// Views returns the view operations of ref's catalog, or
// ErrUnsupported naming it. The caller authorizes each step.
func (p *Planner) Views(ref catalog.TableRef) (catalog.Views, error) {
	mt, err := p.Mount(ref.Catalog)
	if err != nil {
		return nil, err
	}
	v, err := mt.Views()
	if err != nil {
		return nil, fmt.Errorf("%w: views in %s: %w", ErrUnsupported, ref.Catalog, err)
	}
	return v, nil
}

// expandView turns the table reference n, which named no table, into a
// subquery of the view ref names, and resolves the view's query in the
// view's catalog and schema. ok is false when ref names no view (or its
// catalog keeps none): the caller reports the missing table.
func (r *resolver) expandView(ctx context.Context, n node, ref catalog.TableRef) (ok bool) {
	views, err := r.p.Views(ref)
	if err != nil {
		return false
	}
	v, err := views.LoadView(ctx, ref.Ident())
	if err != nil {
		return false
	}
	if rs := r.p.restriction(ctx, ref); rs != nil {
		// The filter and masks are written over a table's columns.
		r.err = restrictedError(ref, rs, auth.Name(ctx), "row filters and column masks apply to tables, and a grant that restricts a view refuses it (grant SELECT on the view plainly; its tables' own filters still apply)")
		return true
	}
	for _, seen := range r.viewPath {
		if seen == ref {
			r.err = fmt.Errorf("%w: view %s refers to itself", ErrInvalid, ref)
			return true
		}
	}
	if len(r.viewPath) >= maxViewDepth {
		r.err = fmt.Errorf("%w: views nest deeper than %d at %s", ErrUnsupported, maxViewDepth, ref)
		return true
	}
	vs := Session{Catalog: v.DefaultCatalog, Schema: strings.Join(v.DefaultNamespace, ".")}
	if vs.Schema == "" {
		vs.Schema = ref.Schema
	}
	text, err := r.p.serializeView(ctx, r.conn, v.SQL)
	var ast *parsed
	if err == nil {
		ast, err = parseAST(text)
	}
	if err == nil {
		substituteSession(ast, vs)
		err = refuseEscapes(ast)
	}
	if err != nil {
		r.err = fmt.Errorf("view %s: %w", ref, err)
		return true
	}
	alias := str(n, "alias")
	if alias == "" {
		alias = ref.Table
	}
	for k := range n {
		delete(n, k)
	}
	n["type"], n["alias"], n["sample"], n["subquery"], n["column_name_alias"] = "SUBQUERY", alias, nil, ast.root, []any{}
	n["query_location"] = json.Number("18446744073709551615") // none, as DuckDB writes it
	outer := r.s
	r.s = vs
	r.viewPath = append(r.viewPath, ref)
	r.visit(ctx, ast.root, nil)
	r.viewPath = r.viewPath[:len(r.viewPath)-1]
	r.s = outer
	return true
}

// viewNames lists the views of cat.schema the caller may see, sorted;
// none when the catalog keeps no views.
func (p *Planner) viewNames(ctx context.Context, cat, schema string) ([]string, error) {
	views, err := p.Views(catalog.TableRef{Catalog: cat, Schema: schema})
	if err != nil {
		return nil, nil
	}
	var out []string
	for ident, err := range views.ListViews(ctx, strings.Split(schema, ".")) {
		if err != nil {
			return nil, fmt.Errorf("list views of %s.%s: %w", cat, schema, err)
		}
		if len(ident) == 0 {
			continue
		}
		ref := catalog.TableRef{Catalog: cat, Schema: schema, Table: ident[len(ident)-1]}
		if p.opts.Policy.CanSee(ctx, authz.TableObject(ref)) {
			out = append(out, ref.Table)
		}
	}
	slices.Sort(out)
	return out, nil
}
