package memsize

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

type summary struct {
	Operation  string
	Properties map[string]string
}

type snapshot struct {
	ID       int64
	Parent   *int64
	List     string
	Summary  *summary
	SchemaID *int
}

type schema struct {
	ID     int
	fields []field
	byName atomic.Pointer[map[string]int]
}

type field struct {
	ID   int
	Name string
	Doc  string
	Type any
}

type bounds struct {
	lower, upper map[int][]byte
	counts       *[]int64
}

func makeSnapshot(i int) any {
	p := int64(i - 1)
	props := map[string]string{}
	for k := 0; k < 15; k++ {
		props["property-"+strconv.Itoa(k)] = strconv.Itoa(i * k)
	}
	sid := i % 3
	return &snapshot{ID: int64(i), Parent: &p, List: fmt.Sprintf("file:///warehouse/t/metadata/snap-%d-1-%08x.avro", i, i),
		Summary: &summary{Operation: "append", Properties: props}, SchemaID: &sid}
}

func makeSchema(i int) any {
	s := &schema{ID: i}
	idx := map[string]int{}
	for k := 0; k < 40; k++ {
		name := fmt.Sprintf("column_%d_%d", i, k)
		s.fields = append(s.fields, field{ID: k, Name: name, Type: k})
		idx[name] = k
	}
	s.byName.Store(&idx)
	return s
}

func makeBounds(i int) any {
	b := &bounds{lower: map[int][]byte{}, upper: map[int][]byte{}}
	for k := 0; k < 12; k++ {
		b.lower[k] = []byte(strconv.Itoa(i * k))
		b.upper[k] = []byte(strconv.Itoa(i*k + 999999))
	}
	c := make([]int64, 12, 16)
	b.counts = &c
	return b
}

func makeBytes(i int) any { return make([]byte, 3000+i%2000) }

func makeBigMap(i int) any {
	m := make(map[int64]string)
	for k := 0; k < 3000; k++ {
		m[int64(k)] = strconv.Itoa(k * i)
	}
	return m
}

// TestOfMatchesTheHeap: for values shaped like what the caches hold
// (snapshots with summary maps, schemas with lazy atomic indexes, column
// bounds, byte buffers, large maps), the sum of Of over many values is
// within 15 % of what the runtime says they keep alive.
func TestOfMatchesTheHeap(t *testing.T) {
	for name, tc := range map[string]struct {
		make func(int) any
		n    int
	}{
		"snapshots": {makeSnapshot, 20000},
		"schemas":   {makeSchema, 2000},
		"bounds":    {makeBounds, 10000},
		"bytes":     {makeBytes, 5000},
		"big maps":  {makeBigMap, 50},
	} {
		t.Run(name, func(t *testing.T) {
			held := make([]any, tc.n)
			before := LiveHeap()
			for i := range held {
				held[i] = tc.make(i + 1)
			}
			after := LiveHeap()
			var measured int64
			for _, v := range held {
				measured += Of(v)
			}
			real := after - before - int64(tc.n)*16 // the slice of interfaces
			ratio := float64(measured) / float64(real)
			t.Logf("%s: measured %d, heap %d (ratio %.3f)", name, measured, real, ratio)
			if math.Abs(ratio-1) > 0.15 {
				t.Fatalf("%s: Of says %d bytes, the heap grew by %d (ratio %.2f)", name, measured, real, ratio)
			}
			runtime.KeepAlive(held)
		})
	}
}

// TestOfCountsSharedOnce: memory reached twice is counted once.
func TestOfCountsSharedOnce(t *testing.T) {
	b := make([]byte, 4096)
	s := "a string of some length that is shared"
	one := Of(&struct{ A []byte }{b})
	two := Of(&struct{ A, B []byte }{b, b})
	if two-one != 24 { // only the struct grew, by one slice header
		t.Fatalf("a shared slice counted twice: %d then %d", one, two)
	}
	if Of([]string{s, s}) != roundUp(32)+roundUp(uintptr(len(s))) {
		t.Fatalf("a shared string counted twice: %d", Of([]string{s, s}))
	}
	type node struct{ next *node }
	n := &node{}
	n.next = n
	if Of(n) != 8 {
		t.Fatalf("a cycle: %d", Of(n))
	}
}
