package worker

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/wire"
)

// DoAction answers the session actions that clients following endpoint
// locations send to every Flight server they open: the JDBC driver opens a
// client per worker with the connection's properties, so a URL with
// `catalog=` calls SetSessionOptions on the worker first and CloseSession
// when it closes. A worker runs sealed tickets whose names are already
// resolved, so it accepts the options and ignores them. It also takes the
// coordinator's wire.ActionRevokeTables (admit.go). Every other action is
// Unimplemented.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var res proto.Message
	switch a.GetType() {
	case flight.SetSessionOptionsActionType:
		var req flight.SetSessionOptionsRequest
		if err := proto.Unmarshal(a.GetBody(), &req); err != nil {
			return status.Errorf(codes.InvalidArgument, "unable to unmarshal SetSessionOptionsRequest: %v", err)
		}
		res = &flight.SetSessionOptionsResult{}
	case flight.GetSessionOptionsActionType:
		res = &flight.GetSessionOptionsResult{}
	case flight.CloseSessionActionType:
		res = &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}
	case wire.ActionRevokeTables:
		if err := s.revoke(stream.Context(), a.GetBody()); err != nil {
			return toStatus(stream.Context(), err)
		}
		return stream.Send(&flight.Result{})
	default:
		return status.Errorf(codes.Unimplemented, "worker: action %q is served by the coordinator", a.GetType())
	}
	body, err := proto.Marshal(res)
	if err != nil {
		return status.Errorf(codes.Internal, "worker: encode %s result: %v", a.GetType(), err)
	}
	return stream.Send(&flight.Result{Body: body})
}
