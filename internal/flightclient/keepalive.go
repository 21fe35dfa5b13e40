package flightclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Keepalive. Every connection this package dials pings its server over
// HTTP/2 when it has read nothing for KeepaliveTime while a call is open,
// and closes when no answer comes within KeepaliveTimeout: a server
// process that is stopped (SIGSTOP), hung as a whole or cut off by the
// network fails every call on the connection with Unavailable within
// StoppedAnsweringAfter of its last answer, instead of holding it for
// ever. A busy server answers pings from gRPC's own goroutines, so a slow
// query is not taken for a stopped one. gRPC's client does not ping more
// often than every 10 s.
const (
	KeepaliveTime         = 10 * time.Second
	KeepaliveTimeout      = 20 * time.Second
	StoppedAnsweringAfter = KeepaliveTime + KeepaliveTimeout
)

// keepaliveParams are the client side of the keepalive.
func keepaliveParams() grpc.DialOption {
	return grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout})
}

// ServerKeepalive is the keepalive enforcement every icefloe listener
// applies: it accepts pings as often as half KeepaliveTime (gRPC's
// default refuses pings more frequent than every 5 minutes and ends the
// connection with GOAWAY "too_many_pings"), with or without calls open,
// so the clients of this package (and clients configured alike) are
// never turned away for pinging.
func ServerKeepalive() grpc.ServerOption {
	return grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveTime / 2, PermitWithoutStream: true})
}

// keepaliveFailure is how gRPC words a connection closed for want of a
// ping's answer.
const keepaliveFailure = "keepalive ping failed to receive ACK"

// stoppedAnswering rewrites a call's error when its connection closed
// because the server stopped answering pings: still Unavailable (so
// fallbacks and membership treat it as gone), with a message naming the
// server and what happened.
func stoppedAnswering(target string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || !strings.Contains(st.Message(), keepaliveFailure) {
		return err
	}
	return status.Error(codes.Unavailable, fmt.Sprintf(
		"%s stopped answering: no answer to keepalive pings for %s (the process is stopped, hung or cut off from the network)", target, StoppedAnsweringAfter))
}

func unaryKeepalive(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return stoppedAnswering(cc.Target(), invoker(ctx, method, req, reply, cc, opts...))
}

func streamKeepalive(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, stoppedAnswering(cc.Target(), err)
	}
	return &keepaliveStream{ClientStream: s, target: cc.Target()}, nil
}

// keepaliveStream words the errors of a stream whose server stopped
// answering.
type keepaliveStream struct {
	grpc.ClientStream
	target string
}

func (s *keepaliveStream) RecvMsg(m any) error {
	return stoppedAnswering(s.target, s.ClientStream.RecvMsg(m))
}

func (s *keepaliveStream) SendMsg(m any) error {
	return stoppedAnswering(s.target, s.ClientStream.SendMsg(m))
}
