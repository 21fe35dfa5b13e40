package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog/tablecrypt"
)

// A table owns its places: its location and every folder a property of
// it sends files to (write.data.path, write.metadata.path, …; every key
// PlacesFiles names). No place of a table may be, hold or lie in a place
// of another table, and none may be or hold a schema's folder or a
// warehouse: that is what lets a table's housekeeping (remove_orphan_files,
// DROP TABLE … PURGE, the sweep of what a crash left) list its folder and
// know that what it finds there is its own or nobody's. Owners answers
// whether a location is free; Unreferenced which files no table reads.
// Both look at every table (staging ones too) and view of every schema of
// every mounted catalog, and fail rather than answer from a partial view:
// a caller that deletes files must not go on from one.

// ErrTaken: a location is, holds or lies in another table's place, or
// is or holds a schema's folder or a warehouse.
var ErrTaken = errors.New("catalog: location belongs to another table")

// ErrIncomplete: not every table of every mounted catalog could be
// listed or read, so whether a location is free or a file unreferenced
// cannot be told; nothing is deleted on such an answer.
var ErrIncomplete = errors.New("catalog: cannot see every table")

// Owner is one table or view of a mounted catalog and its places.
type Owner struct {
	Mount string
	Ident table.Identifier
	View  bool
	// Staging is a staging table (IsStaging).
	Staging bool
	places  []place
}

// Is tells whether o is the table ident of mount.
func (o Owner) Is(mount string, ident table.Identifier) bool {
	return !o.View && o.Mount == mount && strings.Join(o.Ident, "\x00") == strings.Join(ident, "\x00")
}

func (o Owner) String() string {
	kind := "table"
	if o.View {
		kind = "view"
	}
	return kind + " " + o.Mount + "." + strings.Join(o.Ident, ".")
}

// Owners are every table and view of every mounted catalog with their
// places, and the folders no table may be or hold: each catalog's
// warehouse and each schema's folder.
type Owners struct {
	owners []Owner
	roots  []place
}

// PlacesOf are the places a table of location loc with props writes
// under: loc and the value of every property PlacesFiles names (that is
// a location).
func PlacesOf(loc string, props iceberg.Properties) []string {
	out := []string{loc}
	for _, k := range SortedKeys(props) {
		if PlacesFiles(k) && props[k] != "" {
			out = append(out, props[k])
		}
	}
	return out
}

// Owners lists every table and view of every mounted catalog, and every
// warehouse and schema folder; it fails with ErrIncomplete when a
// catalog, schema, table or view cannot be listed or loaded.
func (m *Mounts) Owners(ctx context.Context) (*Owners, error) {
	o := &Owners{}
	for _, name := range m.Names() {
		if mt, err := m.Get(name); err == nil {
			if p, err := normalise(mt.Props.Get("warehouse", "")); err == nil {
				o.roots = append(o.roots, p)
			}
		}
	}
	schema := func(mt *Mount, ns table.Identifier) error {
		if p, err := normalise(mt.SchemaFolder(ctx, ns)); err == nil {
			o.roots = append(o.roots, p)
		}
		views, err := mt.viewLocations(ctx, ns)
		if err != nil {
			return fmt.Errorf("%w: %s.%s: list views: %v", ErrIncomplete, mt.Name, strings.Join(ns, "."), err)
		}
		for _, v := range views {
			ow := Owner{Mount: mt.Name, Ident: v.ident, View: true}
			if ow.places, err = places([]string{v.loc}); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrIncomplete, ow, err)
			}
			o.owners = append(o.owners, ow)
		}
		return nil
	}
	err := m.eachTable(ctx, false, schema, func(mt *Mount, ident table.Identifier, tbl *table.Table) error {
		ow := Owner{Mount: mt.Name, Ident: ident, Staging: IsStaging(ident[len(ident)-1])}
		var err error
		if ow.places, err = places(PlacesOf(tbl.Location(), tbl.Properties())); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrIncomplete, ow, err)
		}
		o.owners = append(o.owners, ow)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// places normalises locations; one that does not parse fails (it cannot
// be compared, so nothing near it can be told free).
func places(locs []string) ([]place, error) {
	out := make([]place, 0, len(locs))
	for _, l := range locs {
		p, err := normalise(l)
		if err != nil {
			return nil, fmt.Errorf("location %q %v", redactLocation(l), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Free returns nil when none of locs is, holds or lies in a place of an
// owner other than those skip accepts (skip may be nil), and none is or
// holds a warehouse or schema folder; otherwise ErrTaken, naming what it
// collides with only as "another table" (the caller may not see it).
func (o *Owners) Free(locs []string, skip func(Owner) bool) error {
	ps, err := places(locs)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLocation, err)
	}
	for i, p := range ps {
		for _, r := range o.roots {
			if r.under(p) {
				return fmt.Errorf("%w: %q is or holds a schema's folder or the warehouse", ErrTaken, redactLocation(locs[i]))
			}
		}
		for _, ow := range o.owners {
			if skip != nil && skip(ow) {
				continue
			}
			for _, q := range ow.places {
				switch {
				case p.under(q) && q.under(p):
					return fmt.Errorf("%w: %q is the location of another %s", ErrTaken, redactLocation(locs[i]), kindOf(ow))
				case p.under(q):
					return fmt.Errorf("%w: %q lies in the location of another %s", ErrTaken, redactLocation(locs[i]), kindOf(ow))
				case q.under(p):
					return fmt.Errorf("%w: %q holds the location of another %s", ErrTaken, redactLocation(locs[i]), kindOf(ow))
				}
			}
		}
	}
	return nil
}

// CheckFree returns nil when every one of locs is free of every table and
// view of every mounted catalog but the tables except (Owners.Free): a
// chosen place, checked before a table is made at it and again once it
// is (two makers, each checked before the other made its table, would
// both pass the first check). ErrTaken when one is not free, ErrLocation
// when one is no location, and ErrIncomplete when not every table can be
// seen (then nothing may be placed).
func (m *Mounts) CheckFree(ctx context.Context, locs []string, except ...TableRef) error {
	if len(locs) == 0 {
		return nil
	}
	owners, err := m.Owners(ctx)
	if err != nil {
		return fmt.Errorf("whether the location is free cannot be told: %w", err)
	}
	return owners.Free(locs, func(o Owner) bool {
		for _, ref := range except {
			if o.Is(ref.Catalog, ref.Ident()) {
				return true
			}
		}
		return false
	})
}

func kindOf(o Owner) string {
	if o.View {
		return "view"
	}
	return "table"
}

// allNamespaces lists every namespace of cat, nested ones too.
func allNamespaces(ctx context.Context, cat icecat.Catalog) ([]table.Identifier, error) {
	seen := map[string]bool{}
	var out []table.Identifier
	queue := []table.Identifier{nil}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		nss, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			if len(parent) > 0 && errors.Is(err, icecat.ErrNoSuchNamespace) {
				continue // dropped meanwhile
			}
			return nil, err
		}
		for _, ns := range nss {
			key := strings.Join(ns, "\x00")
			if len(ns) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, ns)
			queue = append(queue, ns)
		}
	}
	return out, nil
}

// collect reads an identifier listing to its end, before anything else
// calls the catalog (the embedded one has one database connection).
func collect(seq iter.Seq2[table.Identifier, error]) ([]table.Identifier, error) {
	var out []table.Identifier
	for ident, err := range seq {
		if err != nil {
			if errors.Is(err, icecat.ErrNoSuchNamespace) {
				return out, nil
			}
			return nil, err
		}
		out = append(out, ident)
	}
	return out, nil
}

// viewLoc is a view and its location.
type viewLoc struct {
	ident table.Identifier
	loc   string
}

// viewLocations are the locations of the views in ns, none when the
// catalog keeps no views.
func (mt *Mount) viewLocations(ctx context.Context, ns table.Identifier) ([]viewLoc, error) {
	var list iter.Seq2[table.Identifier, error]
	var load func(table.Identifier) (string, error)
	switch c := mt.raw.(type) {
	case sqlViewCatalog:
		list = c.ListViews(ctx, ns)
		load = func(id table.Identifier) (string, error) {
			md, err := c.LoadView(ctx, id)
			if err != nil {
				return "", err
			}
			return md.Location(), nil
		}
	case restViewCatalog:
		list = c.ListViews(ctx, ns)
		load = func(id table.Identifier) (string, error) {
			v, err := c.LoadView(ctx, id)
			if err != nil {
				return "", err
			}
			return v.Location(), nil
		}
	default:
		return nil, nil
	}
	idents, err := collect(list)
	if err != nil {
		return nil, err
	}
	var out []viewLoc
	for _, id := range idents {
		loc, err := load(id)
		if err != nil {
			if errors.Is(err, icecat.ErrNoSuchView) {
				continue
			}
			return nil, err
		}
		if loc != "" {
			out = append(out, viewLoc{id, loc})
		}
	}
	return out, nil
}

// SchemaFolder is the folder the catalog puts a new table of schema ns
// in: the schema's location, else <warehouse>/<schema>.db when the
// warehouse is a location (as iceberg-go's SQL and Glue catalogs do);
// "" when it cannot be told (a REST catalog whose warehouse is a name).
func (mt *Mount) SchemaFolder(ctx context.Context, ns table.Identifier) string {
	if props, err := mt.raw.LoadNamespaceProperties(ctx, ns); err == nil && props.Get(LocationKey, "") != "" {
		return strings.TrimSuffix(props.Get(LocationKey, ""), "/")
	}
	wh := mt.Props.Get("warehouse", "")
	if _, err := normalise(wh); err != nil || wh == "" {
		return ""
	}
	loc, err := url.JoinPath(wh, strings.Join(ns, ".")+".db")
	if err != nil {
		return ""
	}
	return loc
}

// fileRefs is a set of file locations to look for among the references
// of every table: each by its normalised form and, for local files, by
// the file itself (device and inode), so a reference through another
// spelling or a symbolic link still counts.
type fileRefs struct {
	files  []string
	byKey  map[string][]int
	byNode map[[2]uint64][]int
	hit    []bool
}

func newFileRefs(files []string) *fileRefs {
	f := &fileRefs{files: files, byKey: map[string][]int{}, byNode: map[[2]uint64][]int{}, hit: make([]bool, len(files))}
	for i, loc := range files {
		f.byKey[fileKey(loc)] = append(f.byKey[fileKey(loc)], i)
		if node, ok := fileNode(loc); ok {
			f.byNode[node] = append(f.byNode[node], i)
		}
	}
	return f
}

// see marks the files a reference to loc names.
func (f *fileRefs) see(loc string) {
	for _, i := range f.byKey[fileKey(loc)] {
		f.hit[i] = true
	}
	if len(f.byNode) == 0 {
		return
	}
	if node, ok := fileNode(loc); ok {
		for _, i := range f.byNode[node] {
			f.hit[i] = true
		}
	}
}

// fileKey is loc's normalised form (local paths with symbolic links of
// their folders resolved, object-store schemes and buckets folded), or
// loc itself when it does not normalise.
func fileKey(loc string) string {
	p, err := normalise(loc)
	if err != nil {
		return "raw:" + loc
	}
	return p.scheme + "://" + p.bucket + "/" + strings.Join(p.segs, "/")
}

// fileNode is the device and inode of a local file, following links.
func fileNode(loc string) ([2]uint64, bool) {
	lp, ok := LocalPath(loc)
	if !ok {
		return [2]uint64{}, false
	}
	info, err := os.Stat(lp)
	if err != nil {
		return [2]uint64{}, false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}

// Unreferenced returns those of files that no table of any mounted
// catalog references — its current and previous metadata files, its
// statistics and partition statistics files, and, for every snapshot, its
// manifest list, manifests and every file their entries name (deleted
// entries and the data files of deletion vectors too) — leaving out the
// tables skip accepts (skip may be nil). It fails with ErrIncomplete when
// a table cannot be listed, loaded or read: then nothing may be deleted.
func (m *Mounts) Unreferenced(ctx context.Context, files []string, skip func(mount string, ident table.Identifier) bool) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	refs := newFileRefs(files)
	err := m.eachTable(ctx, true, nil, func(mt *Mount, ident table.Identifier, tbl *table.Table) error {
		if skip != nil && skip(mt.Name, ident) {
			return nil
		}
		return tableRefs(ctx, tbl, false, refs.see)
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for i, loc := range files {
		if !refs.hit[i] {
			out = append(out, loc)
		}
	}
	return out, nil
}

// eachTable calls schema (when not nil) with every schema and fn with
// every table of every mounted catalog (staging ones too), loaded from
// the catalog itself and, with decrypt, with its key when it is
// encrypted; it stops at the first error, a listing or load as
// ErrIncomplete.
func (m *Mounts) eachTable(ctx context.Context, decrypt bool, schema func(mt *Mount, ns table.Identifier) error, fn func(mt *Mount, ident table.Identifier, tbl *table.Table) error) error {
	for _, name := range m.Names() {
		mt, err := m.Get(name)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
		nss, err := allNamespaces(ctx, mt.raw)
		if err != nil {
			return fmt.Errorf("%w: %s: list schemas: %v", ErrIncomplete, mt.Name, err)
		}
		for _, ns := range nss {
			if schema != nil {
				if err := schema(mt, ns); err != nil {
					return err
				}
			}
			idents, err := collect(mt.raw.ListTables(ctx, ns))
			if err != nil {
				return fmt.Errorf("%w: %s.%s: list tables: %v", ErrIncomplete, mt.Name, strings.Join(ns, "."), err)
			}
			for _, ident := range idents {
				load := mt.raw.LoadTable
				if decrypt {
					load = mt.open
				}
				tbl, err := load(ctx, ident)
				if err != nil {
					if gone(err) {
						continue // dropped meanwhile
					}
					return fmt.Errorf("%w: load %s.%s: %v", ErrIncomplete, mt.Name, strings.Join(ident, "."), err)
				}
				if err := fn(mt, ident, tbl); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// open loads a table of the mount from the catalog itself, with the
// IO of its key when it is encrypted.
func (mt *Mount) open(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := mt.raw.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	if tbl.Properties()[tablecrypt.KeyIDProp] == "" {
		return tbl, nil
	}
	ref := TableRef{Catalog: mt.Name, Table: ident[len(ident)-1]}
	if len(ident) > 1 {
		ref.Schema = ident[len(ident)-2]
	}
	p := &Pinned{Ref: ref, Table: tbl, StorageProps: map[string]string{}}
	if err := mt.decrypt(ctx, p); err != nil {
		return nil, err
	}
	return p.Table, nil
}

// tableRefs calls see with every file tbl references (see Unreferenced).
// With lenient, a manifest list or manifest that cannot be read is
// passed over (a table being purged, whose files may be gone already);
// otherwise it fails as ErrIncomplete.
func tableRefs(ctx context.Context, tbl *table.Table, lenient bool, see func(string)) error {
	md := tbl.Metadata()
	see(tbl.MetadataLocation())
	for e := range md.PreviousFiles() {
		see(e.MetadataFile)
	}
	see(strings.TrimSuffix(md.Location(), "/") + "/metadata/version-hint.text")
	for sf := range md.Statistics() {
		see(sf.StatisticsPath)
	}
	for psf := range md.PartitionStatistics() {
		see(psf.StatisticsPath)
	}
	snaps := md.Snapshots()
	if len(snaps) == 0 {
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: open its files: %v", ErrIncomplete, strings.Join(tbl.Identifier(), "."), err)
	}
	fail := func(what string, err error) error {
		if lenient {
			return nil
		}
		return fmt.Errorf("%w: %s: %s: %v", ErrIncomplete, strings.Join(tbl.Identifier(), "."), what, err)
	}
	seen := map[string]bool{}
	for _, s := range snaps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
		see(s.ManifestList)
		mans, err := s.Manifests(fsys)
		if err != nil {
			if ferr := fail(fmt.Sprintf("manifest list of snapshot %d", s.SnapshotID), err); ferr != nil {
				return ferr
			}
			continue
		}
		for _, mf := range mans {
			if seen[mf.FilePath()] {
				continue
			}
			seen[mf.FilePath()] = true
			see(mf.FilePath())
			if err := manifestRefs(fsys, mf, see); err != nil {
				if ferr := fail("manifest "+mf.FilePath(), err); ferr != nil {
					return ferr
				}
			}
		}
	}
	return nil
}

// manifestRefs calls see with every file the entries of mf name, deleted
// entries too.
func manifestRefs(fsys iceio.IO, mf iceberg.ManifestFile, see func(string)) error {
	for e, err := range mf.Entries(fsys, false) {
		if err != nil {
			return err
		}
		df := e.DataFile()
		see(df.FilePath())
		if ref := df.ReferencedDataFile(); ref != nil {
			see(*ref)
		}
	}
	return nil
}
