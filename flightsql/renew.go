package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/icefloe/icefloe/statement"
)

// Renewer is the capability RenewFlightEndpoint needs (Capabilities.Renew).
type Renewer interface {
	// Renew reseals a ticket with freshly vended storage credentials and
	// returns it with its new expiry.
	Renew(ctx context.Context, sealed []byte) ([]byte, time.Time, error)
}

var _ Renewer = (*statement.Executor)(nil)

// RenewFlightEndpoint reseals an endpoint's ticket with freshly vended
// storage credentials and a new expiration time (see planner.Renew). The
// locations stay; only the ticket and expiration_time change.
func (s *Server) RenewFlightEndpoint(ctx context.Context, req *flight.RenewFlightEndpointRequest) (*flight.FlightEndpoint, error) {
	ep := req.GetEndpoint()
	if ep.GetTicket() == nil {
		return nil, ToStatus(ErrHandle)
	}
	r := s.opts.Capabilities.Renew
	if r == nil {
		return nil, ToStatus(errNoRenew)
	}
	sealed, expires, err := r.Renew(ctx, ep.GetTicket().GetTicket())
	if err != nil {
		return nil, ToStatus(err)
	}
	out := proto.Clone(ep).(*flight.FlightEndpoint)
	out.Ticket = &flight.Ticket{Ticket: sealed}
	out.ExpirationTime = timestamppb.New(expires)
	return out, nil
}
