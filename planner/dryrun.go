package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/planner/plan"
)

// EXPLAIN of a write runs the statement as a dry run: it is parsed,
// authorized, bound and planned exactly as it would run, and stops at the
// first step that would change anything (a write fragment sent to a
// worker, a file written on the coordinator, a table created, a commit),
// noting what that step would have done. statement.Executor answers such
// an EXPLAIN (statement/explainwrite.go); the statements note their steps
// here.

// ErrDryRun stops a dry run where the statement would first change
// something. It never leaves the statement package, which starts dry runs.
var ErrDryRun = errors.New("planner: dry run stops before writing")

// DryRun collects the lines of a write's EXPLAIN: "key<TAB>value", as
// Planner.LinesPlan answers them. The zero value is ready to use.
type DryRun struct {
	lines     []string
	committed bool // a commit line was noted
}

type dryRunKey struct{}

// WithDryRun returns a context under which a statement runs as dry run d:
// it stops with ErrDryRun where it would first change something.
func WithDryRun(ctx context.Context, d *DryRun) context.Context {
	return context.WithValue(ctx, dryRunKey{}, d)
}

// DryRunOf returns the dry run ctx carries (WithDryRun), or nil.
func DryRunOf(ctx context.Context) *DryRun {
	d, _ := ctx.Value(dryRunKey{}).(*DryRun)
	return d
}

// Note adds the line key<TAB>value, value formatted from format and args.
func (d *DryRun) Note(key, format string, args ...any) {
	d.lines = append(d.lines, key+"\t"+fmt.Sprintf(format, args...))
}

// Lines are the lines noted so far.
func (d *DryRun) Lines() []string { return d.lines }

// Commit notes the kind of commit the statement would make and returns
// ErrDryRun, which stops it.
func (d *DryRun) Commit(format string, args ...any) error {
	d.Note("commit", format, args...)
	d.committed = true
	return ErrDryRun
}

// Stop is where every change would start: a dry run (d not nil) stops
// there, noting a commit if the statement has not said which.
func (d *DryRun) Stop() error {
	if d == nil {
		return nil
	}
	if !d.committed {
		return d.Commit("one snapshot")
	}
	return ErrDryRun
}

// NotePlan notes the distributed plan (Plan.Explain) of the query a
// write reads.
func (d *DryRun) NotePlan(explain string) {
	for _, l := range strings.Split(strings.TrimSuffix(explain, "\n"), "\n") {
		d.lines = append(d.lines, "read "+l)
	}
}

// Fragments notes the plan of a write (its sink over its input), the
// fragments it would send and the commit they would end in, and stops
// the dry run.
func (d *DryRun) Fragments(wp *WritePlan) error {
	d.NoteWritePlan(wp)
	d.Note("write", "%d fragments on the workers, each writing Parquet files of %s", len(wp.Endpoints), wp.Tree.Table)
	for i, e := range wp.Endpoints {
		d.Note(fmt.Sprintf("fragment %d", i), "%s", strings.Join(e.Locations, ", "))
	}
	switch wp.Tree.Sink {
	case plan.SinkRowDelta:
		return d.Commit("overwrite (copy-on-write): the rewritten files replace the files they were read from, in one snapshot")
	case plan.SinkCompact:
		return d.Commit("rewrite files: the written files replace the compacted ones, in one snapshot")
	}
	return d.Commit("append: the written files are added in one snapshot")
}

// NoteWritePlan notes the plan tree of a write, its sink at the root
// ("write plan" lines).
func (d *DryRun) NoteWritePlan(wp *WritePlan) {
	for _, l := range strings.Split(strings.TrimSuffix(wp.String(), "\n"), "\n") {
		d.Note("write plan", "%s", l)
	}
}
