package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
)

// DefaultMemoryBytes bounds what an exchange holds in memory when
// Options.Memory is nil.
const DefaultMemoryBytes = 64 << 20

// ErrNoConsumers is what Put returns once every partition was released or
// dropped: nothing the producer makes will be read.
var ErrNoConsumers = errors.New("exchange: no partition has a consumer left")

// Options configure one exchange.
type Options struct {
	// Partitions is how many partitions the producer's rows fall into.
	Partitions int
	// Schema is the schema of the partitions' batches.
	Schema *arrow.Schema
	// Memory bounds the Arrow buffers of the batches the exchange holds
	// in memory, over all its partitions, with the other exchanges that
	// share it; nil means a bound of DefaultMemoryBytes of its own. An
	// exchange that holds nothing in memory always takes one batch, so
	// each makes progress whatever the others hold.
	Memory *Memory
	// Spill, when set, takes the batches past MemoryBytes; without it the
	// producer waits for consumers once memory is full.
	Spill *Spill
	// Allocator holds the batches read back from the spill; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Partitions < 1 {
		errs = append(errs, fmt.Errorf("exchange: partitions must be >= 1, got %d", o.Partitions))
	}
	if o.Schema == nil {
		errs = append(errs, errors.New("exchange: schema is required"))
	}
	return errors.Join(errs...)
}

// Stats are what an exchange moved.
type Stats struct {
	// Rows and Bytes are the rows and Arrow buffer bytes put.
	Rows, Bytes int64
	// Spilled are the batches and bytes written to the spill folder.
	SpilledBatches int
	SpilledBytes   int64
	// Dropped is how many unclaimed partitions were dropped.
	Dropped int
}

// state is where a partition is in its life.
type state int

const (
	waiting  state = iota // no consumer has claimed it yet
	claimed               // a consumer reads it
	released              // its consumer is done with it
	dropped               // dropped unclaimed: its consumer runs the producer again
)

// item is one queued batch: in memory, or spilled to a file.
type item struct {
	rec   arrow.RecordBatch
	file  string
	bytes int64
}

type partition struct {
	state state
	items []item
}

// Exchange is the partitions of one run of a producer. Put is called by
// the one producer; each partition's Reader by its one consumer. It is
// safe for that concurrent use.
type Exchange struct {
	o     Options
	mu    sync.Mutex
	parts []partition
	mem   int64 // bytes of the items in memory
	// closed: the producer is done, with err when it failed.
	closed bool
	err    error
	// changed is closed and replaced at every change a waiter may wait
	// for: a batch queued, memory freed, a partition's state, the end.
	changed chan struct{}
	// done closes once no partition is waiting or claimed.
	done     chan struct{}
	doneOnce sync.Once
	stats    Stats
}

// New returns an exchange with every partition waiting for its consumer.
func New(o Options) (*Exchange, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Memory == nil {
		o.Memory, _ = NewMemory(DefaultMemoryBytes)
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return &Exchange{o: o, parts: make([]partition, o.Partitions), changed: make(chan struct{}), done: make(chan struct{})}, nil
}

// Partitions is how many partitions the exchange has.
func (x *Exchange) Partitions() int { return len(x.parts) }

// Done is closed once every partition was released or dropped.
func (x *Exchange) Done() <-chan struct{} { return x.done }

// Stats are what the exchange moved so far.
func (x *Exchange) Stats() Stats {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats
}

// broadcastLocked wakes every waiter.
func (x *Exchange) broadcastLocked() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// Put queues rec, whose ownership it takes, in partition j: in memory
// while the exchange's memory has room, else in the spill, else, after
// dropping unclaimed partitions, it waits until a consumer makes room or
// ctx ends. A batch for a released or dropped partition is freed. Put
// returns ErrNoConsumers once no partition is left to read.
func (x *Exchange) Put(ctx context.Context, j int, rec arrow.RecordBatch) error {
	if j < 0 || j >= len(x.parts) {
		rec.Release()
		return fmt.Errorf("exchange: partition %d of %d", j, len(x.parts))
	}
	size := util.TotalRecordSize(rec)
	x.mu.Lock()
	for {
		if x.closed {
			x.mu.Unlock()
			rec.Release()
			return errors.New("exchange: put after close")
		}
		p := &x.parts[j]
		if p.state == released || p.state == dropped {
			gone := x.goneLocked()
			x.mu.Unlock()
			rec.Release()
			if gone {
				return ErrNoConsumers
			}
			return nil
		}
		if x.mem == 0 || x.o.Memory.reserve(size) {
			if x.mem == 0 {
				x.o.Memory.take(size)
			}
			p.items = append(p.items, item{rec: rec, bytes: size})
			x.mem += size
			x.stats.Rows, x.stats.Bytes = x.stats.Rows+rec.NumRows(), x.stats.Bytes+size
			x.broadcastLocked()
			x.mu.Unlock()
			return nil
		}
		if x.o.Spill != nil && x.o.Spill.reserve(size) {
			x.mu.Unlock()
			return x.spill(j, rec, size)
		}
		if x.dropLargestWaitingLocked() {
			continue
		}
		changed, memChanged := x.changed, x.o.Memory.wait()
		var spillChanged <-chan struct{}
		if x.o.Spill != nil {
			spillChanged = x.o.Spill.wait()
		}
		x.mu.Unlock()
		select {
		case <-changed:
		case <-memChanged:
		case <-spillChanged:
		case <-ctx.Done():
			rec.Release()
			return context.Cause(ctx)
		}
		x.mu.Lock()
	}
}

// spill writes rec, reserved as size bytes of the spill, to a file and
// queues it in partition j.
func (x *Exchange) spill(j int, rec arrow.RecordBatch, size int64) error {
	rows := rec.NumRows()
	file, written, err := x.o.Spill.write(x.o.Schema, rec)
	rec.Release()
	x.o.Spill.adjust(size, written)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	p := &x.parts[j]
	if p.state == released || p.state == dropped {
		x.o.Spill.remove(file, written)
		return nil
	}
	p.items = append(p.items, item{file: file, bytes: written})
	x.stats.Rows, x.stats.Bytes = x.stats.Rows+rows, x.stats.Bytes+size
	x.stats.SpilledBatches++
	x.stats.SpilledBytes += written
	x.broadcastLocked()
	return nil
}

// dropLargestWaitingLocked drops the unclaimed partition holding the most
// bytes, if one holds any, and says whether it did.
func (x *Exchange) dropLargestWaitingLocked() bool {
	best, most := -1, int64(0)
	for j := range x.parts {
		p := &x.parts[j]
		if p.state != waiting {
			continue
		}
		var n int64
		for _, it := range p.items {
			n += it.bytes
		}
		if n > most {
			best, most = j, n
		}
	}
	if best < 0 {
		return false
	}
	x.endLocked(best, dropped)
	x.stats.Dropped++
	return true
}

// endLocked puts partition j in state s (released or dropped) and frees
// what it holds.
func (x *Exchange) endLocked(j int, s state) {
	p := &x.parts[j]
	p.state = s
	for _, it := range p.items {
		x.freeLocked(it)
	}
	p.items = nil
	x.broadcastLocked()
	if x.goneLocked() {
		x.doneOnce.Do(func() { close(x.done) })
	}
}

func (x *Exchange) freeLocked(it item) {
	if it.rec != nil {
		x.mem -= it.bytes
		x.o.Memory.free(it.bytes)
		it.rec.Release()
		return
	}
	x.o.Spill.remove(it.file, it.bytes)
}

// goneLocked says whether no partition is waiting or claimed.
func (x *Exchange) goneLocked() bool {
	for _, p := range x.parts {
		if p.state == waiting || p.state == claimed {
			return false
		}
	}
	return true
}

// Close says the producer is done: consumers read what is queued and
// then the end, or err when it is not nil (at once: what is queued is no
// longer whole).
func (x *Exchange) Close(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	x.closed, x.err = true, err
	x.broadcastLocked()
}

// DropWaiting drops every partition no consumer has claimed (their
// consumers will not come: the tickets expired) and returns how many.
func (x *Exchange) DropWaiting() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for j := range x.parts {
		if x.parts[j].state == waiting {
			x.endLocked(j, dropped)
			x.stats.Dropped++
			n++
		}
	}
	return n
}

// Abort ends the exchange: err for the consumers, every partition freed.
func (x *Exchange) Abort(err error) {
	x.Close(err)
	x.mu.Lock()
	defer x.mu.Unlock()
	for j := range x.parts {
		switch x.parts[j].state {
		case waiting:
			x.endLocked(j, dropped)
		case claimed:
			// The consumer gets err at its next read and releases.
			for _, it := range x.parts[j].items {
				x.freeLocked(it)
			}
			x.parts[j].items = nil
		}
	}
}

// Claim hands partition j to its consumer; false when it was claimed,
// released or dropped before (the consumer then needs another run).
func (x *Exchange) Claim(j int) (*Reader, bool) {
	if j < 0 || j >= len(x.parts) {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.parts[j].state != waiting {
		return nil, false
	}
	x.parts[j].state = claimed
	return &Reader{x: x, j: j}, true
}

// Reader reads one claimed partition. It is not safe for concurrent use.
type Reader struct {
	x    *Exchange
	j    int
	done bool
}

// Next returns the partition's next batch, which the caller releases;
// io.EOF at its end, or the producer's error. It waits for the producer
// until ctx ends.
func (r *Reader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	x := r.x
	x.mu.Lock()
	for {
		p := &x.parts[r.j]
		switch {
		case r.done || p.state != claimed:
			x.mu.Unlock()
			return nil, errors.New("exchange: read of a released partition")
		case x.err != nil:
			err := x.err
			x.mu.Unlock()
			return nil, err
		case len(p.items) > 0:
			it := p.items[0]
			p.items[0] = item{}
			p.items = p.items[1:]
			if it.rec != nil {
				x.mem -= it.bytes
				x.o.Memory.free(it.bytes)
				x.broadcastLocked()
				x.mu.Unlock()
				return it.rec, nil
			}
			x.mu.Unlock()
			rec, err := x.o.Spill.read(it.file, x.o.Allocator)
			x.o.Spill.remove(it.file, it.bytes)
			return rec, err
		case x.closed:
			x.mu.Unlock()
			return nil, io.EOF
		}
		changed := x.changed
		x.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		x.mu.Lock()
	}
}

// Release ends the consumer's read: what is left of the partition is
// freed. It is safe to call more than once.
func (r *Reader) Release() {
	if r.done {
		return
	}
	r.done = true
	r.x.mu.Lock()
	defer r.x.mu.Unlock()
	r.x.endLocked(r.j, released)
}
