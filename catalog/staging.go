package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
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

// PurgeStaging drops a staging table and deletes the files it
// references: the statement that made it wrote each of them under a
// fresh name (its metadata, manifests and data files), so no other table
// holds one; files under its location that it does not reference are
// left to that statement's own cleanup (its write prefix). The table is
// dropped, not purged by the catalog: a catalog's purge may walk the
// location, and no folder is taken as the staging table's alone.
func PurgeStaging(ctx context.Context, cat icecat.Catalog, ident table.Identifier) error {
	tbl, lerr := cat.LoadTable(ctx, ident)
	if err := cat.DropTable(ctx, ident); err != nil && !gone(err) {
		return err
	}
	if lerr != nil {
		return nil
	}
	var files []string
	// Best effort: the table is gone either way.
	_ = tableRefs(ctx, tbl, true, func(loc string) { files = append(files, loc) })
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil
	}
	_, _ = removeFiles(ctx, fsys, files)
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

// DropStaging drops the staging tables (Staging) whose metadata was
// last written more than grace ago, with their files, and returns them:
// a statement still filling one writes its metadata when it commits,
// then renames it at once. A staging table that holds a commit while no
// table has its name is a statement that committed and died before its
// rename (a replace between dropping the old table and renaming the new
// one): it is renamed instead, and returned with Finished set. A table
// that fails to load, drop or rename is skipped.
//
// The files deleted are those a dropped table references and, when its
// location is its own (no other table's place is, holds or lies in it),
// those under its location older than grace — less every file any other
// table of any mounted catalog references (Unreferenced): a coordinator
// of an earlier version killed between a replace's commit and its drop
// of the staging table left one whose files the replaced table holds.
// When that cannot be told (ErrIncomplete), no table is dropped and the
// error says why: they are left for the next start.
func (m *Mounts) DropStaging(ctx context.Context, grace time.Duration) ([]Staged, error) {
	var done []Staged
	var doomed []*purge
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
					done = append(done, st)
				}
				continue
			}
		}
		doomed = append(doomed, &purge{mt: st.Mount, ident: st.Ident, tbl: tbl, st: st})
	}
	if len(doomed) == 0 {
		return done, nil
	}
	if err := m.planPurges(ctx, doomed, grace); err != nil {
		return done, err
	}
	for _, p := range doomed {
		if p.run(ctx, func() error { return p.mt.raw.DropTable(ctx, p.ident) }) == nil {
			done = append(done, p.st)
		}
	}
	return done, nil
}

// purge is the deletion of one table's files as the table leaves its
// catalog: the data, manifests and the rest first, then the drop, then
// its metadata files, so a purge cut short either leaves the table to
// purge again or a folder of metadata files alone (which
// SweepStagingFolders removes).
type purge struct {
	mt    *Mount
	ident table.Identifier
	tbl   *table.Table
	st    Staged
	// files and meta are the files to delete, the metadata files apart.
	files, meta []string
}

// planPurges finds the files of each purge: those its table references
// and, where its location is its own, those under it older than grace,
// less those any table not being purged references.
func (m *Mounts) planPurges(ctx context.Context, ps []*purge, grace time.Duration) error {
	owners, err := m.Owners(ctx)
	if err != nil {
		return err
	}
	var all []string
	for _, p := range ps {
		var cand []string
		_ = tableRefs(ctx, p.tbl, true, func(loc string) { cand = append(cand, loc) })
		self := func(o Owner) bool { return o.Is(p.mt.Name, p.ident) }
		if owners.Free(PlacesOf(p.tbl.Location(), p.tbl.Properties()), self) == nil {
			cand = append(cand, olderFiles(ctx, p.tbl, p.tbl.Location(), grace)...)
		}
		p.files = dedupe(cand)
		all = append(all, p.files...)
	}
	unref, err := m.Unreferenced(ctx, all, func(mount string, ident table.Identifier) bool {
		for _, p := range ps {
			if p.mt.Name == mount && strings.Join(p.ident, "\x00") == strings.Join(ident, "\x00") {
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	free := map[string]bool{}
	for _, f := range unref {
		free[f] = true
	}
	for _, p := range ps {
		var files, meta []string
		for _, f := range p.files {
			switch {
			case !free[f]:
			case strings.HasSuffix(f, ".metadata.json"):
				meta = append(meta, f)
			default:
				files = append(files, f)
			}
		}
		if p.tbl.Properties().Get("gc.enabled", "true") == "false" {
			files = nil // the table keeps its files: only its metadata goes
		}
		p.files, p.meta = files, meta
	}
	return nil
}

// run deletes p's files, drops the table with drop, then deletes its
// metadata files; a failed drop keeps the metadata files.
func (p *purge) run(ctx context.Context, drop func() error) error {
	fsys, err := p.tbl.FS(ctx)
	if err != nil {
		return err
	}
	if _, err := removeFiles(ctx, fsys, p.files); err != nil {
		return err
	}
	if err := drop(); err != nil && !gone(err) {
		return err
	}
	_, err = removeFiles(ctx, fsys, p.meta)
	return err
}

// PurgeFiles deletes the files of tbl, the table ident of mt that the
// caller just dropped (DROP TABLE … PURGE), as DropStaging deletes a
// staging table's (every file under its location when the location is
// its own), less every file another table references; it returns how
// many it deleted. ErrIncomplete means nothing was deleted.
func (m *Mounts) PurgeFiles(ctx context.Context, mt *Mount, ident table.Identifier, tbl *table.Table) (int, error) {
	p := &purge{mt: mt, ident: ident, tbl: tbl}
	if err := m.planPurges(ctx, []*purge{p}, 0); err != nil {
		return 0, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	return removeFiles(ctx, fsys, append(p.files, p.meta...))
}

// DropPurge drops the table ident of mt through the catalog as clients
// use it (mt.Catalog: behind the guard, which checks DROP) and deletes its
// files: a REST catalog deletes them itself (its purge), every other
// kind's are deleted here by PurgeFiles, only those no other table
// references, the folder listed only when no other table's place is,
// holds or lies in it. SQL's DROP TABLE … PURGE and the REST catalog's
// purgeRequested drop both come here. A table dropped whose files could
// not all be deleted is an error saying so.
func (m *Mounts) DropPurge(ctx context.Context, mt *Mount, ident table.Identifier) error {
	cat := mt.Catalog
	if cat.CatalogType() == icecat.REST {
		if pc, ok := cat.(icecat.PurgeableTable); ok {
			return pc.PurgeTable(ctx, ident)
		}
		return cat.DropTable(ctx, ident)
	}
	// Drop, then delete the files here, so a failed delete is an error
	// the client sees rather than a log line.
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	if err := cat.DropTable(ctx, ident); err != nil {
		return err
	}
	if _, err := m.PurgeFiles(ctx, mt, ident, tbl); err != nil {
		return fmt.Errorf("table %s.%s was dropped but deleting its files failed: %w", mt.Name, strings.Join(ident, "."), err)
	}
	return nil
}

// olderFiles lists the regular files under loc modified more than grace
// ago: on disk for a local location, else through the table's IO when
// it can list. A listing that fails gives what it found so far.
func olderFiles(ctx context.Context, tbl *table.Table, loc string, grace time.Duration) []string {
	since := time.Now().Add(-grace)
	var out []string
	if root, ok := LocalPath(loc); ok {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if info, err := d.Info(); err == nil && info.ModTime().Before(since) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return nil
	}
	_ = lister.WalkDir(strings.TrimSuffix(loc, "/"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(since) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// removeFiles deletes files (local ones on disk, others through fsys)
// and returns how many it deleted; a file already gone counts as
// deleted.
func removeFiles(ctx context.Context, fsys iceio.IO, files []string) (int, error) {
	n := 0
	var errs []error
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		var err error
		if lp, ok := LocalPath(f); ok {
			err = os.Remove(lp)
		} else {
			err = fsys.Remove(f)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func dedupe(files []string) []string {
	seen := map[string]bool{}
	out := files[:0]
	for _, f := range files {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// stagingTarget is the name a staging table was to get.
func stagingTarget(ident table.Identifier) table.Identifier {
	out := append(table.Identifier(nil), ident...)
	name := out[len(out)-1]
	out[len(out)-1] = name[:strings.Index(name, stagingMarker)]
	return out
}

// SweepStagingFolders removes, in the local folder of every schema of
// every mounted catalog, the folders a create that died before its
// catalog entry was made left: a folder named as a staging table's or as
// a table location icefloe makes (TableLocation), that no table's or
// view's place is, holds or lies in, holding nothing but table metadata
// files (*.metadata.json: the catalog writes a new table's first one
// before its entry), all older than grace and referenced by no table
// (Unreferenced). Anything else in such a folder — a data file, a
// manifest — keeps it: it may be a dropped table's, kept by DROP TABLE
// without PURGE. It returns the folders removed; ErrIncomplete means
// none was (not every table could be seen).
func (m *Mounts) SweepStagingFolders(ctx context.Context, grace time.Duration) ([]string, error) {
	type folder struct {
		path  string
		files []string
	}
	var found []folder
	var owners *Owners
	for mt, ns := range m.schemas(ctx) {
		dir, ok := LocalPath(mt.SchemaFolder(ctx, ns))
		if !ok {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() || !IsStaging(e.Name()) && !isTableFolder(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			files, ok := metadataOnly(path, grace)
			if !ok {
				continue
			}
			if owners == nil {
				var err error
				if owners, err = m.Owners(ctx); err != nil {
					return nil, err
				}
			}
			if owners.Free([]string{path}, nil) != nil {
				continue
			}
			found = append(found, folder{path, files})
		}
	}
	var all []string
	for _, f := range found {
		all = append(all, f.files...)
	}
	unref, err := m.Unreferenced(ctx, all, nil)
	if err != nil {
		return nil, err
	}
	free := map[string]bool{}
	for _, f := range unref {
		free[f] = true
	}
	var removed []string
	for _, f := range found {
		if slices.ContainsFunc(f.files, func(p string) bool { return !free[p] }) {
			continue
		}
		n, err := removeFiles(ctx, nil, f.files)
		removeEmptyDirs(f.path)
		// Empty folders are what purging a staging table leaves: tidied,
		// not reported.
		if err == nil && n > 0 {
			removed = append(removed, f.path)
		}
	}
	return removed, nil
}

// metadataOnly lists the files under dir and tells whether they are all
// table metadata files (*.metadata.json) modified more than grace ago
// (and all could be read).
func metadataOnly(dir string, grace time.Duration) ([]string, bool) {
	since := time.Now().Add(-grace)
	var files []string
	ok := true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".metadata.json") || !info.ModTime().Before(since) {
			ok = false
			return fs.SkipAll
		}
		files = append(files, p)
		return nil
	})
	return files, ok && err == nil
}

// removeEmptyDirs removes dir and the folders under it that hold no file.
func removeEmptyDirs(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // fails, and keeps it, when not empty
	}
}
