package worker

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/wire"
)

// DoAction answers the session actions that clients following endpoint
// locations send to every Flight server they open: the JDBC driver opens a
// client per worker with the connection's properties, so a URL with
// `catalog=` calls SetSessionOptions on the worker first and CloseSession
// when it closes. A worker runs sealed tickets whose names are already
// resolved, so it accepts the options and ignores them. It also takes the
// coordinator's wire.ActionRevokeTables (admit.go) and the coordinators'
// key check (keyCheck), both only from the cluster when authentication is
// on. Every other action is Unimplemented.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var res proto.Message
	switch a.GetType() {
	case membership.KeyCheckAction:
		return s.keyCheck(a.GetBody(), stream)
	case flight.SetSessionOptionsActionType:
		var req flight.SetSessionOptionsRequest
		if err := proto.Unmarshal(a.GetBody(), &req); err != nil {
			return toStatus(stream.Context(), &actionError{errBadAction, fmt.Sprintf("unable to unmarshal SetSessionOptionsRequest: %v", err)})
		}
		res = &flight.SetSessionOptionsResult{}
	case flight.GetSessionOptionsActionType:
		res = &flight.GetSessionOptionsResult{}
	case flight.CloseSessionActionType:
		res = &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}
	case wire.ActionQueryProgress, wire.ActionCancelQuery, wire.ActionWorkerStats:
		body, err := s.queryAction(stream.Context(), a)
		if err != nil {
			return toStatus(stream.Context(), err)
		}
		return stream.Send(&flight.Result{Body: body})
	case wire.ActionReleasePartition:
		if err := s.releasePartition(stream.Context(), a.GetBody()); err != nil {
			return toStatus(stream.Context(), err)
		}
		return stream.Send(&flight.Result{})
	case wire.ActionRevokeTables:
		if err := s.revoke(stream.Context(), a.GetBody()); err != nil {
			return toStatus(stream.Context(), err)
		}
		return stream.Send(&flight.Result{})
	default:
		return toStatus(stream.Context(), &actionError{errCoordinatorAction, fmt.Sprintf("worker: action %q is served by the coordinator", a.GetType())})
	}
	body, err := proto.Marshal(res)
	if err != nil {
		return toStatus(stream.Context(), fmt.Errorf("worker: encode %s result: %v", a.GetType(), err))
	}
	return stream.Send(&flight.Result{Body: body})
}

// keyCheck answers a coordinator's sealed challenge, which proves to it
// that this worker holds its ticket key. A challenge sealed with another
// key is refused with PermissionDenied and logged here too.
func (s *Server) keyCheck(challenge []byte, stream flight.FlightService_DoActionServer) error {
	if s.opts.Authenticated && !auth.FromContext(stream.Context()).Cluster() {
		return toStatus(stream.Context(), errClusterOnly)
	}
	answer, err := membership.Answer(s.opts.Key, challenge, s.instance)
	if errors.Is(err, membership.ErrKeyMismatch) {
		from := "unknown"
		if p, ok := peer.FromContext(stream.Context()); ok {
			from = p.Addr.String()
		}
		s.log.Error("refused a coordinator's key check: its ticket key differs from this worker's; set the same ticket_key (ICEFLOE_TICKET_KEY) on both",
			zap.String("from", from))
	}
	if err != nil {
		return toStatus(stream.Context(), err)
	}
	return stream.Send(&flight.Result{Body: answer})
}
