package planner

import (
	"cmp"
	"hash/fnv"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// Affinity: every file task goes to a worker chosen by rendezvous (highest
// random weight) hashing of its file over the live workers, so the same
// file is read by the same worker across queries and that worker's data
// cache keeps it (internal/datacache). The next worker in the file's hash
// order is the fallback location of its endpoint. When a worker leaves,
// only its files move, each to its own next worker; when one joins, it
// takes about 1/N of the files and nothing else moves.
//
// Loads of large scans are bounded (consistent hashing with bounded
// loads): files are placed largest first, and a worker whose share would
// pass loadSlack × its fair share (by slots) of the scan's bytes is
// saturated, so the file goes to the next worker in its order. That keeps
// a few large files from piling onto one worker, at the price of moving a
// little more than 1/N when the set of files changes, and of a file's
// owner depending on which other files a query reads. A scan of at most
// one target group per worker is not worth balancing: its files always go
// to their first live worker, whatever the query prunes.

// loadSlack is how far past its fair share of a scan's bytes a worker may
// be loaded before files spill to their next worker.
const loadSlack = 1.25

// place is where a ticket runs: its owner and its fallback, as indices of
// the plan's workers (fallback -1 when there is only one worker).
type place struct{ owner, fallback int }

// hash64 is a stable 64-bit hash: placements must agree across
// coordinators and restarts.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// weight is the rendezvous weight of a file on a worker, from their
// hashes (the splitmix64 finaliser mixes the two).
func weight(worker, file uint64) uint64 {
	z := worker ^ (file * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rendezvous orders the workers (by their location hashes) for one key:
// the first is its owner, the rest are its fallbacks in order.
func rendezvous(workers []uint64, key string) []int {
	h := hash64(key)
	order := make([]int, len(workers))
	weights := make([]uint64, len(workers))
	for i, w := range workers {
		order[i], weights[i] = i, weight(w, h)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(weights[b], weights[a]) })
	return order
}

func workerHashes(workers []Worker) []uint64 {
	out := make([]uint64, len(workers))
	for i, w := range workers {
		id := w.ID
		if id == "" {
			id = w.Location
		}
		out[i] = hash64(id)
	}
	return out
}

// placeKey is the rendezvous place of one key (a table location, say).
func placeKey(workers []Worker, key string) place {
	order := rendezvous(workerHashes(workers), key)
	pl := place{owner: order[0], fallback: -1}
	if len(order) > 1 {
		pl.fallback = order[1]
	}
	return pl
}

// assignGroups puts each task on a worker by rendezvous hashing of its
// file with bounded loads, then bin-packs each worker's tasks into groups
// (at least its slots, more when groups would pass target bytes, never
// more than its tasks). It returns the groups with their places, by
// owner; no tasks give one empty group.
func assignGroups(tasks []table.FileScanTask, workers []Worker, target int64) ([][]table.FileScanTask, []place) {
	if len(tasks) == 0 {
		return [][]table.FileScanTask{nil}, []place{placeKey(workers, "")}
	}
	owner, fallback := placeTasks(tasks, workers, target)
	perWorker := make([][]table.FileScanTask, len(workers))
	seconds := make([]map[int]int64, len(workers))
	for i, t := range tasks {
		w := owner[i]
		perWorker[w] = append(perWorker[w], t)
		if fallback[i] >= 0 {
			if seconds[w] == nil {
				seconds[w] = map[int]int64{}
			}
			seconds[w][fallback[i]] += t.Length
		}
	}
	var groups [][]table.FileScanTask
	var places []place
	for w, ts := range perWorker {
		if len(ts) == 0 {
			continue
		}
		var bytes int64
		for _, t := range ts {
			bytes += t.Length
		}
		n := max(workers[w].Slots, 1)
		if target > 0 {
			n = max(n, int((bytes+target-1)/target))
		}
		pl := place{owner: w, fallback: mostBytes(seconds[w])}
		for _, g := range groupTasks(ts, n) {
			groups = append(groups, g)
			places = append(places, pl)
		}
	}
	return groups, places
}

// mostBytes is the worker that is the second choice of most of a
// group's bytes: its fallback location.
func mostBytes(seconds map[int]int64) int {
	best, most := -1, int64(-1)
	for w, b := range seconds {
		if b > most || (b == most && w < best) {
			best, most = w, b
		}
	}
	return best
}

// testHookAffinityKey, when set, replaces a task's file path as its
// rendezvous key: the plan tests' files have random names, their
// placements must not.
var testHookAffinityKey func(table.FileScanTask) string

// affinityKey is what places a task: its file's path.
func affinityKey(t table.FileScanTask) string {
	if testHookAffinityKey != nil {
		return testHookAffinityKey(t)
	}
	return t.File.FilePath()
}

// placeTasks gives each task an owner and a fallback (its next worker in
// hash order after the owner): largest first, each to the first worker in
// its file's order that is not saturated, or the least loaded when all
// are. No worker is saturated in a scan of at most target bytes per
// worker.
func placeTasks(tasks []table.FileScanTask, workers []Worker, target int64) (owner, fallback []int) {
	hashes := workerHashes(workers)
	var total, largest int64
	slots := 0
	for _, t := range tasks {
		total += t.Length
		largest = max(largest, t.Length)
	}
	for _, w := range workers {
		slots += max(w.Slots, 1)
	}
	if target <= 0 {
		target = DefaultTargetGroupBytes
	}
	bounded := total > target*int64(len(workers))
	capacity := make([]int64, len(workers))
	for i, w := range workers {
		capacity[i] = total
		if bounded {
			capacity[i] = max(int64(float64(total)*loadSlack*float64(max(w.Slots, 1))/float64(slots)), largest)
		}
	}
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(tasks[b].Length, tasks[a].Length); c != 0 {
			return c
		}
		return cmp.Compare(affinityKey(tasks[a]), affinityKey(tasks[b]))
	})
	owner, fallback = make([]int, len(tasks)), make([]int, len(tasks))
	load := make([]int64, len(workers))
	for _, i := range order {
		t := tasks[i]
		prefs := rendezvous(hashes, affinityKey(t))
		pick := -1
		for _, w := range prefs {
			if load[w]+t.Length <= capacity[w] {
				pick = w
				break
			}
		}
		if pick < 0 {
			pick = prefs[0]
			for _, w := range prefs {
				if load[w] < load[pick] {
					pick = w
				}
			}
		}
		load[pick] += t.Length
		owner[i], fallback[i] = pick, -1
		for _, w := range prefs {
			if w != pick {
				fallback[i] = w
				break
			}
		}
	}
	return owner, fallback
}
