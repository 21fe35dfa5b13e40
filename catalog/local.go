package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// LocalCatalogName is the name the embedded catalog is mounted under.
const LocalCatalogName = "local"

// DefaultSchema is the schema the embedded catalog starts with.
const DefaultSchema = "default"

// OpenLocal opens (creating if needed) the embedded SQL catalog on SQLite
// in dataDir, with its warehouse under dataDir/warehouse, and makes sure the
// default schema exists. The caller closes the catalog.
func OpenLocal(ctx context.Context, dataDir string) (icecat.Catalog, iceberg.Properties, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: data dir: %w", err)
	}
	warehouse := filepath.Join(abs, "warehouse")
	if err := os.MkdirAll(warehouse, 0o755); err != nil {
		return nil, nil, fmt.Errorf("catalog: warehouse: %w", err)
	}
	dsn := "file:" + filepath.Join(abs, "catalog.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_busy_timeout=5000&_journal_mode=WAL"
	db, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	props := iceberg.Properties{
		"warehouse": "file://" + filepath.ToSlash(warehouse),
	}
	cat, err := sqlcat.NewCatalog(LocalCatalogName, db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("catalog: open sql catalog: %w", err)
	}
	ns := icecat.ToIdentifier(DefaultSchema)
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("catalog: check default schema: %w", err)
	}
	if !exists {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("catalog: create default schema: %w", err)
		}
	}
	return &closingCatalog{Catalog: cat, db: db}, props, nil
}

// closingCatalog closes the SQLite handle it owns along with the catalog.
type closingCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

func (c *closingCatalog) Close() error {
	err := c.Catalog.Close()
	if dbErr := c.db.Close(); err == nil {
		err = dbErr
	}
	return err
}

var _ icecat.Catalog = (*closingCatalog)(nil)

// LocalPath is the local file-system path of a table, file or warehouse
// location that is an absolute path or a file: location on this host
// (file:/p, file:///p, file://localhost/p); ok is false for object stores
// and anything else. The path is taken literally, as Java's HadoopFileIO
// and pyiceberg take it: "%25" in a location is "%25" on disk (Iceberg
// writers record partition values escaped, and the file is at that path).
func LocalPath(loc string) (path string, ok bool) {
	if filepath.IsAbs(loc) {
		return filepath.Clean(loc), true
	}
	scheme, rest, found := strings.Cut(loc, ":")
	if !found || !strings.EqualFold(scheme, "file") {
		return "", false
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		host, p, _ := strings.Cut(after, "/")
		if host != "" && !strings.EqualFold(host, "localhost") {
			return "", false
		}
		rest = "/" + p
	}
	if !filepath.IsAbs(rest) {
		return "", false
	}
	return filepath.Clean(rest), true
}
