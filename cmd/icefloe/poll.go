package main

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// followEvery is how often the progress of a query being read is asked
// for (the server answers a poll of a running statement within a second).
const followEvery = 500 * time.Millisecond

// executePolled runs a prepared statement with incremental execution
// (PollFlightInfo): an update is polled until it answers its count, with
// the progress each poll reports on the progress line; a query's
// endpoints are read as soon as they come, while its progress is polled
// beside. polled is false when the server has no incremental execution:
// the caller executes the statement plainly. A statement whose client
// gives up (Ctrl-C, --timeout) is cancelled on the server
// (CancelFlightInfo): a polled update runs on without its client.
func (c *sqlClient) executePolled(ctx context.Context, prep *flightsql.PreparedStatement, update bool, w resultWriter) (polled bool, err error) {
	pi, err := prep.ExecutePoll(ctx, nil)
	if status.Code(err) == codes.Unimplemented {
		return false, nil
	}
	if err != nil {
		return true, rpcErr(err)
	}
	defer func() {
		if err != nil && ctx.Err() != nil {
			c.cancelPolled(ctx, pi.GetInfo())
		}
	}()
	c.progress.polled(pi)
	// An update runs until its count comes; a query until it is planned.
	for pi.GetFlightDescriptor() != nil && (update || len(pi.GetInfo().GetEndpoint()) == 0) {
		next, err := prep.ExecutePoll(ctx, pi.GetFlightDescriptor())
		if err != nil {
			return true, rpcErr(err)
		}
		pi = next
		c.progress.polled(pi)
	}
	if update {
		return true, w.affected(pi.GetInfo().GetTotalRecords())
	}
	stop := c.follow(ctx, prep, pi)
	defer stop()
	return true, c.result(ctx, prep, pi.GetInfo(), w)
}

// follow polls a query being read for its progress, while there is a
// progress line to show it, until the server says it is done or stop is
// called.
func (c *sqlClient) follow(ctx context.Context, prep *flightsql.PreparedStatement, pi *flight.PollInfo) (stop func()) {
	if c.progress == nil || pi.GetFlightDescriptor() == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(followEvery)
		defer tick.Stop()
		for desc := pi.GetFlightDescriptor(); desc != nil; desc = pi.GetFlightDescriptor() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			next, err := prep.ExecutePoll(ctx, desc)
			if err != nil {
				return // the progress line stays as it was; the read decides
			}
			pi = next
			c.progress.polled(pi)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// cancelPolled tells the server to cancel the statement info belongs to,
// best effort.
func (c *sqlClient) cancelPolled(ctx context.Context, info *flight.FlightInfo) {
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	_, _ = c.cl.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
}
