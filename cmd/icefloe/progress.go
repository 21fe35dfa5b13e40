package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	"golang.org/x/term"
)

// Timing of the progress line.
const (
	// progressDelay: statements done sooner show none.
	progressDelay = time.Second
	// progressEvery is how often the line is redrawn.
	progressEvery = 250 * time.Millisecond
)

// progress draws one line on stderr (a terminal) while a statement runs:
// rows and bytes received, endpoints done and the time so far. Results
// printed to the same terminal first erase it. A nil *progress does
// nothing, for stderr that is not a terminal.
type progress struct {
	stderr io.Writer
	out    *bufio.Writer
	begin  time.Time

	rows, bytes, eps, epsDone atomic.Int64

	mu    sync.Mutex // held while the line or a result is written
	shown bool

	quit, done chan struct{}
}

// startProgress starts the line's clock and its drawing, or returns nil
// when stderr is not a terminal.
func startProgress(stderr io.Writer, out *bufio.Writer) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	p := &progress{stderr: stderr, out: out, begin: time.Now(), quit: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *progress) run() {
	defer close(p.done)
	select {
	case <-time.After(progressDelay):
	case <-p.quit:
		return
	}
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		p.mu.Lock()
		fmt.Fprint(p.stderr, "\r\x1b[K"+p.text())
		p.shown = true
		p.mu.Unlock()
		select {
		case <-tick.C:
		case <-p.quit:
			return
		}
	}
}

// text is the line: "12000 rows, 1.5 MB, endpoints 2/4, 3.2s elapsed".
func (p *progress) text() string {
	elapsed := time.Since(p.begin).Truncate(100 * time.Millisecond)
	eps := p.eps.Load()
	if eps == 0 {
		return fmt.Sprintf("running, %s elapsed (Ctrl-C cancels)", elapsed)
	}
	return fmt.Sprintf("%d rows, %s, endpoints %d/%d, %s elapsed (Ctrl-C cancels)",
		p.rows.Load(), byteText(p.bytes.Load()), p.epsDone.Load(), eps, elapsed)
}

// clearLocked erases the line; the caller holds mu.
func (p *progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.stderr, "\r\x1b[K")
		p.shown = false
	}
}

// stop ends the drawing and erases the line.
func (p *progress) stop() {
	if p == nil {
		return
	}
	close(p.quit)
	<-p.done
	p.mu.Lock()
	p.clearLocked()
	p.mu.Unlock()
}

func (p *progress) endpoints(n int) {
	if p != nil {
		p.eps.Store(int64(n))
	}
}

func (p *progress) endpointDone() {
	if p != nil {
		p.epsDone.Add(1)
	}
}

// wrap counts what w is given and keeps its output and the line apart.
func (p *progress) wrap(w resultWriter) resultWriter {
	if p == nil {
		return w
	}
	return &progressWriter{p: p, w: w}
}

// progressWriter erases the progress line before its result writer
// prints, and flushes what it printed before the line is drawn again.
type progressWriter struct {
	p *progress
	w resultWriter
}

func (pw *progressWriter) print(f func() error) error {
	pw.p.mu.Lock()
	defer pw.p.mu.Unlock()
	pw.p.clearLocked()
	if err := f(); err != nil {
		return err
	}
	return pw.p.out.Flush()
}

func (pw *progressWriter) begin(s *arrow.Schema) error {
	return pw.print(func() error { return pw.w.begin(s) })
}

func (pw *progressWriter) write(rec arrow.RecordBatch) error {
	pw.p.rows.Add(rec.NumRows())
	pw.p.bytes.Add(util.TotalRecordSize(rec))
	return pw.print(func() error { return pw.w.write(rec) })
}

func (pw *progressWriter) end() error { return pw.print(pw.w.end) }

func (pw *progressWriter) affected(n int64) error {
	return pw.print(func() error { return pw.w.affected(n) })
}

// byteText is n in B, kB, MB or GB (powers of 1000, one decimal).
func byteText(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
