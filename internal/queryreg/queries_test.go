package queryreg

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type fakeWorkers struct {
	prog      map[string]Progress
	cancelled []string
}

func (f *fakeWorkers) Progress(context.Context, []string) (map[string]Progress, error) {
	return f.prog, nil
}

func (f *fakeWorkers) Cancel(_ context.Context, id string, _ time.Time) error {
	f.cancelled = append(f.cancelled, id)
	return nil
}

func TestLifecycle(t *testing.T) {
	w := &fakeWorkers{prog: map[string]Progress{}}
	var ended []Info
	r, err := New(Options{Recent: 2, Workers: w, Ended: func(i Info) { ended = append(ended, i) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A query runs until the workers report all its endpoints read.
	qctx, q := r.Begin(ctx, "ana", "query", "SELECT ?")
	id := IDFrom(qctx)
	if From(qctx) != q || id == "" {
		t.Fatal("the statement's context does not carry it")
	}
	q.Planning()
	// The plan's text is made when the statement is first read, once.
	made := 0
	q.Planned("scatter", &planText{text: "strategy\tscatter", made: &made}, 2, time.Now().Add(time.Hour))
	q.Done(nil, -1)
	if made != 0 {
		t.Fatal("the plan's text was made on the statement's path")
	}
	w.prog[id] = Progress{Rows: 10, Bytes: 80, EndpointsDone: 1}
	if i, _ := r.Get(ctx, id); i.State != Running || i.Rows != 10 || i.EndpointsDone != 1 || i.Plan != "strategy\tscatter" {
		t.Fatalf("half read: %+v", i)
	}
	w.prog[id] = Progress{Rows: 20, Bytes: 160, EndpointsDone: 2}
	if i, _ := r.Get(ctx, id); i.State != Finished || i.Rows != 20 || i.End.IsZero() || i.Plan != "strategy\tscatter" || made != 1 {
		t.Fatalf("all read: %+v (plan made %d times)", i, made)
	}

	// An update ends when it is done; a failure keeps its error.
	_, u := r.Begin(ctx, "ana", "update", "INSERT")
	u.Run()
	u.Done(errors.New("boom"), 0)

	// Cancel: only if may says so; ends the context with ErrCancelled.
	cctx, c := r.Begin(ctx, "bob", "query", "SELECT")
	c.Planned("gather", &planText{}, 1, time.Now().Add(time.Hour))
	c.Done(nil, -1)
	cid := IDFrom(cctx)
	if _, err := r.Cancel(ctx, cid, func(p string) bool { return p == "ana" }); !errors.Is(err, ErrNotYours) {
		t.Fatalf("cancel by another: %v", err)
	}
	if _, err := r.Cancel(ctx, "nope", func(string) bool { return true }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	info, err := r.Cancel(ctx, cid, func(string) bool { return true })
	if err != nil || info.State != Cancelled || !errors.Is(context.Cause(cctx), ErrCancelled) || len(w.cancelled) != 1 {
		t.Fatalf("cancel: %+v %v cause %v", info, err, context.Cause(cctx))
	}

	// The ring keeps the 2 most recent.
	list := r.List(ctx)
	if len(list) != 2 || list[0].ID != cid || list[1].State != Failed || list[1].Error != "boom" {
		t.Fatalf("recent: %+v", list)
	}
	if len(ended) != 3 {
		t.Fatalf("%d ended reported, want 3", len(ended))
	}
}

// planText is a plan's text that counts how often it was made.
type planText struct {
	text string
	made *int
}

func (p *planText) Text() string {
	if p.made != nil {
		*p.made++
	}
	return p.text
}

func (p *planText) Len() int { return len(p.text) }

// TestTextBounded: the registry keeps at most 16 KiB of a statement's
// SQL and error and 64 KiB of its plan, cut on a character boundary
// saying so, and at most 8 MiB of text in all, forgetting the oldest
// ended statements first.
func TestTextBounded(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sql, plan, failure := strings.Repeat("é", 1<<19), strings.Repeat("plan\tx\n", 1<<17), strings.Repeat("e", 1<<20)
	var last string
	for range 300 {
		qctx, q := r.Begin(ctx, "ana", "query", sql)
		q.Planning()
		q.Planned("gather", &planText{text: plan}, 0, time.Time{})
		q.Done(errors.New(failure), 0)
		last = IDFrom(qctx)
	}
	list := r.List(ctx)
	var total int
	for _, i := range list {
		if len(i.SQL) > 16<<10 || len(i.Error) > 16<<10 || len(i.Plan) > 64<<10 {
			t.Fatalf("kept %d bytes of SQL, %d of error, %d of plan", len(i.SQL), len(i.Error), len(i.Plan))
		}
		if !utf8.ValidString(i.SQL) || !strings.HasSuffix(i.SQL, "bytes more)") {
			t.Fatalf("cut SQL ends %q", i.SQL[len(i.SQL)-40:])
		}
		total += len(i.SQL) + len(i.Plan) + len(i.Error)
	}
	if total > 8<<20 {
		t.Fatalf("%d statements keep %d bytes of text, want at most 8 MiB", len(list), total)
	}
	if len(list) == 0 || list[0].ID != last {
		t.Fatal("the newest statement was forgotten")
	}
}

// TestProgress: a statement's progress is the bytes its tickets read of
// those planned (files when no byte was planned, else endpoints), below 1
// while it runs and 1 once it finished; the workers are asked for an
// update's reads too while it runs, and Progress refreshes one statement.
func TestProgress(t *testing.T) {
	w := &fakeWorkers{prog: map[string]Progress{}}
	r, err := New(Options{Workers: w})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	uctx, u := r.Begin(WithID(ctx, "0123456789abcdef"), "ana", "update", "INSERT INTO t SELECT ?")
	id := IDFrom(uctx)
	if id != "0123456789abcdef" {
		t.Fatalf("id %q, want the one given", id)
	}
	u.Run()
	u.Plans(2, 100)
	u.Plans(2, 300)
	if i, _ := r.Progress(ctx, id); i.PlannedFiles != 4 || i.PlannedBytes != 400 || i.Progress() != 0 || i.Served {
		t.Fatalf("planned: %+v, progress %v", i, i.Progress())
	}
	w.prog[id] = Progress{ReadFiles: 2, ReadBytes: 100}
	if i, _ := r.Progress(ctx, id); i.ReadFiles != 2 || i.Progress() != 0.25 || !i.Served || i.State != Running {
		t.Fatalf("a quarter read: %+v, progress %v", i, i.Progress())
	}
	w.prog[id] = Progress{ReadFiles: 4, ReadBytes: 400}
	if i, _ := r.Progress(ctx, id); i.Progress() != MaxRunningProgress {
		t.Fatalf("all read, still committing: progress %v", i.Progress())
	}
	u.Done(nil, 7)
	if i, ok := r.Progress(ctx, id); !ok || i.State != Finished || i.Progress() != 1 || i.Rows != 7 {
		t.Fatalf("finished: %+v, progress %v", i, i.Progress())
	}

	// Without bytes, files; without files, endpoints.
	for _, c := range []struct {
		i    Info
		want float64
	}{
		{Info{PlannedFiles: 4, ReadFiles: 1}, 0.25},
		{Info{EndpointsTotal: 4, EndpointsDone: 2}, 0.5},
		{Info{}, 0},
		{Info{State: Failed, PlannedBytes: 10, ReadBytes: 5}, 0.5},
	} {
		if got := c.i.Progress(); got != c.want {
			t.Errorf("%+v: progress %v, want %v", c.i, got, c.want)
		}
	}
	if _, ok := r.Progress(ctx, "nope"); ok {
		t.Fatal("an unknown id has progress")
	}
}
