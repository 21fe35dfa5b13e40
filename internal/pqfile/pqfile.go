package pqfile

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	iceio "github.com/apache/iceberg-go/io"
)

// Write writes rec as the Parquet file path of wfs with props (nil: the
// defaults) and returns its size; on failure it removes what it wrote.
func Write(wfs iceio.WriteFileIO, path string, rec arrow.RecordBatch, props *parquet.WriterProperties) (int64, error) {
	if props == nil {
		props = parquet.NewWriterProperties()
	}
	out, err := wfs.Create(path)
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: out}
	pw, err := pqarrow.NewFileWriter(rec.Schema(), cw, props, pqarrow.DefaultWriterProps())
	if err == nil {
		err = pw.Write(rec)
		if cerr := pw.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = wfs.Remove(path)
		return 0, fmt.Errorf("pqfile: write %s: %w", path, err)
	}
	return cw.n, nil
}

// ReadTable reads the whole Parquet file path of fsys; the caller
// releases the table.
func ReadTable(ctx context.Context, fsys iceio.IO, path string) (arrow.Table, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("pqfile: %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("pqfile: %s: %w", path, err)
	}
	tb, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("pqfile: %s: %w", path, err)
	}
	return tb, nil
}

// countingWriter counts the bytes written through it. It is not an
// io.Closer, so the Parquet writer leaves closing the file to Write.
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
