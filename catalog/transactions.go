package catalog

import (
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/klauspost/compress/zstd"
)

// ErrNotTransactional: the catalog commits one table at a time, so a
// change to several tables cannot land atomically.
var ErrNotTransactional = errors.New("catalog: no atomic multi-table commit")

// ErrNotApplied: a multi-table commit applied nothing, and not because it
// lost a race (that is table.ErrCommitFailed): a table it names cannot be
// loaded, or an update cannot apply to its table's metadata.
var ErrNotApplied = errors.New("catalog: multi-table commit not applied")

// Transactional is the mount's atomic commit of changes to several of its
// tables (iceberg-go's TransactionalCatalog): an upstream REST catalog's
// transactions/commit, or the SQL catalog's pointer updates in one
// database transaction (closingCatalog.CommitTransaction). A Glue
// catalog has none: ErrNotTransactional names the kind. The caller
// authorizes every change (it goes around the guard).
func (mt *Mount) Transactional() (icecat.TransactionalCatalog, error) {
	if tc, ok := mt.raw.(icecat.TransactionalCatalog); ok {
		return tc, nil
	}
	return nil, fmt.Errorf("%w: catalog %s is of type %s, which commits one table at a time", ErrNotTransactional, mt.Name, mt.raw.CatalogType())
}

var _ icecat.TransactionalCatalog = (*closingCatalog)(nil)

// CommitTransaction commits every change of commits, or none: each
// table's new metadata is built and written as iceberg-go's CommitTable
// builds and writes it (its requirements checked against the current
// metadata, the updates applied, the next metadata file written), then
// one database transaction moves every table's metadata pointer, each
// with the compare-and-set CommitTable makes (the row still points at the
// metadata the change was built on). A table another writer committed to
// meanwhile rolls the whole transaction back (table.ErrCommitFailed), and
// the metadata files written for it are removed.
func (c *closingCatalog) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	if len(commits) == 0 {
		return icecat.ErrEmptyCommitList
	}
	type staged struct {
		ident     table.Identifier
		from, to  string
		fsys      iceio.IO
		unchanged bool
	}
	var done []staged
	cleanup := func() {
		for _, s := range done {
			if !s.unchanged {
				_ = s.fsys.Remove(s.to)
			}
		}
	}
	for _, tc := range commits {
		ident := tc.Identifier
		if len(ident) != 2 || strings.Contains(ident[0], ".") || strings.HasPrefix(ident[0], "__iceberg_namespace") {
			cleanup()
			return fmt.Errorf("%w: %w: %s: a multi-table commit names tables of one-level namespaces without dots", ErrNotApplied, icecat.ErrInvalidIdentifier, strings.Join(ident, "."))
		}
		cur, err := c.Catalog.LoadTable(ctx, ident)
		if err != nil {
			cleanup()
			return fmt.Errorf("%w: %w", ErrNotApplied, err)
		}
		for _, r := range tc.Requirements {
			if err := r.Validate(cur.Metadata()); err != nil {
				cleanup()
				return fmt.Errorf("%w: %s: requirement %s: %v", table.ErrCommitFailed, strings.Join(ident, "."), r.GetType(), err)
			}
		}
		next, err := table.UpdateTableMetadata(cur.Metadata(), tc.Updates, cur.MetadataLocation())
		if err != nil {
			cleanup()
			return fmt.Errorf("%w: %s: %w", ErrNotApplied, strings.Join(ident, "."), err)
		}
		s := staged{ident: ident, from: cur.MetadataLocation()}
		if next.Equals(cur.Metadata()) {
			s.unchanged = true
			done = append(done, s)
			continue
		}
		version := metadataVersion(cur.MetadataLocation())
		if version < 0 {
			cleanup()
			return fmt.Errorf("%s: invalid metadata location %s", strings.Join(ident, "."), cur.MetadataLocation())
		}
		lp, err := table.LoadLocationProvider(next.Location(), next.Properties())
		if err != nil {
			cleanup()
			return err
		}
		if s.to, err = lp.NewTableMetadataFileLocation(version + 1); err != nil {
			cleanup()
			return err
		}
		if s.fsys, err = cur.FS(ctx); err != nil {
			cleanup()
			return err
		}
		if err := writeMetadata(s.fsys, s.to, next); err != nil {
			cleanup()
			_ = s.fsys.Remove(s.to)
			return fmt.Errorf("%s: write metadata: %w", strings.Join(ident, "."), err)
		}
		done = append(done, s)
	}
	q := "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?, iceberg_type = 'TABLE' WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
	if c.dialect == sqlcat.Postgres {
		q = "UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2, iceberg_type = 'TABLE' WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 AND metadata_location = $6 AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
	}
	err := func() error {
		tx, err := c.db.BeginTx(ctx, &sql.TxOptions{})
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
		for _, s := range done {
			if s.unchanged {
				continue
			}
			res, err := tx.ExecContext(ctx, q, s.to, s.from, c.Name(), s.ident[0], s.ident[1], s.from)
			if err != nil {
				return fmt.Errorf("update table %s: %w", strings.Join(s.ident, "."), err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("update table %s: %w", strings.Join(s.ident, "."), err)
			}
			if n == 0 {
				return fmt.Errorf("%w: table %s metadata-location moved underneath us", table.ErrCommitFailed, strings.Join(s.ident, "."))
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		cleanup()
		return err
	}
	return nil
}

// metadataFileName is a metadata file's name as iceberg-go's catalogs
// write it (<version>-<uuid>[.codec].metadata.json), or the legacy
// v<version>.metadata.json.
var (
	metadataFileName       = regexp.MustCompile(`^(\d+)-[\w-]{36}(?:\.\w+)?\.metadata\.json$`)
	legacyMetadataFileName = regexp.MustCompile(`^v(\d+)(?:\.gz)?\.metadata\.json$`)
)

// metadataVersion is the version a metadata file's name carries; -1
// when it carries none.
func metadataVersion(loc string) int {
	name := path.Base(loc)
	m := metadataFileName.FindStringSubmatch(name)
	if m == nil {
		m = legacyMetadataFileName.FindStringSubmatch(name)
	}
	if m == nil {
		return -1
	}
	v, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return v
}

// writeMetadata writes meta to loc through fsys, compressed as the
// table's write.metadata.compression-codec says (as iceberg-go writes
// it).
func writeMetadata(fsys iceio.IO, loc string, meta table.Metadata) (err error) {
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return errors.New("the table's file system cannot write")
	}
	out, err := wfs.Create(loc)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	var w io.Writer = out
	switch codec := meta.Properties().Get(table.MetadataCompressionKey, table.MetadataCompressionDefault); codec {
	case table.MetadataCompressionCodecNone:
	case table.MetadataCompressionCodecGzip:
		gz := gzip.NewWriter(out)
		defer func() {
			if cerr := gz.Close(); err == nil {
				err = cerr
			}
		}()
		w = gz
	case table.MetadataCompressionCodecZstd:
		enc, zerr := zstd.NewWriter(out)
		if zerr != nil {
			return zerr
		}
		defer func() {
			if cerr := enc.Close(); err == nil {
				err = cerr
			}
		}()
		w = enc
	default:
		return fmt.Errorf("unsupported write metadata compression codec: %s", codec)
	}
	return json.NewEncoder(w).Encode(meta)
}
