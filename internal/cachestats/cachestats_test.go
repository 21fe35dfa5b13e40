package cachestats

import (
	"sync"
	"testing"
)

func TestSnapshotAddsUpByName(t *testing.T) {
	var r Registry
	r.Register(Func(func() Stats { return Stats{Name: "view", Entries: 1, Bytes: 10, MaxEntries: 4, Hits: 2, Misses: 1} }))
	r.Register(Funcs(func() []Stats {
		return []Stats{{Name: "view", Entries: 2, Bytes: 5, MaxEntries: 4, Hits: 1, Evictions: 3}, {Name: "data", MaxBytes: 100}}
	}))
	got := r.Snapshot()
	if len(got) != 2 || got[0].Name != "data" || got[1].Name != "view" {
		t.Fatalf("snapshot %+v: want data then view", got)
	}
	v := got[1]
	if v.Entries != 3 || v.Bytes != 15 || v.MaxEntries != 8 || v.Hits != 3 || v.Misses != 1 || v.Evictions != 3 {
		t.Errorf("view added up to %+v", v)
	}
}

func TestNilRegistry(t *testing.T) {
	var r *Registry
	r.Register(Func(func() Stats { return Stats{Name: "x"} }))
	if got := r.Snapshot(); got != nil {
		t.Errorf("nil registry reported %+v", got)
	}
}

func TestConcurrentRegister(t *testing.T) {
	var r Registry
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Register(Func(func() Stats { return Stats{Name: "c", Hits: 1} }))
			r.Snapshot()
		}()
	}
	wg.Wait()
	if got := r.Snapshot(); len(got) != 1 || got[0].Hits != 8 {
		t.Errorf("after 8 registrations: %+v", got)
	}
}
