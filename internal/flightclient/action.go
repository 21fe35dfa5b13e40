package flightclient

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// ErrNoResult: an action answered with no result where one was expected.
var ErrNoResult = errors.New("flightclient: action returned no result")

// Action runs one Flight action on the server at loc and returns the
// bodies of its results.
func (p *Pool) Action(ctx context.Context, loc, typ string, body []byte) ([][]byte, error) {
	cl, release, err := p.Hold(loc)
	if err != nil {
		return nil, err
	}
	defer release()
	return DoAction(ctx, cl, typ, body)
}

// DoAction runs one Flight action over cl (a pooled client, or one made
// with flight.NewFlightServiceClient on a connection from Conn) and
// returns the bodies of its results.
func DoAction(ctx context.Context, cl flight.FlightServiceClient, typ string, body []byte) ([][]byte, error) {
	stream, err := cl.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r.GetBody())
	}
}

// DoActionOne is DoAction for an action that answers with one result: it
// returns that result's body, or ErrNoResult.
func DoActionOne(ctx context.Context, cl flight.FlightServiceClient, typ string, body []byte) ([]byte, error) {
	res, err := DoAction(ctx, cl, typ, body)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, ErrNoResult
	}
	return res[0], nil
}
