package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/planner"
)

// ingester is the part of the planner bulk ingest needs;
// *planner.Planner implements it.
type ingester interface {
	Ingest(ctx context.Context, s planner.Session, in planner.Ingest) (int64, error)
}

var _ ingester = (*planner.Planner)(nil)

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
	ing, ok := s.opts.Planner.(ingester)
	if !ok {
		return 0, ToStatus(fmt.Errorf("%w: bulk ingest", planner.ErrUnsupported))
	}
	in := planner.Ingest{Catalog: cmd.GetCatalog(), Schema: cmd.GetSchema(), Table: cmd.GetTable(), Rows: rdr}
	if opts := cmd.GetTableDefinitionOptions(); opts != nil {
		switch opts.IfNotExist {
		case flightsql.TableDefinitionOptionsTableNotExistOptionFail:
			in.IfMissing = planner.MissingFail
		default:
			in.IfMissing = planner.MissingCreate
		}
		switch opts.IfExists {
		case flightsql.TableDefinitionOptionsTableExistsOptionAppend:
			in.IfExists = planner.ExistsAppend
		case flightsql.TableDefinitionOptionsTableExistsOptionReplace:
			in.IfExists = planner.ExistsReplace
		default:
			in.IfExists = planner.ExistsFail
		}
	}
	var n int64
	err := s.audited(ctx, kindIngest, "", func(ctx context.Context, _ *audit.Entry) (int64, error) {
		var err error
		n, err = ing.Ingest(ctx, s.sessionOf(ctx), in)
		return n, err
	})
	return n, ToStatus(err)
}
