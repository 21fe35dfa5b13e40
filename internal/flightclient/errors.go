package flightclient

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Kind is what a failed call's answer means to its caller, so that code
// under the Flight boundary decides on it without speaking gRPC codes.
type Kind int

// Kinds of failure.
const (
	// Other is any answer without a kind of its own below.
	Other Kind = iota
	// Invalid: the server refused the request as the client's fault
	// (InvalidArgument).
	Invalid
	// NotFound: what the request names does not exist there (NotFound).
	NotFound
	// Unavailable: the server is not there or is shutting down
	// (Unavailable).
	Unavailable
	// Denied: the server refused the caller (PermissionDenied).
	Denied
	// Exhausted: the server ran out of a resource or hit a limit
	// (ResourceExhausted); running it elsewhere would not help.
	Exhausted
)

// Failure is how a failed call ended: its kind, the name of the server's
// code and the message, as the server's status carries them.
type Failure struct {
	Kind Kind
	// Remote says the error carries a server's status; when false, the
	// call failed on this side (dialing, decoding, the caller's own).
	Remote bool
	// Code names the status code ("Internal"); Message is the status
	// message, which for a wrapped status is the whole error's text.
	Code, Message string
}

// FailureOf classifies err, an error of a call through this package.
func FailureOf(err error) Failure {
	st, ok := status.FromError(err)
	f := Failure{Remote: ok, Code: st.Code().String(), Message: st.Message()}
	if !ok {
		return f
	}
	switch st.Code() {
	case codes.InvalidArgument:
		f.Kind = Invalid
	case codes.NotFound:
		f.Kind = NotFound
	case codes.Unavailable:
		f.Kind = Unavailable
	case codes.PermissionDenied:
		f.Kind = Denied
	case codes.ResourceExhausted:
		f.Kind = Exhausted
	}
	return f
}
