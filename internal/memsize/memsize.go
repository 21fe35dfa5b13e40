package memsize

import (
	"reflect"
	"runtime"
	"strings"
	"unsafe"
)

// Of returns the bytes of the heap allocations reachable from v: the
// value v points to (when it is a pointer, map, slice or string) and
// everything reachable from there. The inline bytes of v itself are not
// counted: they live wherever the caller keeps v.
func Of(v any) int64 {
	if v == nil {
		return 0
	}
	w := walker{seen: map[uintptr]struct{}{}}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.String, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		w.refs(rv)
	default:
		// A non-pointer value in an interface is boxed: one allocation
		// of its type's size.
		w.n += roundUp(rv.Type().Size())
		w.refs(rv)
	}
	return w.n
}

type walker struct {
	seen map[uintptr]struct{}
	n    int64
}

// first reports whether the allocation at p was not counted yet.
func (w *walker) first(p uintptr) bool {
	if p == 0 {
		return false
	}
	if _, ok := w.seen[p]; ok {
		return false
	}
	w.seen[p] = struct{}{}
	return true
}

// refs counts the allocations v refers to, not v's own inline bytes.
func (w *walker) refs(v reflect.Value) {
	t := v.Type()
	if !hasPointers(t) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || !w.first(v.Pointer()) {
			return
		}
		w.n += roundUp(t.Elem().Size())
		w.refs(v.Elem())
	case reflect.String:
		if v.Len() > 0 && w.first(uintptr(unsafe.Pointer(unsafe.StringData(v.String())))) {
			w.n += roundUp(uintptr(v.Len()))
		}
	case reflect.Slice:
		if v.Cap() == 0 || !w.first(v.Pointer()) {
			return
		}
		w.n += roundUp(uintptr(v.Cap()) * t.Elem().Size())
		if hasPointers(t.Elem()) {
			for i := 0; i < v.Len(); i++ {
				w.refs(v.Index(i))
			}
		}
	case reflect.Array:
		if hasPointers(t.Elem()) {
			for i := 0; i < v.Len(); i++ {
				w.refs(v.Index(i))
			}
		}
	case reflect.Struct:
		if elem, ok := atomicPointer(t); ok {
			if p := v.Field(v.NumField() - 1).UnsafePointer(); p != nil {
				w.refs(reflect.NewAt(elem, p))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			w.refs(v.Field(i))
		}
	case reflect.Map:
		w.mapRefs(v)
	case reflect.Interface:
		w.interfaceRefs(v)
	case reflect.Chan:
		if !v.IsNil() && w.first(v.Pointer()) {
			w.n += roundUp(96 + uintptr(v.Cap())*t.Elem().Size())
		}
	}
	// Func: a closure's captured variables cannot be reached through
	// reflection. UnsafePointer: of unknown type.
}

// mapRefs counts a map's table, once, and what its keys and values reach.
func (w *walker) mapRefs(v reflect.Value) {
	if v.IsNil() || !w.first(v.Pointer()) {
		return
	}
	t := v.Type()
	w.n += mapBytes(t, v.Len())
	iter := v.MapRange()
	kp, vp := hasPointers(t.Key()), hasPointers(t.Elem())
	for iter.Next() {
		if kp {
			w.refs(iter.Key())
		}
		if vp {
			w.refs(iter.Value())
		}
	}
}

// interfaceRefs counts the boxed value of a non-nil interface (unless it
// is pointer-shaped: the interface holds the pointer itself) and what it
// reaches.
func (w *walker) interfaceRefs(v reflect.Value) {
	if v.IsNil() {
		return
	}
	e := v.Elem()
	switch e.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		// Pointer-shaped: the interface holds the pointer itself.
	default:
		if e.Type().Size() > 0 {
			w.n += roundUp(e.Type().Size())
		}
	}
	w.refs(e)
}

// atomicPointer tells whether t is sync/atomic's Pointer[T] and gives T:
// its first field is a [0]*T and its last the pointer.
func atomicPointer(t reflect.Type) (reflect.Type, bool) {
	if t.PkgPath() != "sync/atomic" || !strings.HasPrefix(t.Name(), "Pointer[") || t.NumField() == 0 {
		return nil, false
	}
	f := t.Field(0).Type
	if f.Kind() != reflect.Array || f.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	return f.Elem().Elem(), true
}

// hasPointers tells whether a value of t can refer to other memory.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.String, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		if _, ok := atomicPointer(t); ok {
			return true
		}
		for i := 0; i < t.NumField(); i++ {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// Swiss tables (Go 1.24 on): groups of 8 slots, each group a control word
// and 8 key/value slots, filled to 7/8 before they grow; a table holds at
// most 1024 slots and a directory points to the tables. Keys and values
// over 128 bytes are stored behind a pointer.
const (
	groupSlots    = 8
	maxTableSlots = 1024
	mapHeader     = 48
	tableHeader   = 32
	maxInline     = 128
)

func mapBytes(t reflect.Type, n int) int64 {
	ks, vs := t.Key().Size(), t.Elem().Size()
	var indirect int64
	if ks > maxInline {
		indirect += int64(n) * roundUp(ks)
		ks = 8
	}
	if vs > maxInline {
		indirect += int64(n) * roundUp(vs)
		vs = 8
	}
	slot := ks + vs
	if n <= groupSlots {
		// One group, no table.
		return roundUp(mapHeader) + roundUp(8+groupSlots*slot) + indirect
	}
	slots := 1
	for slots*7/8 < n {
		slots <<= 1
	}
	tables := 1
	if slots > maxTableSlots {
		tables = slots / maxTableSlots
	}
	perTable := slots / tables
	groups := uintptr(perTable / groupSlots)
	b := roundUp(mapHeader) + roundUp(uintptr(tables)*8) + int64(tables)*(roundUp(tableHeader)+roundUp(groups*(8+groupSlots*slot)))
	return b + indirect
}

// sizeClasses are the Go allocator's small object sizes (runtime's
// sizeclasses.go); larger objects take whole 8 KiB pages.
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const pageSize = 8192

// roundUp is the memory one allocation of n bytes takes.
func roundUp(n uintptr) int64 {
	if n == 0 {
		return 0
	}
	if n <= sizeClasses[len(sizeClasses)-1] {
		lo, hi := 0, len(sizeClasses)-1
		for lo < hi {
			mid := (lo + hi) / 2
			if sizeClasses[mid] < n {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return int64(sizeClasses[lo])
	}
	return int64((n + pageSize - 1) / pageSize * pageSize)
}

// LiveHeap is the bytes of live heap objects after two full collections
// (the second frees what the first's finalizers let go): what the tests
// compare Of's figures with.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
