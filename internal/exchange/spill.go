package exchange

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Spill is a folder where exchanges put the batches their memory cannot
// hold, one Arrow IPC stream file per batch, and the bytes all of them
// may keep there at once. One Spill is shared by the exchanges of a
// process; it is safe for concurrent use.
type Spill struct {
	space
	dir string
	seq atomic.Uint64
}

// NewSpill returns a spill holding at most limit bytes (> 0) in a new
// private folder under parent: a folder the process owns, such as its
// engine's claimed spill folder, which removes what a process that ended
// without Close left there. Close removes the folder.
func NewSpill(parent string, limit int64) (*Spill, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("exchange: spill limit must be > 0, got %d", limit)
	}
	dir, err := os.MkdirTemp(parent, "exchange-")
	if err != nil {
		return nil, fmt.Errorf("exchange: spill folder: %w", err)
	}
	return &Spill{space: newSpace(limit), dir: dir}, nil
}

// Close removes the spill's folder and what is left in it; the exchanges
// using it must have ended.
func (s *Spill) Close() error { return os.RemoveAll(s.dir) }

// Dir is the spill's folder.
func (s *Spill) Dir() string { return s.dir }

func (s *Spill) String() string {
	return fmt.Sprintf("exchange spill in %s, %d of %d bytes", s.dir, s.Used(), s.Limit())
}

// adjust turns a reservation of reserved bytes into the written ones.
func (s *Spill) adjust(reserved, written int64) {
	if written > reserved {
		s.take(written - reserved)
	} else {
		s.free(reserved - written)
	}
}

// write writes rec to a new file and returns its path and size; on error
// nothing is left on disk and the size is 0.
func (s *Spill) write(schema *arrow.Schema, rec arrow.RecordBatch) (string, int64, error) {
	path := filepath.Join(s.dir, strconv.FormatUint(s.seq.Add(1), 10)+".arrows")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, fmt.Errorf("exchange: spill: %w", err)
	}
	cw := &countingWriter{w: bufio.NewWriterSize(f, 1<<20)}
	w := ipc.NewWriter(cw, ipc.WithSchema(schema))
	err = w.Write(rec)
	err = errors.Join(err, w.Close(), cw.w.Flush(), f.Close())
	if err != nil {
		os.Remove(path)
		return "", 0, fmt.Errorf("exchange: spill: %w", err)
	}
	return path, cw.n, nil
}

// read reads the batch of a spilled file.
func (s *Spill) read(path string, mem memory.Allocator) (arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("exchange: read spill: %w", err)
	}
	defer f.Close()
	r, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("exchange: read spill: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("exchange: read spill: %w", err)
		}
		return nil, errors.New("exchange: read spill: empty file")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}

// remove deletes a spilled file and frees its bytes.
func (s *Spill) remove(path string, n int64) {
	os.Remove(path)
	s.free(n)
}

type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
