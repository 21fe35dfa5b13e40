package planner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func fileTasks(t *testing.T, n int, size func(i int) int64) []table.FileScanTask {
	t.Helper()
	var out []table.FileScanTask
	for i := 0; i < n; i++ {
		path := fmt.Sprintf("s3://bucket/wh/db/t/data/%05d-0-4c6f5a1e-%04x.parquet", i, i*7919)
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 10, size(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, table.FileScanTask{File: b.Build(), Length: size(i)})
	}
	return out
}

func workersN(n int) []Worker {
	var out []Worker
	for i := 0; i < n; i++ {
		out = append(out, Worker{Location: fmt.Sprintf("grpc://10.0.0.%d:4001", i+1), Slots: 2})
	}
	return out
}

// owners maps each file to the location of the worker its group runs on,
// and checks every task is in exactly one group.
func owners(t *testing.T, tasks []table.FileScanTask, workers []Worker) map[string]string {
	t.Helper()
	groups, places := assignGroups(tasks, workers, 64<<20)
	if len(groups) != len(places) {
		t.Fatalf("%d groups, %d places", len(groups), len(places))
	}
	out := map[string]string{}
	for i, g := range groups {
		pl := places[i]
		if pl.owner < 0 || (len(workers) > 1 && (pl.fallback < 0 || pl.fallback == pl.owner)) {
			t.Fatalf("group %d: place %+v", i, pl)
		}
		for _, task := range g {
			if _, dup := out[task.File.FilePath()]; dup {
				t.Fatalf("%s in two groups", task.File.FilePath())
			}
			out[task.File.FilePath()] = workers[pl.owner].Location
		}
	}
	if len(out) != len(tasks) {
		t.Fatalf("%d of %d files placed", len(out), len(tasks))
	}
	return out
}

func moved(a, b map[string]string) int {
	n := 0
	for f, w := range a {
		if b[f] != w {
			n++
		}
	}
	return n
}

// TestAffinityStable: the same files on the same workers land on the same
// workers, whatever order the workers are listed in and the tasks come in.
func TestAffinityStable(t *testing.T) {
	tasks := fileTasks(t, 200, func(int) int64 { return 2 << 20 })
	ws := workersN(4)
	first := owners(t, tasks, ws)
	reversed := append([]table.FileScanTask(nil), tasks...)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	wsRev := []Worker{ws[3], ws[1], ws[2], ws[0]}
	if n := moved(first, owners(t, reversed, wsRev)); n != 0 {
		t.Fatalf("%d files moved between identical plans", n)
	}
	per := map[string]int{}
	for _, w := range first {
		per[w]++
	}
	for _, w := range ws {
		if per[w.Location] < 30 || per[w.Location] > 62 { // fair share 50, bound 62.5
			t.Fatalf("unbalanced: %v", per)
		}
	}
}

// TestAffinityJoinLeave: a worker joining takes about 1/N of the files and
// nothing else moves between the others; a worker leaving gives only its
// own files away.
func TestAffinityJoinLeave(t *testing.T) {
	tasks := fileTasks(t, 400, func(int) int64 { return 1 << 20 })
	three := workersN(3) // 400 MiB: bounded loads
	four := workersN(4)
	before, after := owners(t, tasks, three), owners(t, tasks, four)
	toNew, between := 0, 0
	for f, w := range before {
		switch a := after[f]; {
		case a == w:
		case a == four[3].Location:
			toNew++
		default:
			between++
		}
	}
	t.Logf("join: %d to the new worker, %d between", toNew, between)
	// 1/4 of 400 is 100; bounded loads may shift a few more.
	if toNew < 70 || toNew > 130 || between > 20 {
		t.Fatalf("join: %d files to the new worker, %d between the old ones", toNew, between)
	}
	// Leave: drop worker 1 of four.
	left := []Worker{four[0], four[2], four[3]}
	gone := owners(t, tasks, left)
	stayed, freed := 0, 0
	for f, w := range after {
		switch {
		case w == four[1].Location:
			freed++
		case gone[f] != w:
			stayed++ // a staying worker's file moved
		}
	}
	t.Logf("leave: %d freed, %d moved", freed, stayed)
	if freed < 70 || stayed > 20 {
		t.Fatalf("leave: %d files freed, %d files of staying workers moved", freed, stayed)
	}
}

// TestAffinityFallbackIsNextInOrder: a group's fallback is where its files
// go when the owner is not live.
func TestAffinityFallbackIsNextInOrder(t *testing.T) {
	tasks := fileTasks(t, 1, func(int) int64 { return 100 })
	ws := workersN(5)
	groups, places := assignGroups(tasks, ws, 64<<20)
	if len(groups) != 1 {
		t.Fatalf("%d groups", len(groups))
	}
	owner, fallback := ws[places[0].owner], ws[places[0].fallback]
	var rest []Worker
	for _, w := range ws {
		if w != owner {
			rest = append(rest, w)
		}
	}
	_, p2 := assignGroups(tasks, rest, 64<<20)
	if got := rest[p2[0].owner]; got != fallback {
		t.Fatalf("owner gone: file went to %s, fallback was %s", got.Location, fallback.Location)
	}
}

// TestAffinityBoundedLoad: a few large files do not pile up on one worker,
// and every worker gets at most its share plus the slack (or one file).
func TestAffinityBoundedLoad(t *testing.T) {
	tasks := fileTasks(t, 8, func(i int) int64 { return int64(100+i) << 20 })
	ws := workersN(2)
	groups, places := assignGroups(tasks, ws, 64<<20)
	load := map[int]int64{}
	var total int64
	for i, g := range groups {
		for _, task := range g {
			load[places[i].owner] += task.Length
			total += task.Length
		}
	}
	for w, b := range load {
		if float64(b) > float64(total)/2*loadSlack {
			t.Fatalf("worker %d has %d of %d bytes", w, b, total)
		}
	}
	if len(load) != 2 {
		t.Fatalf("loads %v: want both workers", load)
	}
	// Groups per worker: its slots at least, about target bytes each.
	if len(groups) < 4 {
		t.Fatalf("%d groups for 2 workers with 2 slots", len(groups))
	}
}

func TestAffinityNoTasks(t *testing.T) {
	groups, places := assignGroups(nil, workersN(3), 64<<20)
	if len(groups) != 1 || len(groups[0]) != 0 || len(places) != 1 || places[0].fallback == places[0].owner {
		t.Fatalf("no tasks: %v %v", groups, places)
	}
	_, places = assignGroups(nil, workersN(1), 64<<20)
	if places[0].owner != 0 || places[0].fallback != -1 {
		t.Fatalf("one worker: %+v", places[0])
	}
}

// TestAffinitySmallScansIgnorePruning: in a scan too small to balance,
// a file's owner does not depend on the other files of the query.
func TestAffinitySmallScansIgnorePruning(t *testing.T) {
	tasks := fileTasks(t, 12, func(int) int64 { return 1 << 20 })
	ws := workersN(2)
	all := owners(t, tasks, ws)
	for k := 1; k < len(tasks); k++ {
		sub := owners(t, tasks[:k], ws)
		for f, w := range sub {
			if all[f] != w {
				t.Fatalf("%s: owner %s in a query of %d files, %s in one of all", f, w, k, all[f])
			}
		}
	}
}

// TestPlanMemo: the same scan of the same table version plans once, with
// the same tasks in its tickets; another filter plans again without
// re-reading manifests.
func TestPlanMemo(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 6)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	tasksOf := func(q string) int {
		t.Helper()
		plan, err := planText(ctx, p, s, q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ep := range plan.Endpoints {
			tk, err := key.Open(ep.Ticket, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range tk.Scans {
				n += len(sc.Tasks)
			}
			for _, c := range tk.Children {
				ct, err := key.Open(c.Ticket, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				n += len(ct.Scans[0].Tasks)
			}
		}
		return n
	}
	cache := p.opts.Mounts.Cache()
	if n := tasksOf("SELECT id FROM t"); n != 6 {
		t.Fatalf("%d tasks", n)
	}
	st := cache.Snapshot()
	if n := tasksOf("SELECT id FROM t"); n != 6 {
		t.Fatalf("%d tasks planned from the memo", n)
	}
	st2 := cache.Snapshot()
	if st2.Memos.Misses != st.Memos.Misses || st2.Memos.Hits == st.Memos.Hits || st2.Files.Misses != st.Files.Misses {
		t.Fatalf("second plan: %+v, first %+v", st2, st)
	}
	// Another pruning filter: planned again, manifests from the cache.
	if n := tasksOf("SELECT id FROM t WHERE id = 3"); n != 1 {
		t.Fatalf("pruned plan: %d tasks", n)
	}
	st3 := cache.Snapshot()
	if st3.Memos.Misses <= st2.Memos.Misses || st3.Files.Misses != st2.Files.Misses || st3.Files.Hits <= st2.Files.Hits {
		t.Fatalf("other filter: %+v, before %+v", st3, st2)
	}
}
