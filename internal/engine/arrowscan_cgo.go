package engine

/*
#include <stdlib.h>
void icefloeStreamBind(void *info);
void icefloeStreamInit(void *info);
void icefloeStreamScan(void *info, void *output);
void icefloeStreamFree(void *data);
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// The callbacks of the stream table function (arrowscan.go). DuckDB calls
// them from its own threads; the Go values they need travel as cgo
// handles in C memory that DuckDB frees through icefloeStreamFree.

// registerStreamFunction registers the table function on conn's database.
func registerStreamFunction(conn bindings.Connection) error {
	f := bindings.CreateTableFunction()
	defer bindings.DestroyTableFunction(&f)
	bindings.TableFunctionSetName(f, streamFunction)
	id := bindings.CreateLogicalType(bindings.TypeUBigInt)
	bindings.TableFunctionAddParameter(f, id)
	bindings.DestroyLogicalType(&id)
	bindings.TableFunctionSetBind(f, unsafe.Pointer(C.icefloeStreamBind))
	bindings.TableFunctionSetInit(f, unsafe.Pointer(C.icefloeStreamInit))
	bindings.TableFunctionSetFunction(f, unsafe.Pointer(C.icefloeStreamScan))
	bindings.TableFunctionSupportsProjectionPushdown(f, true)
	if bindings.RegisterTableFunction(conn, f) == bindings.StateError {
		return errors.New("engine: register the stream table function")
	}
	return nil
}

// handle puts v in C memory for DuckDB to hold.
func handle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(cgo.Handle(0))))
	*(*cgo.Handle)(p) = cgo.NewHandle(v)
	return p
}

func handleValue(p unsafe.Pointer) any { return (*(*cgo.Handle)(p)).Value() }

// recovered turns a panic in a callback into an error for DuckDB: a panic
// unwinding through DuckDB's frames would end the process.
func recovered(fail func(string)) {
	if p := recover(); p != nil {
		fail(fmt.Sprintf("engine: stream scan panicked: %v", p))
	}
}

//export icefloeStreamFree
func icefloeStreamFree(p unsafe.Pointer) {
	h := *(*cgo.Handle)(p)
	if sc, ok := h.Value().(*streamScan); ok {
		sc.close()
	}
	h.Delete()
	C.free(p)
}

//export icefloeStreamBind
func icefloeStreamBind(p unsafe.Pointer) {
	info := bindings.BindInfo{Ptr: p}
	fail := func(msg string) { bindings.BindSetError(info, msg) }
	defer recovered(fail)
	v := bindings.BindGetParameter(info, 0)
	id := bindings.GetUInt64(v)
	bindings.DestroyValue(&v)
	var cc bindings.ClientContext
	bindings.TableFunctionGetClientContext(info, &cc)
	conn := uint64(bindings.ClientContextGetConnectionId(cc))
	bindings.DestroyClientContext(&cc)
	s, ok := streams.Load(id)
	if !ok || s.(*streamSource).connID != conn {
		fail("no such stream")
		return
	}
	src := s.(*streamSource)
	for i, f := range src.rdr.Schema().Fields() {
		bindings.BindAddResultColumn(info, f.Name, src.types[i])
	}
	if src.rows >= 0 {
		bindings.BindSetCardinality(info, bindings.IdxT(src.rows), false)
	}
	bindings.BindSetBindData(info, handle(src), unsafe.Pointer(C.icefloeStreamFree))
}

//export icefloeStreamInit
func icefloeStreamInit(p unsafe.Pointer) {
	info := bindings.InitInfo{Ptr: p}
	fail := func(msg string) { bindings.InitSetError(info, msg) }
	defer recovered(fail)
	src := handleValue(bindings.InitGetBindData(info)).(*streamSource)
	cols := make([]uint64, bindings.InitGetColumnCount(info))
	for i := range cols {
		cols[i] = uint64(bindings.InitGetColumnIndex(info, bindings.IdxT(i)))
	}
	sc, err := src.newScan(cols)
	if err != nil {
		fail(err.Error())
		return
	}
	bindings.InitSetMaxThreads(info, 1)
	bindings.InitSetInitData(info, handle(sc), unsafe.Pointer(C.icefloeStreamFree))
}

//export icefloeStreamScan
func icefloeStreamScan(p, out unsafe.Pointer) {
	info := bindings.FunctionInfo{Ptr: p}
	fail := func(msg string) { bindings.FunctionSetError(info, msg) }
	defer recovered(fail)
	sc := handleValue(bindings.FunctionGetInitData(info)).(*streamScan)
	if err := sc.fill(bindings.DataChunk{Ptr: out}); err != nil {
		fail(err.Error())
	}
}
