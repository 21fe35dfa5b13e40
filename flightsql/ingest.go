package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// Ingester is the capability bulk ingest needs (Capabilities.Ingest);
// *statement.Executor implements it.
type Ingester interface {
	Ingest(ctx context.Context, s planner.Session, in statement.Ingest) (int64, error)
}

var _ Ingester = (*statement.Executor)(nil)

// DoPutCommandStatementIngest runs a bulk ingest (ADBC's adbc_ingest): the
// client's stream is written into the table as it arrives and committed
// once; the count is the number of rows. Temporary tables and transactions
// are refused.
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return 0, ToStatus(err)
	}
	if cmd.GetTemporary() {
		return 0, ToStatus(fmt.Errorf("%w: temporary tables (ingest with temporary=true); Iceberg tables are always durable", planner.ErrUnsupported))
	}
	ing := s.opts.Capabilities.Ingest
	if ing == nil {
		return 0, ToStatus(fmt.Errorf("%w: bulk ingest", planner.ErrUnsupported))
	}
	rows := &budgetedRows{RecordReader: flightio.Checked(rdr), mem: s.alloc}
	defer rows.done()
	in := statement.Ingest{Catalog: cmd.GetCatalog(), Schema: cmd.GetSchema(), Table: cmd.GetTable(), Rows: rows}
	if opts := cmd.GetTableDefinitionOptions(); opts != nil {
		switch opts.IfNotExist {
		case flightsql.TableDefinitionOptionsTableNotExistOptionFail:
			in.IfMissing = statement.MissingFail
		default:
			in.IfMissing = statement.MissingCreate
		}
		switch opts.IfExists {
		case flightsql.TableDefinitionOptionsTableExistsOptionAppend:
			in.IfExists = statement.ExistsAppend
		case flightsql.TableDefinitionOptionsTableExistsOptionReplace:
			in.IfExists = statement.ExistsReplace
		default:
			in.IfExists = statement.ExistsFail
		}
	}
	var n int64
	err := s.audited(ctx, kindIngest, func(ctx context.Context, _ *audit.Entry) (int64, error) {
		var err error
		n, err = ing.Ingest(ctx, s.sessionOf(ctx), in)
		return n, err
	})
	return n, ToStatus(err)
}

// budgetedRows counts each batch of a client's stream toward the process's
// memory budget while it is the current one (the IPC reader decodes it in
// place from the gRPC message, so no allocator sees it), and ends the
// stream with the budget's error when a batch arrives while the process
// is past its budget (mem is a membudget account; other allocators count
// nothing).
type budgetedRows struct {
	array.RecordReader
	mem     memory.Allocator
	release func()
	err     error
}

func (r *budgetedRows) Next() bool {
	if r.release != nil {
		r.release()
		r.release = nil
	}
	if r.err != nil || !r.RecordReader.Next() {
		return false
	}
	if a, ok := r.mem.(*membudget.Account); ok {
		r.release = a.Hold(util.TotalRecordSize(r.RecordReader.RecordBatch()))
	}
	if err := membudget.Check(r.mem); err != nil {
		r.err = fmt.Errorf("bulk ingest: %w", err)
		return false
	}
	return true
}

func (r *budgetedRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.RecordReader.Err()
}

// done stops counting the current batch (the stream itself is released
// by its owner).
func (r *budgetedRows) done() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}
