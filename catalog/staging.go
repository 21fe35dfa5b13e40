package catalog

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// A statement that makes a table (CREATE TABLE … AS, bulk ingest create,
// a replace that changes the table's shape) makes it under a staging
// name, fills and commits it there, and only then renames it to its
// name: the table appears with its rows or not at all. Staging tables are
// left out of every listing, and the ones a crashed coordinator left are
// dropped with their files at the next start (DropStaging).

// stagingMarker is what a staging table's name holds after the name it
// will get.
const stagingMarker = "__icefloe_staging_"

// StagingName is a fresh staging name for a table to be called name.
func StagingName(name string) string { return name + stagingMarker + uuid.NewString()[:8] }

// IsStaging tells whether a table name is a staging name.
func IsStaging(name string) bool { return strings.Contains(name, stagingMarker) }

// hideStaging leaves staging tables out of c's listings.
type hideStaging struct{ icecat.Catalog }

func (c hideStaging) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		for ident, err := range c.Catalog.ListTables(ctx, ns) {
			if err == nil && len(ident) > 0 && IsStaging(ident[len(ident)-1]) {
				continue
			}
			if !yield(ident, err) {
				return
			}
		}
	}
}

// PurgeTable purges where the catalog can, else drops.
func (c hideStaging) PurgeTable(ctx context.Context, ident table.Identifier) error {
	if pc, ok := c.Catalog.(icecat.PurgeableTable); ok {
		return pc.PurgeTable(ctx, ident)
	}
	return c.Catalog.DropTable(ctx, ident)
}

// PurgeStaging drops a staging table and deletes its files: it was made
// under a fresh name, so nothing else lives at its location. A REST
// server deletes the files itself.
func PurgeStaging(ctx context.Context, cat icecat.Catalog, ident table.Identifier) error {
	if cat.CatalogType() == icecat.REST {
		if pc, ok := cat.(icecat.PurgeableTable); ok {
			if err := pc.PurgeTable(ctx, ident); err != nil && !gone(err) {
				return err
			}
			return nil
		}
	}
	tbl, lerr := cat.LoadTable(ctx, ident)
	if err := cat.DropTable(ctx, ident); err != nil && !gone(err) {
		return err
	}
	if lerr == nil {
		// Best effort: the table is gone either way.
		_ = tbl.PurgeFiles(ctx)
	}
	return nil
}

// Staged is a staging table of a mounted catalog.
type Staged struct {
	Mount *Mount
	Ident table.Identifier
}

func (s Staged) String() string { return s.Mount.Name + "." + strings.Join(s.Ident, ".") }

// Staging lists the staging tables in the top-level schemas of every
// mounted catalog, which listings leave out; a catalog or schema that
// fails to list is skipped.
func (m *Mounts) Staging(ctx context.Context) []Staged {
	var out []Staged
	for _, name := range m.Names() {
		mt, err := m.Get(name)
		if err != nil {
			continue
		}
		nss, err := mt.raw.ListNamespaces(ctx, nil)
		if err != nil {
			continue
		}
		for _, ns := range nss {
			for ident, err := range mt.raw.ListTables(ctx, ns) {
				if err != nil {
					break
				}
				if len(ident) > 0 && IsStaging(ident[len(ident)-1]) {
					out = append(out, Staged{Mount: mt, Ident: ident})
				}
			}
		}
	}
	return out
}

// gone tells an error saying there is no such table (or schema).
func gone(err error) bool {
	return errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace)
}

// DropStaging purges the staging tables (Staging) whose metadata was last
// written more than grace ago, and returns them: a statement still filling
// one writes its metadata when it commits, then renames it at once. A
// table that fails to load or drop is skipped.
func (m *Mounts) DropStaging(ctx context.Context, grace time.Duration) []Staged {
	var dropped []Staged
	for _, st := range m.Staging(ctx) {
		tbl, err := st.Mount.raw.LoadTable(ctx, st.Ident)
		if err != nil || time.Since(time.UnixMilli(tbl.Metadata().LastUpdatedMillis())) < grace {
			continue
		}
		if PurgeStaging(ctx, st.Mount.raw, st.Ident) == nil {
			dropped = append(dropped, st)
		}
	}
	return dropped
}
