package flightclient

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// Action runs one Flight action on the server at loc and returns the
// bodies of its results.
func (p *Pool) Action(ctx context.Context, loc, typ string, body []byte) ([][]byte, error) {
	cl, release, err := p.Hold(loc)
	if err != nil {
		return nil, err
	}
	defer release()
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
