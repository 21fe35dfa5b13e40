package catalog

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
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
// dropped with their files at the next start (DropStaging), as are the
// folders of those it left without a catalog entry (SweepStagingFolders).

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
	// Finished is set by DropStaging when it renamed the table to its
	// name rather than dropping it.
	Finished bool
}

func (s Staged) String() string { return s.Mount.Name + "." + strings.Join(s.Ident, ".") }

// Staging lists the staging tables in the top-level schemas of every
// mounted catalog, which listings leave out; a catalog or schema that
// fails to list is skipped.
func (m *Mounts) Staging(ctx context.Context) []Staged {
	var out []Staged
	for mt, ns := range m.schemas(ctx) {
		for ident, err := range mt.raw.ListTables(ctx, ns) {
			if err != nil {
				break
			}
			if len(ident) > 0 && IsStaging(ident[len(ident)-1]) {
				out = append(out, Staged{Mount: mt, Ident: ident})
			}
		}
	}
	return out
}

// schemas yields the top-level schemas of every mounted catalog; a
// catalog that fails to list them is skipped.
func (m *Mounts) schemas(ctx context.Context) iter.Seq2[*Mount, table.Identifier] {
	return func(yield func(*Mount, table.Identifier) bool) {
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
				if !yield(mt, ns) {
					return
				}
			}
		}
	}
}

// gone tells an error saying there is no such table (or schema).
func gone(err error) bool {
	return errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace)
}

// DropStaging purges the staging tables (Staging) whose metadata was last
// written more than grace ago, and returns them: a statement still filling
// one writes its metadata when it commits, then renames it at once. A
// staging table that holds a commit while no table has its name is a
// statement that committed and died before its rename (a replace between
// dropping the old table and renaming the new one): it is renamed instead,
// and returned with Finished set. A table that fails to load, drop or
// rename is skipped.
func (m *Mounts) DropStaging(ctx context.Context, grace time.Duration) []Staged {
	var dropped []Staged
	for _, st := range m.Staging(ctx) {
		tbl, err := st.Mount.raw.LoadTable(ctx, st.Ident)
		if err != nil || time.Since(time.UnixMilli(tbl.Metadata().LastUpdatedMillis())) < grace {
			continue
		}
		if tbl.CurrentSnapshot() != nil {
			target := stagingTarget(st.Ident)
			exists, err := st.Mount.raw.CheckTableExists(ctx, target)
			if err != nil {
				continue
			}
			if !exists {
				if _, err := st.Mount.raw.RenameTable(ctx, st.Ident, target); err == nil {
					st.Finished = true
					dropped = append(dropped, st)
				}
				continue
			}
		}
		if PurgeStaging(ctx, st.Mount.raw, st.Ident) == nil {
			dropped = append(dropped, st)
		}
	}
	return dropped
}

// stagingTarget is the name a staging table was to get.
func stagingTarget(ident table.Identifier) table.Identifier {
	out := append(table.Identifier(nil), ident...)
	name := out[len(out)-1]
	out[len(out)-1] = name[:strings.Index(name, stagingMarker)]
	return out
}

// SweepStagingFolders removes the folders of staging tables that no
// catalog entry holds, in the schemas of every mounted catalog whose
// tables live in a local folder, once nothing in them changed for grace:
// a coordinator killed while it created a staging table can leave the
// table's first metadata file (and its data files) without the catalog
// entry DropStaging would find. It returns the folders removed. A schema
// whose tables fail to list or load is left alone: what it holds cannot
// be told.
func (m *Mounts) SweepStagingFolders(ctx context.Context, grace time.Duration) []string {
	var removed []string
	for mt, ns := range m.schemas(ctx) {
		removed = append(removed, sweepSchema(ctx, mt, ns, grace)...)
	}
	return removed
}

// sweepSchema is SweepStagingFolders for one schema, whose folder is
// where the catalog puts its new tables: the schema's location, else
// <warehouse>/<schema>.db.
func sweepSchema(ctx context.Context, mt *Mount, ns table.Identifier, grace time.Duration) []string {
	loc, _ := url.JoinPath(mt.Props.Get("warehouse", ""), strings.Join(ns, ".")+".db")
	if props, err := mt.raw.LoadNamespaceProperties(ctx, ns); err == nil && props.Get("location", "") != "" {
		loc = props.Get("location", "")
	}
	dir, ok := localFolder(loc)
	if !ok {
		return nil
	}
	held := map[string]bool{}
	for ident, err := range mt.raw.ListTables(ctx, ns) {
		if err != nil {
			return nil
		}
		tbl, err := mt.raw.LoadTable(ctx, ident)
		if err != nil {
			return nil
		}
		if p, ok := localFolder(tbl.Metadata().Location()); ok {
			held[p] = true
		}
	}
	entries, _ := os.ReadDir(dir)
	var removed []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() || !IsStaging(e.Name()) || held[path] {
			continue
		}
		files, recent := filesIn(path, grace)
		if recent {
			continue
		}
		// Empty folders are what purging a staging table leaves: tidied,
		// not reported.
		if os.RemoveAll(path) == nil && files > 0 {
			removed = append(removed, path)
		}
	}
	return removed
}

// localFolder is the cleaned local path of a file:// (or bare) location;
// false for any other scheme.
func localFolder(loc string) (string, bool) {
	if loc == "" {
		return "", false
	}
	if u, err := url.Parse(loc); err == nil && u.Scheme != "" {
		if u.Scheme != "file" {
			return "", false
		}
		loc = u.Path
	}
	return filepath.Clean(filepath.FromSlash(loc)), true
}

// filesIn counts the files under dir and tells whether one of them was
// modified less than grace ago (or that cannot be told).
func filesIn(dir string, grace time.Duration) (files int, recent bool) {
	since := time.Now().Add(-grace)
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		if info.ModTime().After(since) {
			recent = true
			return fs.SkipAll
		}
		return nil
	})
	return files, recent || err != nil
}
