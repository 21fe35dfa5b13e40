package restcatalog

import (
	"fmt"
	"net/http"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// MaxTransactionTables bounds the tables of one transactions/commit.
const MaxTransactionTables = 100

type transactionBody struct {
	TableChanges []commitTableBody `json:"table-changes"`
}

// commitTransaction answers POST /v1/{prefix}/transactions/commit: every
// change is authorized and its requirements checked against its table's
// current metadata, then all are committed at once through the catalog's
// atomic multi-table commit (commit.Tables over
// catalog.Mount.Transactional: one database transaction for the SQL
// catalogs, an upstream REST catalog's own transactions/commit), all or
// none. A catalog that commits one table at a time (Glue) takes a
// transaction of one table only: more is refused before anything is
// committed.
func (s *Server) commitTransaction(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	var body transactionBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if len(body.TableChanges) == 0 || len(body.TableChanges) > MaxTransactionTables {
		return nil, badRequest("a transaction commits 1 to %d tables, not %d", MaxTransactionTables, len(body.TableChanges))
	}
	ctx := commit.WithStatement(r.Context())
	changes := make([]change, len(body.TableChanges))
	seen := map[string]bool{}
	for i, tc := range body.TableChanges {
		if tc.Identifier == nil {
			return nil, badRequest("table-changes[%d] names no table", i)
		}
		ident, err := identOf(*tc.Identifier)
		if err != nil {
			return nil, err
		}
		ref := catalog.TableRef{Catalog: mt.Name, Schema: ident[0], Table: ident[1]}
		if seen[ref.String()] {
			return nil, badRequest("table %s changes twice in one transaction", ref)
		}
		seen[ref.String()] = true
		changes[i] = change{mt: mt, ref: ref, reqs: tc.Requirements, upds: tc.Updates}
		if changes[i].create() {
			return nil, fmt.Errorf("%w: a create (assert-create) in a transaction: commit it on its own", ErrUnsupported)
		}
	}
	if len(changes) == 1 {
		meta, _, err := s.commit(ctx, changes[0])
		if err == nil {
			audit.From(ctx).Wrote(changes[0].ref.String(), snapshotOf(meta))
		}
		return nil, err
	}
	tc, err := mt.Transactional()
	if err != nil {
		return nil, fmt.Errorf("%w: %w: commit each table on its own", ErrUnsupported, err)
	}
	reqs := make([]commit.Request, len(changes))
	for i, c := range changes {
		if err := s.anyWrite(ctx, authz.TableObject(c.ref)); err != nil {
			return nil, err
		}
		p, err := s.opts.Mounts.LoadTable(ctx, c.ref)
		if err != nil {
			return nil, err
		}
		reqs[i] = s.request(ctx, c, p.Table, c.mt.Catalog)
	}
	if err := commit.Tables(ctx, reqs, tc); err != nil {
		return nil, err
	}
	for _, c := range changes {
		var snap int64
		if p, err := s.opts.Mounts.LoadTable(ctx, c.ref); err == nil {
			snap = snapshotOf(p.Table.Metadata())
		}
		audit.From(ctx).Wrote(c.ref.String(), snap)
	}
	return nil, nil
}
