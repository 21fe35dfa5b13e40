package restcatalog

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/icefloe/icefloe/catalog"
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
// current metadata before any is committed; then each is committed
// through the one commit path, in order.
//
// The catalogs icefloe mounts commit one table at a time, so the changes
// do not land atomically: a change that fails after others landed is
// reported with the tables already committed (CommitStateUnknown, 500),
// one that fails first commits nothing (409).
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
	for _, c := range changes {
		if err := s.anyWrite(ctx, authz.TableObject(c.ref)); err != nil {
			return nil, err
		}
		p, err := s.opts.Mounts.LoadTable(ctx, c.ref)
		if err != nil {
			return nil, err
		}
		if _, _, err := s.authorize(ctx, c, p.Table); err != nil {
			return nil, err
		}
	}
	var done []string
	for _, c := range changes {
		if _, _, err := s.commit(ctx, c); err != nil {
			if len(done) == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s committed, then %s failed: %v", commit.ErrUnknown, strings.Join(done, ", "), c.ref, err)
		}
		done = append(done, c.ref.String())
	}
	return nil, nil
}
