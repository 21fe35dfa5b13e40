package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/tracing"
)

// Single-endpoint (proxy) mode.
//
// Some clients read only endpoints[0] of a FlightInfo, on the connection
// they already have (flightsql-dbapi, hence SQLAlchemy and Superset), and
// some cannot reach the workers at all. For them the coordinator answers a
// query with one endpoint without locations, whose ticket wraps the
// workers' endpoints; DoGet of it on the coordinator pulls every worker
// endpoint in parallel and streams their batches in endpoint order, with
// the FlightInfo schema. The mode is selected per call by the header
// HeaderSingleEndpoint, or per session by the session option
// OptionSingleEndpoint; the value "true" (or a boolean true) turns it on.
const (
	HeaderSingleEndpoint = "x-icefloe-single-endpoint"
	OptionSingleEndpoint = "icefloe.single_endpoint"
)

// proxyQueryID marks the tickets of single-endpoint mode.
const proxyQueryID = "icefloe.flightsql.proxy"

// proxyBuffer is how many batches each worker stream may read ahead of the
// one the client is being sent.
const proxyBuffer = 4

// proxyTicket is what a single-endpoint ticket carries: the query's schema
// and its worker endpoints, in order.
type proxyTicket struct {
	QueryID string `json:"q"`
	// Principal is who planned the query: only they may pull it.
	Principal string          `json:"p,omitempty"`
	Schema    []byte          `json:"s"`
	Endpoints []proxyEndpoint `json:"e"`
	// Trace is the statement's traceparent (tracing.Traceparent).
	Trace string `json:"tr,omitempty"`
	// Fill is the result cache key (resultcache.Key.Full) to keep the
	// result under once it was read whole (answer.go).
	Fill string `json:"f,omitempty"`
}

func (t *proxyTicket) owner() string { return t.Principal }

type proxyEndpoint struct {
	Ticket    []byte   `json:"t"`
	Locations []string `json:"l"`
}

func truthy(s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	return err == nil && b
}

// wantsSingleEndpoint tells whether the call asks for single-endpoint mode.
func wantsSingleEndpoint(ctx context.Context) bool {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for _, v := range md.Get(HeaderSingleEndpoint) {
			if truthy(v) {
				return true
			}
		}
	}
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil || ss.Closed() {
		return false
	}
	switch v := ss.GetSessionOption(OptionSingleEndpoint).GetOptionValue().(type) {
	case *pb.SessionOptionValue_BoolValue:
		return v.BoolValue
	case *pb.SessionOptionValue_StringValue:
		return truthy(v.StringValue)
	}
	return false
}

// validSingleEndpointValue tells whether v is a value SetSessionOptions
// accepts for OptionSingleEndpoint.
func validSingleEndpointValue(v *flight.SessionOptionValue) bool {
	switch x := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_BoolValue:
		return true
	case *pb.SessionOptionValue_StringValue:
		_, err := strconv.ParseBool(strings.TrimSpace(x.StringValue))
		return err == nil
	}
	return false
}

// singleEndpoint rewrites a query's FlightInfo into one proxied endpoint
// when the call asks for it, and returns info unchanged otherwise.
func (s *Server) singleEndpoint(ctx context.Context, info *flight.FlightInfo, queryID string) (*flight.FlightInfo, error) {
	if !wantsSingleEndpoint(ctx) {
		return info, nil
	}
	return s.proxied(ctx, info, queryID, "")
}

// proxied rewrites a query's FlightInfo into one proxied endpoint, whose
// result is kept in the result cache under fill when fill is set.
func (s *Server) proxied(ctx context.Context, info *flight.FlightInfo, queryID, fill string) (*flight.FlightInfo, error) {
	pt := proxyTicket{QueryID: queryID, Schema: info.Schema, Principal: auth.Name(ctx), Trace: tracing.Traceparent(ctx), Fill: fill}
	for _, e := range info.Endpoint {
		pe := proxyEndpoint{Ticket: e.GetTicket().GetTicket()}
		for _, l := range e.Location {
			pe.Locations = append(pe.Locations, l.GetUri())
		}
		pt.Endpoints = append(pt.Endpoints, pe)
	}
	handle, err := seal(s.opts.Key, proxyQueryID, pt, s.opts.PreparedTTL)
	if err != nil {
		return nil, err
	}
	tkt, err := flightsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, fmt.Errorf("flightsql: ticket: %w", err)
	}
	ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tkt}}
	// The proxied endpoint expires with the first of the tickets it reads.
	for _, e := range info.Endpoint {
		if x := e.GetExpirationTime(); x != nil && (ep.ExpirationTime == nil || x.AsTime().Before(ep.ExpirationTime.AsTime())) {
			ep.ExpirationTime = x
		}
	}
	info.Endpoint = []*flight.FlightEndpoint{ep}
	return info, nil
}

// doGetProxy serves a single-endpoint ticket; ok is false when the handle
// is not one.
func (s *Server) doGetProxy(ctx context.Context, handle []byte) (sc *arrow.Schema, ch <-chan flight.StreamChunk, ok bool, err error) {
	var pt proxyTicket
	if ok, err := s.openTicket(ctx, proxyQueryID, handle, &pt); !ok || err != nil {
		return nil, nil, ok, err
	}
	sc, err = flight.DeserializeSchema(pt.Schema, s.alloc)
	if err != nil {
		return nil, nil, true, fmt.Errorf("%w: schema: %v", ErrHandle, err)
	}
	// The client learns the schema before the workers have computed
	// anything, so it can cancel while they work.
	if err := sendSchemaNow(ctx, sc, s.alloc); err != nil {
		return nil, nil, true, err
	}
	out := make(chan flight.StreamChunk)
	go s.proxyStreams(ctx, pt, s.newKeeper(pt.Fill, sc), out)
	return sc, out, true, nil
}

// proxyStreams pulls every endpoint in parallel, each at most proxyBuffer
// batches ahead, and sends their batches to out in endpoint order. It
// closes out when done; a failed endpoint ends the stream with its error.
// When the client goes away ctx ends, which cancels every worker stream.
func (s *Server) proxyStreams(ctx context.Context, pt proxyTicket, keep *keeper, out chan<- flight.StreamChunk) {
	defer close(out)
	var failed error
	ctx, span := tracing.Continue(ctx, "proxy", pt.Trace, attribute.String("icefloe.query_id", pt.QueryID))
	defer func() { tracing.End(span, failed) }()
	parent := ctx
	start := time.Now()
	fetch := audit.Entry{Event: audit.EventFetch, QueryID: pt.QueryID, TraceID: tracing.TraceID(ctx)}
	defer func() {
		if parent.Err() != nil {
			tracing.Logger(ctx, s.log).Info("flightsql: proxy stream cancelled", zap.Int("endpoints", len(pt.Endpoints)),
				zap.Error(context.Cause(parent)))
			failed = context.Cause(parent)
		}
		if s.opts.Audit != nil {
			s.caller(parent, &fetch)
			fetch.Duration = audit.Since(start)
			s.opts.Audit.Write(fetch, ToStatus(failed))
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			tracing.Logger(ctx, s.log).Error("flightsql: panic in proxy stream", zap.Any("panic", p))
			select {
			case out <- flight.StreamChunk{Err: fmt.Errorf("flightsql: proxy stream: panic: %v", p)}:
			case <-ctx.Done():
			}
		}
	}()
	mem := memory.Allocator(s.alloc)
	if s.opts.Budget != nil {
		a := s.opts.Budget.Account(pt.QueryID)
		defer a.Close()
		mem = a
	}
	chans := make([]chan flight.StreamChunk, len(pt.Endpoints))
	var wg sync.WaitGroup
	for i, e := range pt.Endpoints {
		chans[i] = make(chan flight.StreamChunk, proxyBuffer)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(chans[i])
			if err := s.pullEndpoint(ctx, e, mem, chans[i]); err != nil {
				select {
				case chans[i] <- flight.StreamChunk{Err: err}:
				case <-ctx.Done():
				}
			}
		}()
	}
	defer func() {
		cancel()
		// Drain what the pullers still hold so every batch is released.
		for _, c := range chans {
			for chunk := range c {
				if chunk.Data != nil {
					chunk.Data.Release()
				}
			}
		}
		wg.Wait()
	}()
	for _, c := range chans {
		for chunk := range c {
			if chunk.Data != nil {
				fetch.Rows += chunk.Data.NumRows()
				fetch.Bytes += int64(util.TotalRecordSize(chunk.Data))
				keep.add(chunk.Data)
			}
			select {
			case out <- chunk:
				if chunk.Err != nil {
					failed = chunk.Err
					return
				}
			case <-ctx.Done():
				if chunk.Data != nil {
					chunk.Data.Release()
				}
				return
			}
		}
	}
	if ctx.Err() == nil {
		keep.keep()
	}
}

// pullEndpoint reads one worker endpoint into c, trying its locations in
// order until one answers.
func (s *Server) pullEndpoint(ctx context.Context, e proxyEndpoint, mem memory.Allocator, c chan<- flight.StreamChunk) error {
	out, err := s.asCaller(ctx)
	if err != nil {
		return err
	}
	o := s.pullOptions()
	o.Allocator = mem
	err = s.opts.Flight.Pull(out, e.Locations, e.Ticket, o, membudget.Guard(mem,
		flightclient.SendTo(ctx, c, func(rec arrow.RecordBatch) flight.StreamChunk { return flight.StreamChunk{Data: rec} })))
	var pe *flightclient.PullError
	if errors.As(err, &pe) {
		return fmt.Errorf("flightsql: proxy: %w", pe)
	}
	return err
}

// forwardTTL is how long the token the proxy pulls with stays valid; it
// is checked when each worker stream starts.
const forwardTTL = 5 * time.Minute

// asCaller returns ctx for calls to the workers made on behalf of the
// caller: with authentication on, they carry a short-lived token of the
// caller's principal, which the workers verify themselves and match
// against the principal each ticket is bound to.
func (s *Server) asCaller(ctx context.Context) (context.Context, error) {
	if s.opts.Auth == nil {
		return ctx, nil
	}
	v, err := s.opts.Auth.Forward(ctx, forwardTTL)
	if err != nil {
		return nil, fmt.Errorf("flightsql: proxy: %w", err)
	}
	return metadata.AppendToOutgoingContext(ctx, flightclient.AuthorizationHeader, v), nil
}

// pullOptions are the options of the proxy's pulls: a worker that answers
// Unavailable is reported to membership, which takes it out of planning.
func (s *Server) pullOptions() flightclient.PullOptions {
	o := flightclient.PullOptions{Allocator: s.alloc}
	if s.opts.Membership != nil {
		o.OnUnavailable = s.opts.Membership.Unreachable
	}
	return o
}
