package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
)

// ViewStore is a mounted catalog's views as the Iceberg REST catalog
// serves them: their metadata as stored (every version, schema and
// representation, each SQL with its dialect) and its location. The
// caller authorizes each step.
type ViewStore interface {
	LoadViewMetadata(ctx context.Context, ident table.Identifier) (view.Metadata, string, error)
	// CreateViewMetadata stores a new view of version and schema at loc
	// with props.
	CreateViewMetadata(ctx context.Context, ident table.Identifier, version *view.Version, schema *iceberg.Schema, loc string, props iceberg.Properties) (view.Metadata, string, error)
	// UpdateViewMetadata applies updates to the view once reqs hold (a
	// replace: a new version made current), with a compare-and-set of
	// its metadata location.
	UpdateViewMetadata(ctx context.Context, ident table.Identifier, reqs []view.Requirement, updates []view.Update) (view.Metadata, string, error)
}

// restViewUpdater is the REST catalog's view replace in iceberg-go
// v0.7.0.
type restViewUpdater interface {
	UpdateView(ctx context.Context, ident table.Identifier, reqs []view.Requirement, updates []view.Update) (*view.View, error)
}

// ViewStore returns the mount's view metadata store: the SQL catalogs
// icefloe opens read and write the view rows and metadata files
// themselves, as iceberg-go's SQL catalog does; a REST catalog passes
// the metadata through. Other kinds keep no views (ErrViewsUnsupported).
func (m *Mount) ViewStore() (ViewStore, error) {
	switch c := m.raw.(type) {
	case *closingCatalog:
		return sqlViewStore{m.Name, c, m.Props}, nil
	case restViewCatalog:
		if u, ok := c.(restViewUpdater); ok {
			return restViewStore{m.Name, c, u}, nil
		}
	}
	return nil, fmt.Errorf("%w: catalog %s is of type %s, which keeps no views the REST catalog can serve (the SQL and REST catalogs do)", ErrViewsUnsupported, m.Name, m.raw.CatalogType())
}

type restViewStore struct {
	name string
	c    restViewCatalog
	u    restViewUpdater
}

func (v restViewStore) LoadViewMetadata(ctx context.Context, ident table.Identifier) (view.Metadata, string, error) {
	vw, err := v.c.LoadView(ctx, ident)
	if err != nil {
		return nil, "", classify(v.name, err)
	}
	return vw.Metadata(), vw.MetadataLocation(), nil
}

func (v restViewStore) CreateViewMetadata(ctx context.Context, ident table.Identifier, version *view.Version, schema *iceberg.Schema, loc string, props iceberg.Properties) (view.Metadata, string, error) {
	opts := []icecat.CreateViewOpt{icecat.WithViewProperties(props)}
	if loc != "" {
		opts = append(opts, icecat.WithViewLocation(loc))
	}
	vw, err := v.c.CreateView(ctx, ident, version, schema, opts...)
	if err != nil {
		return nil, "", classify(v.name, err)
	}
	return vw.Metadata(), vw.MetadataLocation(), nil
}

func (v restViewStore) UpdateViewMetadata(ctx context.Context, ident table.Identifier, reqs []view.Requirement, updates []view.Update) (view.Metadata, string, error) {
	vw, err := v.u.UpdateView(ctx, ident, reqs, updates)
	if err != nil {
		return nil, "", classify(v.name, err)
	}
	return vw.Metadata(), vw.MetadataLocation(), nil
}

// sqlViewStore keeps views in an SQL catalog's iceberg_tables rows
// (iceberg_type VIEW), as iceberg-go's SQL catalog does: a row names the
// view's current metadata file.
type sqlViewStore struct {
	name  string
	c     *closingCatalog
	props iceberg.Properties // the mount's, to open files with
}

// query is q in the catalog's dialect's placeholders.
func (v sqlViewStore) query(q string) string {
	if v.c.dialect != sqlcat.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func viewKey(ident table.Identifier) (ns, name string, err error) {
	if len(ident) != 2 || strings.Contains(ident[0], ".") || strings.HasPrefix(ident[0], "__iceberg_namespace") {
		return "", "", fmt.Errorf("%w: view %s: one-level namespaces without dots only", icecat.ErrInvalidIdentifier, strings.Join(ident, "."))
	}
	return ident[0], ident[1], nil
}

// location is the view's current metadata location.
func (v sqlViewStore) location(ctx context.Context, ident table.Identifier) (string, error) {
	ns, name, err := viewKey(ident)
	if err != nil {
		return "", err
	}
	var loc sql.NullString
	err = v.c.db.QueryRowContext(ctx, v.query("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND iceberg_type = 'VIEW'"),
		v.c.Name(), ns, name).Scan(&loc)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && !loc.Valid:
		return "", fmt.Errorf("%w: %s", icecat.ErrNoSuchView, strings.Join(ident, "."))
	case err != nil:
		return "", classify(v.name, err)
	}
	return loc.String, nil
}

func (v sqlViewStore) read(ctx context.Context, loc string) (view.Metadata, error) {
	fsys, err := iceio.LoadFS(ctx, v.props, loc)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, fmt.Errorf("read view metadata %s: %w", loc, err)
	}
	defer f.Close()
	return view.ParseMetadata(f)
}

func (v sqlViewStore) LoadViewMetadata(ctx context.Context, ident table.Identifier) (view.Metadata, string, error) {
	loc, err := v.location(ctx, ident)
	if err != nil {
		return nil, "", err
	}
	md, err := v.read(ctx, loc)
	return md, loc, err
}

// write writes md as the view metadata file of the given version at
// its location and returns the file's location.
func (v sqlViewStore) write(ctx context.Context, md view.Metadata, version int) (string, error) {
	loc := fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", strings.TrimSuffix(md.Location(), "/"), version, uuid.NewString())
	fsys, err := iceio.LoadFS(ctx, v.props, loc)
	if err != nil {
		return "", err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return "", errors.New("the view's file system cannot write")
	}
	b, err := json.Marshal(md)
	if err != nil {
		return "", err
	}
	if err := wfs.WriteFile(loc, b); err != nil {
		return "", fmt.Errorf("write view metadata %s: %w", loc, err)
	}
	return loc, nil
}

func (v sqlViewStore) remove(ctx context.Context, loc string) {
	if fsys, err := iceio.LoadFS(ctx, v.props, loc); err == nil {
		_ = fsys.Remove(loc)
	}
}

func (v sqlViewStore) CreateViewMetadata(ctx context.Context, ident table.Identifier, version *view.Version, schema *iceberg.Schema, loc string, props iceberg.Properties) (view.Metadata, string, error) {
	ns, name, err := viewKey(ident)
	if err != nil {
		return nil, "", err
	}
	if ok, err := v.c.CheckNamespaceExists(ctx, table.Identifier{ns}); err != nil {
		return nil, "", err
	} else if !ok {
		return nil, "", fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, ns)
	}
	if loc == "" {
		return nil, "", fmt.Errorf("view %s: a location is required", strings.Join(ident, "."))
	}
	md, err := view.NewMetadata(version, schema, loc, props)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", view.ErrInvalidViewMetadata, err)
	}
	mloc, err := v.write(ctx, md, 0)
	if err != nil {
		return nil, "", err
	}
	err = func() error {
		tx, err := v.c.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
		var kind sql.NullString
		err = tx.QueryRowContext(ctx, v.query("SELECT iceberg_type FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"), v.c.Name(), ns, name).Scan(&kind)
		switch {
		case err == nil && kind.String == "VIEW":
			return fmt.Errorf("%w: %s", icecat.ErrViewAlreadyExists, strings.Join(ident, "."))
		case err == nil:
			return fmt.Errorf("%w: %s is a table", icecat.ErrTableAlreadyExists, strings.Join(ident, "."))
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, v.query("INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location) VALUES (?, ?, ?, 'VIEW', ?)"),
			v.c.Name(), ns, name, mloc); err != nil {
			return fmt.Errorf("create view %s: %w", strings.Join(ident, "."), err)
		}
		return tx.Commit()
	}()
	if err != nil {
		v.remove(ctx, mloc)
		return nil, "", err
	}
	return md, mloc, nil
}

func (v sqlViewStore) UpdateViewMetadata(ctx context.Context, ident table.Identifier, reqs []view.Requirement, updates []view.Update) (view.Metadata, string, error) {
	ns, name, err := viewKey(ident)
	if err != nil {
		return nil, "", err
	}
	cur, from, err := v.LoadViewMetadata(ctx, ident)
	if err != nil {
		return nil, "", err
	}
	for _, r := range reqs {
		if err := r.Validate(cur); err != nil {
			return nil, "", fmt.Errorf("%w: view %s: %v", table.ErrCommitFailed, strings.Join(ident, "."), err)
		}
	}
	b, err := view.MetadataBuilderFromBase(cur)
	if err != nil {
		return nil, "", err
	}
	for _, u := range updates {
		if err := u.Apply(b); err != nil {
			return nil, "", fmt.Errorf("%w: %v", view.ErrInvalidViewMetadata, err)
		}
	}
	res, err := b.Build()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", view.ErrInvalidViewMetadata, err)
	}
	next := res.Metadata
	version := metadataVersion(from)
	if version < 0 {
		version = 0
	}
	to, err := v.write(ctx, next, version+1)
	if err != nil {
		return nil, "", err
	}
	r, err := v.c.db.ExecContext(ctx, v.query("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND iceberg_type = 'VIEW' AND metadata_location = ?"),
		to, from, v.c.Name(), ns, name, from)
	if err == nil {
		var n int64
		if n, err = r.RowsAffected(); err == nil && n == 0 {
			err = fmt.Errorf("%w: view %s changed meanwhile", table.ErrCommitFailed, strings.Join(ident, "."))
		}
	}
	if err != nil {
		v.remove(ctx, to)
		return nil, "", err
	}
	return next, to, nil
}
