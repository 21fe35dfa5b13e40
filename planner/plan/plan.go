package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Unknown is an estimate the coordinator's statistics cannot give.
const Unknown int64 = -1

// Node is one node of a physical plan.
type Node interface {
	// Inputs are the nodes this one reads, in order.
	Inputs() []Node
	// Head is the node's one-line description, without figures.
	Head() string
	// Stats are the node's estimated and measured rows, bytes and time.
	Stats() *Figures
}

// Figures are a node's estimates and, after EXPLAIN ANALYZE, its
// measurements.
type Figures struct {
	// EstRows and EstBytes are estimates, or Unknown.
	EstRows, EstBytes int64
	// Measured is set when the node ran under EXPLAIN ANALYZE.
	Measured *Measured
}

// Stats returns f itself, for the nodes that embed it.
func (f *Figures) Stats() *Figures { return f }

// Measured are the figures of a node's streams, summed over its
// instances: rows, Arrow buffer bytes, and the longest instance's time.
type Measured struct {
	Rows, Bytes int64
	Time        time.Duration
	Streams     int
}

// Add adds one stream's figures.
func (m *Measured) Add(rows, bytes int64, took time.Duration) {
	m.Rows += rows
	m.Bytes += bytes
	m.Time = max(m.Time, took)
	m.Streams++
}

func (f *Figures) String() string {
	s := "est " + count(f.EstRows, "rows") + ", " + count(f.EstBytes, "bytes")
	if m := f.Measured; m != nil {
		s += fmt.Sprintf("; actual %d rows, %d bytes, %s in %d streams", m.Rows, m.Bytes, m.Time.Round(time.Microsecond), m.Streams)
	}
	return s
}

func count(n int64, unit string) string {
	if n == Unknown {
		return "? " + unit
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// Strategy is how a plan spreads a query over the workers.
type Strategy string

const (
	Scatter  Strategy = "scatter"
	TwoPhase Strategy = "two-phase"
	Gather   Strategy = "gather"
	Shuffle  Strategy = "shuffle"
)

// Verdict is what one rule said of a query: the plan's rule applied, the
// ones before it did not, for the reason given.
type Verdict struct {
	Rule    string
	Applied bool
	Reason  string
}

func (v Verdict) String() string {
	if v.Applied {
		return v.Rule + ": applies (" + v.Reason + ")"
	}
	return v.Rule + ": does not apply (" + v.Reason + ")"
}

// Result is a plan's root: what the client pulls, one stream per instance
// of each endpoint fragment.
type Result struct {
	Strategy Strategy
	// Label says the strategy as EXPLAIN prints it: "scatter with
	// broadcast of t", "gather (join of large tables)".
	Label string
	// Verdicts are the rules tried, in order, the last one applying.
	Verdicts []Verdict
	// Ordered: the result order is meaningful (ORDER BY).
	Ordered   bool
	Endpoints []*Fragment
	Figures
}

func (r *Result) Inputs() []Node {
	out := make([]Node, len(r.Endpoints))
	for i, f := range r.Endpoints {
		out[i] = f
	}
	return out
}

func (r *Result) Head() string {
	s := "Result " + r.Label
	if r.Ordered {
		s += ", ordered"
	}
	return s
}

// Placement says where a fragment's instances run.
type Placement int

const (
	// PlaceGroups runs instance i where group i of the fragment's Per scan
	// is placed (the files' affinity).
	PlaceGroups Placement = iota
	// PlaceAny runs the one instance on the next worker, round robin.
	PlaceAny
	// PlaceLargest runs the one instance where the largest input's files
	// are, so that worker's data cache keeps them.
	PlaceLargest
	// PlacePartitions runs instance j of a fragment's Partitions on worker
	// j (modulo the workers), the next one as its fallback.
	PlacePartitions
)

func (p Placement) String() string {
	switch p {
	case PlaceGroups:
		return "per group"
	case PlaceAny:
		return "any worker"
	case PlaceLargest:
		return "at the largest input"
	case PlacePartitions:
		return "per partition"
	}
	return fmt.Sprintf("placement(%d)", int(p))
}

// Fragment is SQL run on workers: one instance, one per group of its Per
// scan, or one per hash partition of the hash exchanges below it.
type Fragment struct {
	// Role names the fragment: "scan", "partial", "final", "gather",
	// "branch 1", "child".
	Role   string
	SQL    string
	Schema *arrow.Schema
	// Per, when set, is one of the fragment's scans (under In): the
	// fragment runs once per group of it; other scans are read whole.
	Per *Scan
	// Partitions, when set, is how many instances the fragment runs as:
	// instance j reads partition j of every hash exchange below it.
	Partitions int
	Place      Placement
	// Passthrough: workers stream the scan without DuckDB.
	Passthrough bool
	// Direct: the worker reads its scans with DuckDB's Parquet reader.
	Direct bool
	// ChildLimit is how many rows of its children are enough (0: all).
	ChildLimit int64
	In         []Node
	Figures
}

func (f *Fragment) Inputs() []Node { return f.In }

// Instances is how many streams the fragment runs as.
func (f *Fragment) Instances() int {
	switch {
	case f.Partitions > 0:
		return f.Partitions
	case f.Per == nil:
		return 1
	}
	return len(f.Per.Groups)
}

func (f *Fragment) Head() string {
	var opts []string
	opts = append(opts, fmt.Sprintf("×%d", f.Instances()), f.Place.String())
	if f.Passthrough {
		opts = append(opts, "passthrough")
	}
	if f.Direct {
		opts = append(opts, "direct Parquet read")
	}
	if f.ChildLimit > 0 {
		opts = append(opts, fmt.Sprintf("child limit %d", f.ChildLimit))
	}
	return fmt.Sprintf("Fragment %s [%s]: %s", f.Role, strings.Join(opts, ", "), f.SQL)
}

// ExchangeKind is how rows move between fragments.
type ExchangeKind int

const (
	// ExchangeGather: one consumer pulls every producer's stream.
	ExchangeGather ExchangeKind = iota
	// ExchangeBroadcast: every consumer instance reads the whole input.
	ExchangeBroadcast
	// ExchangeHash: each of Partitions consumer instances pulls its hash
	// partition of every instance of every input, partitioned on that
	// input's Keys: consumer j reads the rows whose keys hash to j
	// modulo Partitions. Each producer instance runs once, writing every
	// partition; its consumers pull their partitions as it runs.
	ExchangeHash
	// ExchangeMerge: one consumer pulls every producer's ordered stream and keeps
	// the order (ordered results, top-N).
	ExchangeMerge
)

func (k ExchangeKind) String() string {
	switch k {
	case ExchangeGather:
		return "gather"
	case ExchangeBroadcast:
		return "broadcast"
	case ExchangeHash:
		return "hash"
	case ExchangeMerge:
		return "merge"
	}
	return fmt.Sprintf("exchange(%d)", int(k))
}

// Exchange moves its inputs' rows to the fragment above it, which reads
// them as the table View.
type Exchange struct {
	Kind ExchangeKind
	View string
	// Keys are the hash keys of each input (Hash), in input order.
	Keys [][]string
	// Partitions is how many consumers a Hash exchange feeds.
	Partitions int
	// Order are the keys a Merge keeps.
	Order string
	// Stream: the fragment above reads View once, so it scans the
	// exchange's rows as they arrive instead of loading them first.
	Stream bool
	In     []Node
	Figures
}

func (e *Exchange) Inputs() []Node { return e.In }

// producers is how many producer instances feed the exchange, each
// read once and streaming one partition to each consumer.
func (e *Exchange) producers() int {
	n := 0
	for _, in := range e.In {
		if f, ok := in.(*Fragment); ok {
			n += f.Instances()
		}
	}
	return n
}

func (e *Exchange) Head() string {
	s := "Exchange " + e.Kind.String()
	switch e.Kind {
	case ExchangeHash:
		keys := make([]string, len(e.Keys))
		for i, k := range e.Keys {
			keys[i] = "(" + strings.Join(k, ", ") + ")"
		}
		s += fmt.Sprintf(" on %s into %d partitions", strings.Join(keys, " and "), e.Partitions)
		switch n := e.producers(); n {
		case 0:
		case 1:
			s += " from 1 producer"
		default:
			s += fmt.Sprintf(" from %d producers", n)
		}
	case ExchangeMerge:
		s += " by " + e.Order
	}
	if e.Stream {
		s += ", streamed"
	}
	if e.View != "" {
		s += " as " + e.View
	}
	return s
}

// Phase is the step of a two-phase aggregate.
type Phase int

const (
	Partial Phase = iota
	Final
)

func (p Phase) String() string {
	if p == Final {
		return "final"
	}
	return "partial"
}

// Aggregate is one phase of a split query (an aggregate, top-N, LIMIT or
// DISTINCT) inside the fragment above it.
type Aggregate struct {
	Phase Phase
	// Kind is "aggregate", "top-n", "limit" or "distinct".
	Kind string
	// Rows caps the rows each instance returns (a LIMIT; 0: no cap).
	Rows int64
	// Global: no group keys, so each instance returns one row.
	Global bool
	In     Node
	Figures
}

func (a *Aggregate) Inputs() []Node { return []Node{a.In} }

func (a *Aggregate) Head() string {
	s := "Aggregate " + a.Phase.String() + " " + a.Kind
	if a.Global {
		s += ", one row per stream"
	}
	if a.Rows > 0 {
		s += fmt.Sprintf(", at most %d rows per stream", a.Rows)
	}
	return s
}

// Join says the fragment above combines its inputs — a join, or a set
// operation (Op: "join", "intersect", "except", "union") — on the
// equalities On ("a.k = b.k"): rows of equal keys meet in one instance
// because the hash exchanges below partition every side on its key alike.
type Join struct {
	Op string
	On string
	In []Node
	Figures
}

func (j *Join) Inputs() []Node { return j.In }

func (j *Join) Head() string {
	op := j.Op
	if op == "" {
		op = "join"
	}
	return strings.ToUpper(op[:1]) + op[1:] + " on " + j.On
}

// Group is one group of a scan's files: a fragment instance's share.
type Group struct {
	Files int
	Bytes int64
	Rows  int64
}

// Scan reads one input of the query: its pruned, projected files,
// grouped for fragments.
type Scan struct {
	// Input is the index of the query's input the scan reads.
	Input int
	Table string
	View  string
	// Columns read; nil is all.
	Columns []string
	// Filter is the pruning filter, "" for none; FilterRedacted is the
	// same with its literals as ?, for plans shown to others (Redacted).
	Filter, FilterRedacted string
	// Whole: every group is read by one fragment instance.
	Whole  bool
	Groups []Group
	// Files and Bytes are the scan's after pruning; FilesBefore and
	// BytesBefore the snapshot's.
	Files, FilesBefore int
	Bytes, BytesBefore int64
	// RowsNote says where the row estimate comes from.
	RowsNote string
	// Snapshot and Metadata are the pinned version read.
	Snapshot int64
	Metadata string
	Figures
}

func (s *Scan) Inputs() []Node { return nil }

func (s *Scan) Head() string {
	cols := "*"
	if s.Columns != nil {
		cols = strings.Join(s.Columns, ", ")
	}
	h := fmt.Sprintf("Scan %s as %s [%s]", s.Table, s.View, cols)
	if s.Filter != "" {
		h += " filter " + s.Filter
	}
	how := fmt.Sprintf("%d groups", len(s.Groups))
	if s.Whole {
		how = "whole"
	}
	return h + fmt.Sprintf(": %d of %d files, %d of %d bytes, %s", s.Files, s.FilesBefore, s.Bytes, s.BytesBefore, how)
}

// maxGroupLines is how many of a scan's groups Format prints.
const maxGroupLines = 16

// Format prints n and its inputs as an indented tree, one node a line,
// each with its figures; the output depends only on the plan.
func Format(n Node) string {
	var b strings.Builder
	format(&b, n, 0)
	return b.String()
}

func format(b *strings.Builder, n Node, depth int) {
	fmt.Fprintf(b, "%s%s (%s)\n", strings.Repeat("  ", depth), n.Head(), n.Stats())
	if s, ok := n.(*Scan); ok && !s.Whole && len(s.Groups) > 1 {
		for i, g := range s.Groups {
			if i == maxGroupLines {
				fmt.Fprintf(b, "%s  … %d more groups\n", strings.Repeat("  ", depth), len(s.Groups)-i)
				break
			}
			fmt.Fprintf(b, "%s  group %d: %d files, %d bytes, est %s\n", strings.Repeat("  ", depth), i, g.Files, g.Bytes, count(g.Rows, "rows"))
		}
	}
	for _, in := range n.Inputs() {
		format(b, in, depth+1)
	}
}

// Redacted returns a copy of the tree under r that holds none of the
// client's values, for plans shown to others than the client (the
// status page, system.runtime.queries): each fragment's SQL goes
// through sql, which replaces its literals, and each scan's filter is its
// FilterRedacted (join conditions, merge orders and hash keys are built
// of column names). Redacting the
// values where the plan holds them, rather than the printed text, keeps
// a literal that spans lines from escaping.
func Redacted(r *Result, sql func(string) string) *Result {
	scans := map[*Scan]*Scan{}
	return redacted(r, sql, scans).(*Result)
}

func redacted(n Node, sql func(string) string, scans map[*Scan]*Scan) Node {
	ins := func(in []Node) []Node {
		out := make([]Node, len(in))
		for i, c := range in {
			out[i] = redacted(c, sql, scans)
		}
		return out
	}
	switch n := n.(type) {
	case *Result:
		c := *n
		c.Endpoints = make([]*Fragment, len(n.Endpoints))
		for i, f := range n.Endpoints {
			c.Endpoints[i] = redacted(f, sql, scans).(*Fragment)
		}
		return &c
	case *Fragment:
		c := *n
		c.SQL, c.In = sql(n.SQL), ins(n.In)
		if n.Per != nil {
			c.Per = redacted(n.Per, sql, scans).(*Scan)
		}
		return &c
	case *Exchange:
		c := *n
		c.In = ins(n.In)
		return &c
	case *Aggregate:
		c := *n
		c.In = redacted(n.In, sql, scans)
		return &c
	case *Join:
		c := *n
		c.In = ins(n.In)
		return &c
	case *Write:
		c := *n
		if n.In != nil {
			c.In = redacted(n.In, sql, scans)
		}
		return &c
	case *Scan:
		if c, ok := scans[n]; ok {
			return c
		}
		c := *n
		c.Filter = n.FilterRedacted
		scans[n] = &c
		return &c
	}
	panic(fmt.Sprintf("plan: Redacted: node %T", n))
}

// Walk calls f on n and every node under it, parents first.
func Walk(n Node, f func(Node)) {
	f(n)
	for _, in := range n.Inputs() {
		Walk(in, f)
	}
}
