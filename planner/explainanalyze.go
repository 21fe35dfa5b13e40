package planner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/parse"
	planpkg "github.com/icefloe/icefloe/planner/plan"
)

// fragment is one stream an analyzed query runs: an endpoint, or a child
// fragment an endpoint's worker pulls.
type fragment struct {
	label           string
	locations       []string
	ticket          []byte
	scans, children int

	rows, bytes int64
	first, took time.Duration
	location    string
	err         error
}

// explainAnalyze plans query, runs it and answers the plan followed by
// the rows, bytes and times of each fragment. The children of a gather or
// two-phase final, and theirs (the partitions a partition fragment pulls
// of its hash exchanges), are run first, each on its own as its parent's
// worker would pull it, for their own figures (a hash exchange's
// producers run once for them, and again inside their consumers); then
// the endpoints run as a client
// pulls them (in parallel, the rows discarded), their children again
// inside them, so an endpoint's time is its whole stage.
func (p *Planner) explainAnalyze(ctx context.Context, s Session, query *parse.Statement, workers []Worker, args []any) (*Plan, error) {
	if query.Info().DryRun {
		return nil, fmt.Errorf("%w: EXPLAIN ANALYZE of a write (it would write; EXPLAIN without ANALYZE shows the write plan)", ErrUnsupported)
	}
	schema, err := p.explainSchema(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := p.Plan(ctx, s, query, args...)
	if err != nil {
		return nil, err
	}
	if plan.restricted != nil {
		return nil, plan.restricted
	}
	var children, endpoints []*fragment
	for i, e := range plan.Endpoints {
		t, err := plan.shapeOf(e.Ticket)
		if err != nil {
			return nil, err
		}
		endpoints = append(endpoints, &fragment{label: "endpoint " + strconv.Itoa(i), locations: e.Locations, ticket: e.Ticket, scans: t.scans, children: len(t.children)})
		if children, err = plan.childFragments(children, "endpoint "+strconv.Itoa(i), t); err != nil {
			return nil, err
		}
	}
	var lines []string
	for _, l := range planLines(plan) {
		if !strings.HasPrefix(l, "plan\t") {
			lines = append(lines, l)
		}
	}
	start := time.Now()
	for _, fs := range [][]*fragment{children, endpoints} {
		if err := p.pullAll(ctx, fs); err != nil {
			return nil, err
		}
		for _, f := range fs {
			lines = append(lines, "analyze "+f.label+"\t"+f.String())
		}
	}
	var rows, bytes int64
	for _, f := range endpoints {
		rows, bytes = rows+f.rows, bytes+f.bytes
	}
	lines = append(lines, "analyze total\t"+fmt.Sprintf("%d rows, %d bytes from %d endpoints (%d child fragments) in %s",
		rows, bytes, len(endpoints), len(children), time.Since(start).Round(time.Microsecond)))
	if plan.tree != nil {
		measure(plan, endpoints, children)
		lines = append(lines, treeLines(plan.tree)...)
	}
	return p.LinesPlan(ctx, workers, schema, lines)
}

// childFragments appends t's children to out, each followed by its own
// children (the partitions of hash exchanges below a partition
// fragment), as the plan's streams list them.
func (p *Plan) childFragments(out []*fragment, label string, t ticketShape) ([]*fragment, error) {
	for j, c := range t.children {
		l := fmt.Sprintf("%s child %d (%s)", label, j, c.View)
		ct, err := p.shapeOf(c.Ticket)
		if err != nil {
			return nil, err
		}
		out = append(out, &fragment{label: l, locations: c.Locations, ticket: c.Ticket, scans: ct.scans, children: len(ct.children)})
		if out, err = p.childFragments(out, l, ct); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shapeOf is what the plan's sealed ticket holds, as lowering sealed it.
func (p *Plan) shapeOf(sealed []byte) (ticketShape, error) {
	t, ok := p.shapes[string(sealed)]
	if !ok {
		return t, fmt.Errorf("%w: EXPLAIN ANALYZE of a ticket the plan did not seal", ErrUnsupported)
	}
	return t, nil
}

// measure puts the figures of the endpoints and their children (in the
// order of plan.streams) on the plan's fragments, and sums them up the
// tree: an exchange has its producers' figures, an aggregate its
// fragment's, the result its endpoints'. Scans are not measured apart
// from the fragments that read them.
func measure(p *Plan, endpoints, children []*fragment) {
	k := 0
	for i, st := range p.streams {
		if i >= len(endpoints) {
			break
		}
		addMeasure(st.frag, endpoints[i])
		for _, c := range st.children {
			if k < len(children) {
				addMeasure(c, children[k])
			}
			k++
		}
	}
	sumMeasured(p.tree, nil)
}

func addMeasure(n planpkg.Node, f *fragment) {
	fig := n.Stats()
	if fig.Measured == nil {
		fig.Measured = &planpkg.Measured{}
	}
	fig.Measured.Add(f.rows, f.bytes, f.took)
}

// sumMeasured fills the measured figures of the nodes that are not
// fragments; frag is the fragment n runs in.
func sumMeasured(n planpkg.Node, frag *planpkg.Fragment) {
	if f, ok := n.(*planpkg.Fragment); ok {
		frag = f
	}
	for _, in := range n.Inputs() {
		sumMeasured(in, frag)
	}
	fig := n.Stats()
	switch n.(type) {
	case *planpkg.Fragment, *planpkg.Scan:
		return
	case *planpkg.Aggregate:
		if frag != nil && frag.Measured != nil {
			m := *frag.Measured
			fig.Measured = &m
		}
		return
	}
	var sum planpkg.Measured
	for _, in := range n.Inputs() {
		m := in.Stats().Measured
		if m == nil {
			return
		}
		sum.Rows, sum.Bytes, sum.Streams = sum.Rows+m.Rows, sum.Bytes+m.Bytes, sum.Streams+m.Streams
		sum.Time = max(sum.Time, m.Time)
	}
	fig.Measured = &sum
}

func (f *fragment) String() string {
	s := fmt.Sprintf("%d rows, %d bytes, first batch after %s, done after %s, served by %s",
		f.rows, f.bytes, f.first.Round(time.Microsecond), f.took.Round(time.Microsecond), f.location)
	if f.scans > 0 || f.children > 0 {
		s += fmt.Sprintf(" (%d scans, %d children)", f.scans, f.children)
	}
	return s
}

// pullAll pulls every fragment at once and measures each stream; the
// first failure cancels the others and is returned.
func (p *Planner) pullAll(ctx context.Context, fs []*fragment) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f.err = p.pullFragment(ctx, f); f.err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, f := range fs {
		if f.err != nil && !errors.Is(f.err, context.Canceled) {
			return fmt.Errorf("EXPLAIN ANALYZE: %s: %w", f.label, f.err)
		}
	}
	for _, f := range fs {
		if f.err != nil {
			return fmt.Errorf("EXPLAIN ANALYZE: %s: %w", f.label, f.err)
		}
	}
	return nil
}

// pullFragment streams f, counting its rows and bytes.
func (p *Planner) pullFragment(ctx context.Context, f *fragment) error {
	start := time.Now()
	// Client only notes which location the pull tries; the pool dials it.
	o := flightclient.PullOptions{OnUnavailable: p.Unreachable,
		Client: func(loc string) (flight.Client, bool) { f.location = loc; return nil, false }}
	err := p.opts.Flight.Pull(ctx, f.locations, f.ticket, o, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if f.rows == 0 && f.first == 0 {
			f.first = time.Since(start)
		}
		f.rows += rec.NumRows()
		f.bytes += util.TotalRecordSize(rec)
		return nil
	})
	f.took = time.Since(start)
	return err
}
