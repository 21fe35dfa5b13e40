package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
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

// progress draws one line on stderr (a terminal) while a statement runs
// longer than progressDelay: a bar of the fraction of its work the server
// reports done (the bytes its tickets read of those planned, through
// incremental execution), the percent, rows and bytes received, endpoints
// read and the time so far. Results printed to the same terminal first
// erase it. A nil *progress does nothing, for stderr that is not a
// terminal.
type progress struct {
	stderr io.Writer
	fd     int
	out    *bufio.Writer
	begin  time.Time

	rows, bytes, eps, epsDone atomic.Int64
	// done is the server's fraction (math.Float64bits), known once a
	// poll answered one.
	done  atomic.Uint64
	known atomic.Bool

	mu    sync.Mutex // held while the line or a result is written
	shown bool

	quit, finished chan struct{}
}

// startProgress starts the line's clock and its drawing, or returns nil
// when stderr is not a terminal.
func startProgress(stderr io.Writer, out *bufio.Writer) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	p := &progress{stderr: stderr, fd: int(f.Fd()), out: out, begin: time.Now(), quit: make(chan struct{}), finished: make(chan struct{})}
	go p.run()
	return p
}

func (p *progress) run() {
	defer close(p.finished)
	select {
	case <-time.After(progressDelay):
	case <-p.quit:
		return
	}
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		width := 0
		if w, _, err := term.GetSize(p.fd); err == nil {
			width = w
		}
		p.mu.Lock()
		fmt.Fprint(p.stderr, "\r\x1b[K"+p.text(width))
		p.shown = true
		p.mu.Unlock()
		select {
		case <-tick.C:
		case <-p.quit:
			return
		}
	}
}

// barWidth is how many cells the bar has.
const barWidth = 24

// text is the line, at most width cells (0: any):
// "[=========>              ]  42% · 12000 rows · 1.5 MB · endpoints 2/4 · 3.2s (Ctrl-C cancels)";
// the bar and percent once the server reported a fraction, the rows, bytes
// and endpoints once a query's endpoints are being read.
func (p *progress) text(width int) string {
	var parts []string
	if p.known.Load() {
		f := math.Float64frombits(p.done.Load())
		parts = append(parts, bar(f)+fmt.Sprintf(" %3d%%", int(f*100)))
	} else {
		parts = append(parts, "running")
	}
	if eps := p.eps.Load(); eps > 0 {
		parts = append(parts, fmt.Sprintf("%d rows", p.rows.Load()), byteText(p.bytes.Load()), fmt.Sprintf("endpoints %d/%d", p.epsDone.Load(), eps))
	}
	parts = append(parts, time.Since(p.begin).Truncate(100*time.Millisecond).String()+" elapsed")
	line := strings.Join(parts, " · ") + " (Ctrl-C cancels)"
	if r := []rune(line); width > 0 && len(r) >= width {
		line = string(r[:width-1]) // a full line would wrap
	}
	return line
}

// bar is f (in [0, 1]) as a bar of barWidth cells.
func bar(f float64) string {
	f = min(max(f, 0), 1)
	n := int(f * barWidth)
	head := ""
	if n < barWidth {
		head = ">"
	}
	return "[" + strings.Repeat("=", n) + head + strings.Repeat(" ", barWidth-n-len(head)) + "]"
}

// polled takes the fraction done a poll of the statement reported.
func (p *progress) polled(pi *flight.PollInfo) {
	if p == nil || pi.Progress == nil {
		return
	}
	p.done.Store(math.Float64bits(pi.GetProgress()))
	p.known.Store(true)
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
	<-p.finished
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
