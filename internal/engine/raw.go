package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
)

// DuckDB's C API, below database/sql.
//
// duckdb-go v2 materialises every result before returning it (its
// Arrow.QueryContext runs a non-streaming pending result to its end) and
// tells only the type id of a prepared statement's parameters. Streaming
// results (stream.go) and decimal parameter types need the C connection,
// which duckdb-go keeps in an unexported field of its *Conn; rawConn
// reads it there. TestRawConnection fails when an upgrade moves it.

// errNoRawConn: the driver connection does not hold a C connection where
// rawConn looks for it (a duckdb-go upgrade changed its *Conn).
var errNoRawConn = errors.New("engine: no DuckDB C connection in the duckdb-go connection")

// rawConn returns the C connection of a duckdb-go driver connection.
func rawConn(dc any) (bindings.Connection, error) {
	c, ok := dc.(*duckdb.Conn)
	if !ok || c == nil {
		return bindings.Connection{}, fmt.Errorf("%w: driver connection %T", errNoRawConn, dc)
	}
	f := reflect.ValueOf(c).Elem().FieldByName("conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[bindings.Connection]() {
		return bindings.Connection{}, errNoRawConn
	}
	raw := *(*bindings.Connection)(unsafe.Pointer(f.UnsafeAddr()))
	if raw.Ptr == nil {
		return bindings.Connection{}, errNoRawConn
	}
	return raw, nil
}

// duckError is a DuckDB error message as duckdb-go reports it, so callers
// classify both the same way (errors.As to *duckdb.Error).
func duckError(msg string) error {
	t := duckdb.ErrorTypeInvalid
	for typ, prefix := range map[duckdb.ErrorType]string{
		duckdb.ErrorTypeParser:     "Parser Error: ",
		duckdb.ErrorTypeSyntax:     "Syntax Error: ",
		duckdb.ErrorTypePermission: "Permission Error: ",
		duckdb.ErrorTypeBinder:     "Binder Error: ",
		duckdb.ErrorTypeCatalog:    "Catalog Error: ",
		duckdb.ErrorTypeInterrupt:  "INTERRUPT Error: ",
	} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			t = typ
		}
	}
	return withoutHints(&duckdb.Error{Type: t, Msg: msg})
}

// prepare prepares one statement on the C connection. The caller destroys
// the statement with bindings.DestroyPrepare.
func (c *Conn) prepare(query string) (bindings.PreparedStatement, error) {
	var st bindings.PreparedStatement
	if bindings.Prepare(c.raw, query, &st) == bindings.StateError {
		msg := bindings.PrepareError(st)
		bindings.DestroyPrepare(&st)
		return st, duckError(msg)
	}
	return st, nil
}

// ParamType is the type DuckDB infers for one parameter of a statement.
type ParamType struct {
	// Type is DuckDB's type id; duckdb.TYPE_INVALID (or TYPE_ANY) where
	// the context does not say.
	Type duckdb.Type
	// Width and Scale of a DECIMAL.
	Width, Scale int
}

// ParamTypes prepares query, checked as Prepared checks it (one
// statement, of the given kind unless AnyStatement), and returns DuckDB's
// type of each of its parameters, in order. Preparing runs nothing.
func (c *Conn) ParamTypes(ctx context.Context, kind duckdb.StmtType, query string) ([]ParamType, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.checkText(ctx, kind, query); err != nil {
		return nil, err
	}
	st, err := c.prepare(query)
	if err != nil {
		return nil, err
	}
	defer bindings.DestroyPrepare(&st)
	if err := checkKind(kind, duckdb.StmtType(bindings.PreparedStatementType(st))); err != nil {
		return nil, err
	}
	n := int(bindings.NParams(st))
	out := make([]ParamType, n)
	for i := range out {
		lt := bindings.ParamLogicalType(st, bindings.IdxT(i+1))
		p := ParamType{Type: bindings.GetTypeId(lt)}
		if p.Type == duckdb.TYPE_DECIMAL {
			p.Width, p.Scale = int(bindings.DecimalWidth(lt)), int(bindings.DecimalScale(lt))
		}
		bindings.DestroyLogicalType(&lt)
		out[i] = p
	}
	return out, nil
}

// interruptEvery is how often an interrupt is asserted again while a
// cancelled statement has not ended yet.
const interruptEvery = 20 * time.Millisecond

// interrupter interrupts the statement running on conn once ctx ends, and
// again until stop is called; stop returns when it has stopped, so no
// interrupt reaches a later statement.
func interrupter(ctx context.Context, conn bindings.Connection) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTicker(interruptEvery)
		defer t.Stop()
		for {
			bindings.Interrupt(conn)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

var _ driver.Conn = (*duckdb.Conn)(nil)
