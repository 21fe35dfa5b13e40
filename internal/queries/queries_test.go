package queries

import (
	"context"
	"errors"
	"testing"
	"time"
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
	q.Planned("scatter", func() string { made++; return "strategy\tscatter" }, 2, time.Now().Add(time.Hour))
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
	c.Planned("gather", func() string { return "" }, 1, time.Now().Add(time.Hour))
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
