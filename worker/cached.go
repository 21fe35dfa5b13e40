package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/directscan"
	"github.com/icefloe/icefloe/internal/engine"
)

// The data cache (Options.DataCache) keeps local copies of object-store
// data files. A scan uses it two ways:
//   - a scan the direct path would read if its files were local gets the
//     tasks' files replaced by their copies (localize), and DuckDB reads
//     them like local warehouse files, under the same rules;
//   - every other scan reads through iceberg-go with the table's IO
//     wrapped (cachedTable), so its data and delete files are read from
//     copies too.
// Either way a file deleted or changed on storage fails the scan naming
// it (datacache.Get checks every use). An encrypted table's files
// (catalog/tablecrypt) never go into the cache: its copies would be the
// decrypted files, in the clear on the worker's disk across restarts.

// fetchParallel bounds the files one scan fetches into the cache at once;
// the cache bounds the ranged reads under them.
const fetchParallel = 8

// remote tells whether a location is not a local file, so the cache may
// hold it.
func remote(location string) bool {
	_, local := catalog.LocalPath(location)
	return !local
}

// cachedTable returns tbl reading the tasks' object-store files (data and
// delete files) through the data cache, or tbl itself without a cache.
func (s *Server) cachedTable(tbl *table.Table, tasks []table.FileScanTask) *table.Table {
	dc := s.opts.DataCache
	if dc == nil || encrypted(tbl) {
		return tbl
	}
	sizes := map[string]int64{}
	for _, t := range tasks {
		for _, f := range append([]iceberg.DataFile{t.File}, taskDeletes(t)...) {
			if remote(f.FilePath()) {
				sizes[f.FilePath()] = f.FileSizeBytes()
			}
		}
	}
	if len(sizes) == 0 {
		return tbl
	}
	fsF := func(ctx context.Context) (icebergio.IO, error) {
		inner, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		return dc.IO(ctx, inner, sizes), nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, nil)
}

// encrypted tells whether tbl's files are encrypted (tablecrypt): the
// data cache must not keep them.
func encrypted(tbl *table.Table) bool {
	return tbl.Properties()[tablecrypt.KeyIDProp] != ""
}

func taskDeletes(t table.FileScanTask) []iceberg.DataFile {
	out := append([]iceberg.DataFile(nil), t.DeleteFiles...)
	out = append(out, t.EqualityDeleteFiles...)
	return append(out, t.DeletionVectorFiles...)
}

// localFile is a data file read from its local copy.
type localFile struct {
	iceberg.DataFile
	path string
}

func (f localFile) FilePath() string { return f.path }

// localize returns the tasks with their object-store data files replaced
// by local copies in the data cache, when the scan is one the direct path
// reads (whole Parquet files without deletes, handled columns) and the
// engine may read the cache. The copies stay pinned until conn closes. A
// file that does not fit the cache leaves the tasks as they are (the
// iceberg-go path reads them); a file gone or changed on storage is an
// error naming it.
func (s *Server) localize(ctx context.Context, conn *engine.Conn, tbl *table.Table, name string, schema *iceberg.Schema, tasks []table.FileScanTask, columns []string) ([]table.FileScanTask, error) {
	dc := s.opts.DataCache
	if dc == nil || encrypted(tbl) || !s.opts.Engine.CanRead(filepath.Join(dc.Dir(), "copy")) {
		return tasks, nil
	}
	if _, ok := directscan.Fields(schema, columns); !ok {
		return tasks, nil
	}
	var idx []int
	for i, t := range tasks {
		if !directscan.Whole(t) {
			return tasks, nil
		}
		if remote(t.File.FilePath()) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return tasks, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, &readError{table: name, file: taskFiles(tasks), err: err}
	}
	paths, releases, err := fetchAll(ctx, dc, fsys, tasks, idx)
	if errors.Is(err, datacache.ErrNotCached) {
		return tasks, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	for _, r := range releases {
		conn.Hold(r)
	}
	out := append([]table.FileScanTask(nil), tasks...)
	for k, i := range idx {
		out[i].File = localFile{DataFile: tasks[i].File, path: paths[k]}
	}
	return out, nil
}

// fetchAll gets the copies of the files of tasks[idx], fetchParallel at a
// time. On error it releases what it got and returns the first error,
// preferring one that is not ErrNotCached (a vanished file fails the scan
// even when another did not fit).
func fetchAll(ctx context.Context, dc *datacache.Cache, fsys icebergio.IO, tasks []table.FileScanTask, idx []int) ([]string, []func(), error) {
	paths := make([]string, len(idx))
	releases := make([]func(), len(idx))
	errs := make([]error, len(idx))
	sem := make(chan struct{}, fetchParallel)
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f := tasks[i].File
			paths[k], releases[k], errs[k] = dc.Get(ctx, fsys, f.FilePath(), f.FileSizeBytes())
		}()
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, datacache.ErrNotCached)) {
			first = err
		}
	}
	if first == nil {
		return paths, releases, nil
	}
	for _, r := range releases {
		if r != nil {
			r()
		}
	}
	return nil, nil, first
}
