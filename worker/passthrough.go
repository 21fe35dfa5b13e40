package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// passthrough streams a bare projection of one scan straight from
// iceberg-go's reader, without the copy into and out of DuckDB. The planner
// sets it only when the bound schema's types equal the scan's, and send
// checks every batch against it all the same.
func (s *Server) passthrough(ctx context.Context, sc wire.Scan, schema *arrow.Schema, stream flight.DataStreamWriter) error {
	name := scanName(sc)
	tbl, err := s.opts.Cache.Open(ctx, strings.Split(name, "."), sc.MetadataLocation, sc.Props)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	rdr, done, err := s.openScan(ctx, tbl, name, sc)
	if err != nil {
		return err
	}
	defer done()
	rdr.Retain() // one reference for the merger, one for done
	merged := engine.Merge(rdr, s.sendOptions(ctx))
	defer merged.Release()
	_, _, err = s.send(ctx, schema, merged, stream)
	var qe *queryError
	if errors.As(err, &qe) {
		// A read error, not a query error: keep its code and file name.
		if rerr := rdr.Err(); rerr != nil {
			return rerr
		}
	}
	return err
}
