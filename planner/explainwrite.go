package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/wire"
)

// EXPLAIN of a write runs the statement as a dry run: it is parsed,
// authorized, bound and planned exactly as it would run, and stops at the
// first step that would change anything (a write fragment sent to a
// worker, a file written on the coordinator, a table created, a commit),
// noting what that step would have done.

// errDryRun stops a dry run where the statement would first change
// something. It never leaves the planner.
var errDryRun = errors.New("planner: dry run stops before writing")

// dryRun collects the lines of a write's EXPLAIN.
type dryRun struct {
	lines     []string
	committed bool // a commit line was noted
}

type dryRunKey struct{}

// dryRunOf returns the dry run ctx carries, or nil.
func dryRunOf(ctx context.Context) *dryRun {
	d, _ := ctx.Value(dryRunKey{}).(*dryRun)
	return d
}

func (d *dryRun) note(key, format string, args ...any) {
	d.lines = append(d.lines, key+"\t"+fmt.Sprintf(format, args...))
}

// commit notes the kind of commit the statement would make and stops it.
func (d *dryRun) commit(format string, args ...any) error {
	d.note("commit", format, args...)
	d.committed = true
	return errDryRun
}

// stop is where every change would start: a dry run stops there, noting
// a commit if the statement has not said which.
func (d *dryRun) stop() error {
	if d == nil {
		return nil
	}
	if !d.committed {
		return d.commit("one snapshot")
	}
	return errDryRun
}

// explainsWrite tells the statements EXPLAIN runs as dry runs.
func explainsWrite(inner string) bool {
	ps, err := updateTokens(inner)
	if err != nil {
		return false
	}
	return ps.at("INSERT") || ps.at("UPDATE") || ps.at("DELETE") || ps.at("MERGE") || ps.at("TRUNCATE") || ps.at("CREATE", "TABLE")
}

// explainWrite answers EXPLAIN of an INSERT, UPDATE, DELETE, MERGE,
// TRUNCATE or CREATE TABLE … AS: the plan of its reads, its write fragments and its commit,
// without writing anything.
func (p *Planner) explainWrite(ctx context.Context, s Session, inner string, workers []Worker) (*Plan, error) {
	schema, err := p.explainSchema(ctx, s, inner)
	if err != nil {
		return nil, err
	}
	d := &dryRun{}
	d.note("statement", "%s", strings.TrimSpace(inner))
	_, err = p.Exec(context.WithValue(ctx, dryRunKey{}, d), s, inner)
	switch {
	case errors.Is(err, errDryRun):
	case err != nil:
		return nil, err
	default:
		d.note("commit", "none: the statement changes no row")
	}
	return p.linesPlan(ctx, workers, schema, d.lines)
}

// plan notes the distributed plan of the query a write reads.
func (d *dryRun) plan(explain string) {
	for _, l := range strings.Split(strings.TrimSuffix(explain, "\n"), "\n") {
		d.lines = append(d.lines, "read "+l)
	}
}

// fragments notes the write fragments a statement would send and
// the commit they would end in, and stops the dry run.
func (d *dryRun) fragments(target string, w *wire.Write, endpoints []Endpoint) error {
	d.note("write", "%d fragments on the workers, each writing Parquet files of %s", len(endpoints), target)
	for i, e := range endpoints {
		d.note(fmt.Sprintf("fragment %d", i), "%s", strings.Join(e.Locations, ", "))
	}
	if w.Rewrite {
		return d.commit("overwrite (copy-on-write): the rewritten files replace the files they were read from, in one snapshot")
	}
	return d.commit("append: the written files are added in one snapshot")
}

// explainCTAS notes the table a CREATE TABLE … AS would create and the
// plan of its query, and stops the dry run.
func (p *Planner) explainCTAS(ctx context.Context, sess Session, d *dryRun, ref fmt.Stringer, columns, query string) error {
	d.note("create", "table %s %s", ref, columns)
	plan, err := p.Plan(ctx, sess, query)
	if err != nil {
		return err
	}
	d.plan(plan.Explain)
	d.note("write", "%d fragments on the workers, each writing Parquet files of %s", len(plan.Endpoints), ref)
	return d.commit("create the table, then append the written files in one snapshot")
}
