package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/resultcache"
	"github.com/icefloe/icefloe/planner"
)

// Answers the coordinator gives itself (planner/answer.go) and the
// result cache's copies.
//
// A plan with an Answer is served as one endpoint without locations —
// in Flight SQL, "read it from the server you asked", which the JDBC
// driver and ADBC (Go, Python) do over the connection they already have
// — whose ticket carries the rows themselves, sealed: any coordinator
// that holds the cluster key serves it, with no state and no worker
// call. The ticket is bound to the principal that planned it.
//
// A plan with a Fill (a result-cache miss of a query with one endpoint)
// is served through the single-endpoint proxy (proxy.go): the
// coordinator pulls the endpoint from its worker, streams it on and keeps
// a copy, which it puts in the result cache once the stream ended whole
// and stayed under the cache's entry bound.

// OptionResultCache is the session option that turns the result cache
// on or off for the session, as SET result_cache does.
const OptionResultCache = "icefloe.result_cache"

// answerQueryID marks the tickets of answers.
const answerQueryID = "icefloe.flightsql.answer"

// answerTicket is what an answer's ticket carries.
type answerTicket struct {
	QueryID   string `json:"q"`
	Principal string `json:"p,omitempty"`
	// IPC is the result as one Arrow IPC stream.
	IPC []byte `json:"r"`
}

// answerInfo is the FlightInfo of a plan the coordinator answered.
func (s *Server) answerInfo(ctx context.Context, plan *planner.Plan, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	handle, err := seal(s.opts.Key, answerQueryID, answerTicket{QueryID: plan.QueryID, Principal: auth.Name(ctx), IPC: plan.Answer.IPC}, s.opts.PreparedTTL)
	if err != nil {
		return nil, err
	}
	tkt, err := flightsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, fmt.Errorf("flightsql: ticket: %w", err)
	}
	ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tkt}}
	if !plan.ExpiresAt.IsZero() {
		ep.ExpirationTime = timestamppb.New(plan.ExpiresAt)
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(plan.Schema, s.alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{ep},
		TotalRecords:     plan.Answer.Rows,
		TotalBytes:       int64(len(plan.Answer.IPC)),
		Ordered:          plan.Ordered,
	}, nil
}

// doGetAnswer serves an answer's ticket; ok is false when the handle is
// not one.
func (s *Server) doGetAnswer(ctx context.Context, handle []byte) (sc *arrow.Schema, ch <-chan flight.StreamChunk, ok bool, err error) {
	var at answerTicket
	if ok, err := s.openTicket(ctx, answerQueryID, handle, &at); !ok || err != nil {
		return nil, nil, ok, err
	}
	rdr, err := ipc.NewReader(bytes.NewReader(at.IPC), ipc.WithAllocator(s.alloc))
	if err != nil {
		return nil, nil, true, fmt.Errorf("%w: rows: %v", ErrHandle, err)
	}
	out := make(chan flight.StreamChunk)
	go func() {
		defer close(out)
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			select {
			case out <- flight.StreamChunk{Data: rec}:
			case <-ctx.Done():
				rec.Release()
				return
			}
		}
		if err := rdr.Err(); err != nil {
			select {
			case out <- flight.StreamChunk{Err: fmt.Errorf("%w: rows: %v", ErrHandle, err)}:
			case <-ctx.Done():
			}
		}
	}()
	return rdr.Schema(), out, true, nil
}

func (t *answerTicket) owner() string { return t.Principal }

// ownedTicket is a ticket the coordinator serves itself, bound to the
// principal that planned it.
type ownedTicket interface{ owner() string }

// openTicket opens a ticket of kind the coordinator issued into t; ok is
// false when handle is not one. A ticket planned for another principal
// is ErrDenied.
func (s *Server) openTicket(ctx context.Context, kind string, handle []byte, t ownedTicket) (ok bool, err error) {
	if err := unseal(s.opts.Key, kind, handle, t); err != nil {
		return false, nil
	}
	if t.owner() != auth.Name(ctx) {
		return true, fmt.Errorf("%w: this ticket was planned for another principal", planner.ErrDenied)
	}
	return true, nil
}

// resultCacheOff tells whether the call's session turned the result
// cache off (SET result_cache = off, or OptionResultCache false).
func resultCacheOff(ctx context.Context) bool {
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil || ss.Closed() {
		return false
	}
	on, ok := resultCacheValue(ss.GetSessionOption(OptionResultCache))
	return ok && !on
}

// resultCacheValue reads a value of OptionResultCache: a boolean, or
// on, off, true, false, 1 or 0; ok is false for anything else.
func resultCacheValue(v *flight.SessionOptionValue) (on, ok bool) {
	switch x := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_BoolValue:
		return x.BoolValue, true
	case *pb.SessionOptionValue_StringValue:
		switch strings.ToLower(strings.TrimSpace(x.StringValue)) {
		case "on", "true", "1":
			return true, true
		case "off", "false", "0":
			return false, true
		}
	}
	return false, false
}

// setResultCache runs SET/RESET result_cache: it sets (or erases) the
// session option, in the session's cookie.
func (s *Server) setResultCache(ctx context.Context, set *parse.Set) error {
	if set.Name != parse.SettingResultCache {
		return fmt.Errorf("%w: SET %s", planner.ErrRefused, set.Name)
	}
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return ErrNoSession
	}
	if set.Reset {
		ss.EraseSessionOption(OptionResultCache)
	} else {
		v, err := flight.NewSessionOptionValue(set.On)
		if err != nil {
			return err
		}
		ss.SetSessionOption(OptionResultCache, &v)
	}
	sendCookie(ctx, ss)
	return nil
}

// keeper copies a proxied result for the result cache, until it grows
// past the cache's entry bound.
type keeper struct {
	cache *resultcache.Cache
	key   resultcache.Key
	buf   bytes.Buffer
	w     *ipc.Writer
	rows  int64
	over  bool
}

// newKeeper returns a keeper of the result fill names, or nil when there
// is no cache or fill names nothing.
func (s *Server) newKeeper(fill string, schema *arrow.Schema) *keeper {
	if s.opts.ResultCache == nil || fill == "" {
		return nil
	}
	key, err := resultcache.ParseKey(fill)
	if err != nil {
		return nil
	}
	k := &keeper{cache: s.opts.ResultCache, key: key}
	k.w = ipc.NewWriter(&k.buf, ipc.WithSchema(schema))
	return k
}

// add copies rec, unless the copy is over the bound already.
func (k *keeper) add(rec arrow.RecordBatch) {
	if k == nil || k.over {
		return
	}
	if err := k.w.Write(rec); err != nil || int64(k.buf.Len()) > k.cache.MaxEntryBytes() {
		k.over = true
		k.buf = bytes.Buffer{}
		return
	}
	k.rows += rec.NumRows()
}

// keep puts the whole result in the cache.
func (k *keeper) keep() {
	if k == nil || k.over || k.w.Close() != nil {
		return
	}
	k.cache.Put(k.key, bytes.Clone(k.buf.Bytes()), k.rows)
}
