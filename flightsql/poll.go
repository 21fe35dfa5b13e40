package flightsql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
)

// Incremental execution: Flight SQL's PollFlightInfo, which ADBC drivers
// use when adbc.statement.exec.incremental is on.
//
// The first PollFlightInfo of a statement starts it as GetFlightInfo
// would, but in the background, and answers within pollWait:
//
//   - An update (INSERT … SELECT, CTAS, MERGE, DDL, …) runs on the
//     coordinator's request; until it ends, each poll answers a FlightInfo
//     without endpoints, a descriptor to poll again and the fraction of
//     the bytes its write fragments read of those planned
//     (queryreg.Info.Progress). The poll after it ended answers its count
//     (the FlightInfo GetFlightInfo answers) and no descriptor.
//   - A query answers its complete FlightInfo as soon as it is planned:
//     icefloe plans every endpoint before it answers, and the work is done
//     as the client reads them. While its endpoints are being read, a
//     poll answers the same FlightInfo, a descriptor and the fraction read;
//     once they were all read, or when no worker began serving them while
//     the poll waited (a client that polls to the end before it reads),
//     no descriptor: the poll never waits on reads only the client can
//     start.
//
// The statement's state lives in the coordinator that started it; a poll
// that reaches another one fails with NotFound. A running update nobody
// polled for pollAbandon is cancelled (before its commit: it commits
// nothing); CancelFlightInfo with any FlightInfo a poll answered cancels
// it, as it cancels a query by the query id its tickets carry.

// Timing and bounds of polled statements.
const (
	// pollWait is how long a poll waits for the statement to end (or, for
	// a query the client reads, to change) before it answers.
	pollWait = time.Second
	// pollAbandon is how long a polled statement is kept without a poll;
	// a running update is cancelled then.
	pollAbandon = time.Minute
	// maxPolls bounds the polled statements a coordinator keeps.
	maxPolls = 1024
	// maxPollInfoBytes bounds the FlightInfos of polled queries kept
	// in all; past it a query's first poll answers it complete.
	maxPollInfoBytes = 64 << 20
	// pollHandleTTL is how long a poll's descriptor is accepted.
	pollHandleTTL = 24 * time.Hour
)

// pollQueryID marks the sealed handles of poll descriptors.
const pollQueryID = "icefloe.flightsql.poll"

// pollTypeURL is the type of the Any a poll descriptor's command holds:
// no Flight SQL command, so arrow-go's server hands it to PollFlightInfo.
const pollTypeURL = "type.googleapis.com/icefloe.PollStatement"

// Errors of polled statements.
var (
	// errPollsFull: maxPolls statements are being polled
	// (ResourceExhausted).
	errPollsFull = fmt.Errorf("%w: %d statements are executing incrementally on this coordinator; retry later or execute without incremental execution", planner.ErrExhausted, maxPolls)
	// errPollAbandoned is the cause a running update nobody polled ends
	// with.
	errPollAbandoned = fmt.Errorf("%w: nobody polled the statement for %s", queryreg.ErrCancelled, pollAbandon)
)

// pollHandle is what a poll descriptor carries, sealed.
type pollHandle struct {
	ID        string `json:"id"`
	Principal string `json:"p"`
}

// polled is one statement started by PollFlightInfo.
type polled struct {
	id, principal string
	retry         *flight.FlightDescriptor
	cancel        context.CancelCauseFunc
	abandon       *time.Timer
	done          chan struct{} // closed once info and err are set

	info      *flight.FlightInfo
	infoBytes int64
	err       error

	mu       sync.Mutex
	lastPoll time.Time
	// delivered: an answer carried info (a query's endpoints).
	delivered bool
}

func (p *polled) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// touch notes a poll: a running statement stays another pollAbandon.
func (p *polled) touch() {
	p.mu.Lock()
	p.lastPoll = time.Now()
	p.mu.Unlock()
	if !p.ended() {
		p.abandon.Reset(pollAbandon)
	}
}

func (p *polled) idle(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return now.Sub(p.lastPoll) > pollAbandon
}

// pollTable holds the polled statements of a coordinator, bounded in
// count and in the bytes of the FlightInfos kept. Its zero value is ready.
type pollTable struct {
	mu        sync.Mutex
	m         map[string]*polled
	infoBytes int64
}

// add registers p, forgetting first the ended statements nobody polled
// for pollAbandon.
func (t *pollTable) add(p *polled) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*polled{}
	}
	now := time.Now()
	for id, q := range t.m {
		if q.ended() && q.idle(now) {
			t.infoBytes -= q.infoBytes
			delete(t.m, id)
		}
	}
	if len(t.m) >= maxPolls {
		return errPollsFull
	}
	t.m[p.id] = p
	return nil
}

func (t *pollTable) get(id string) *polled {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// keep decides whether a polled query's FlightInfo of n bytes may be
// kept for its next polls, and counts it if so.
func (t *pollTable) keep(n int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.infoBytes+n > maxPollInfoBytes {
		return false
	}
	t.infoBytes += n
	return true
}

// PollFlightInfoStatement starts a statement for incremental execution
// and answers its first poll.
func (s *Server) PollFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return nil, ToStatus(err)
	}
	sess, query := s.sessionOf(ctx), cmd.GetQuery()
	return s.startPoll(ctx, desc, func(ctx context.Context) (*flight.FlightInfo, error) {
		return s.run(ctx, sess, query, desc)
	})
}

// PollFlightInfoPreparedStatement starts a prepared statement for
// incremental execution and answers its first poll.
func (s *Server) PollFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	h, err := s.prepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, ToStatus(err)
	}
	return s.startPoll(ctx, desc, func(ctx context.Context) (*flight.FlightInfo, error) {
		return s.runPrepared(ctx, h, desc)
	})
}

// PollFlightInfo answers the next polls of a statement: desc is a
// descriptor a poll answered.
func (s *Server) PollFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	h, ok, err := s.pollHandleOf(desc)
	if !ok {
		return nil, ToStatus(fmt.Errorf("%w: PollFlightInfo of a descriptor that is neither a Flight SQL query nor one a poll answered", planner.ErrUnsupported))
	}
	if err != nil {
		return nil, ToStatus(err)
	}
	if h.Principal != auth.Name(ctx) {
		return nil, ToStatus(fmt.Errorf("%w: this statement was started by another principal", planner.ErrDenied))
	}
	p := s.polls.get(h.ID)
	if p == nil {
		return nil, ToStatus(fmt.Errorf("%w: %s: its polls must reach the coordinator that started it, within %s of the last one", queryreg.ErrNotFound, h.ID, pollAbandon))
	}
	pi, err := s.answerPoll(ctx, p)
	return pi, ToStatus(err)
}

// startPoll runs a statement in the background, under the call's
// principal, session and statement id but not its deadline, as a call the
// drain waits for, and answers its first poll.
func (s *Server) startPoll(ctx context.Context, desc *flight.FlightDescriptor, run func(context.Context) (*flight.FlightInfo, error)) (*flight.PollInfo, error) {
	id := queryreg.NewID()
	handle, err := seal(s.opts.Key, pollQueryID, pollHandle{ID: id, Principal: auth.Name(ctx)}, pollHandleTTL)
	if err != nil {
		return nil, ToStatus(err)
	}
	retry, err := pollDescriptor(handle)
	if err != nil {
		return nil, ToStatus(err)
	}
	bg, end := s.gate.calls.Begin(queryreg.WithID(context.WithoutCancel(ctx), id))
	bg, cancel := context.WithCancelCause(bg)
	p := &polled{id: id, principal: auth.Name(ctx), retry: retry, cancel: cancel, done: make(chan struct{}), lastPoll: time.Now(),
		abandon: time.AfterFunc(pollAbandon, func() { cancel(errPollAbandoned) })}
	if err := s.polls.add(p); err != nil {
		p.abandon.Stop()
		cancel(nil)
		end()
		return nil, ToStatus(err)
	}
	go func() {
		defer end()
		info, err := run(bg)
		p.abandon.Stop()
		cancel(nil)
		if err == nil && info != nil {
			n := int64(proto.Size(info))
			if s.polls.keep(n) {
				p.infoBytes = n
			}
		}
		p.info, p.err = info, err
		close(p.done)
	}()
	pi, err := s.answerPoll(ctx, p)
	return pi, ToStatus(err)
}

// pollDescriptor is the descriptor of the polls after the first.
func pollDescriptor(handle []byte) (*flight.FlightDescriptor, error) {
	cmd, err := proto.Marshal(&anypb.Any{TypeUrl: pollTypeURL, Value: handle})
	if err != nil {
		return nil, fmt.Errorf("flightsql: poll descriptor: %w", err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}, nil
}

// pollHandleOf opens a poll descriptor; ok is false when desc is not one.
func (s *Server) pollHandleOf(desc *flight.FlightDescriptor) (h pollHandle, ok bool, err error) {
	if desc.GetType() != flight.DescriptorCMD {
		return h, false, nil
	}
	var a anypb.Any
	if proto.Unmarshal(desc.GetCmd(), &a) != nil || a.GetTypeUrl() != pollTypeURL {
		return h, false, nil
	}
	return h, true, unseal(s.opts.Key, pollQueryID, a.GetValue(), &h)
}

// isPollRetry says whether req is the descriptor of a poll after the
// first (a follow-up a draining server still answers).
func isPollRetry(req any) bool {
	desc, ok := req.(*flight.FlightDescriptor)
	if !ok || desc.GetType() != flight.DescriptorCMD {
		return false
	}
	var a anypb.Any
	return proto.Unmarshal(desc.GetCmd(), &a) == nil && a.GetTypeUrl() == pollTypeURL
}

// answerPoll waits up to pollWait for p to end and answers what it is.
func (s *Server) answerPoll(ctx context.Context, p *polled) (*flight.PollInfo, error) {
	p.touch()
	wait := time.NewTimer(pollWait)
	defer wait.Stop()
	select {
	case <-p.done:
	case <-wait.C:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if !p.ended() {
		qi, _ := s.queries.Progress(ctx, p.id)
		return p.answer(&flight.FlightInfo{FlightDescriptor: p.retry, TotalRecords: -1, TotalBytes: -1}, qi.Progress(), true), nil
	}
	if p.err != nil {
		return nil, p.err
	}
	p.mu.Lock()
	first := !p.delivered // the client learns the endpoints now
	p.delivered = true
	p.mu.Unlock()
	qi, ok := s.queries.Progress(ctx, p.id)
	reading := ok && !qi.State.Ended() && qi.EndpointsTotal > 0 && p.infoBytes > 0
	if reading && !first && !qi.Served {
		// The client may have begun reading and its first DoGet not
		// reached a worker yet: give it the rest of the wait.
		qi, reading = s.awaitServed(ctx, p.id, wait.C)
	}
	progress := qi.Progress()
	if !ok {
		progress = 1 // ended long ago
	}
	return p.answer(p.info, progress, reading), nil
}

// awaitServed waits until a worker serves the query id, it ends, or
// timeout fires; reading says it is served and still running.
func (s *Server) awaitServed(ctx context.Context, id string, timeout <-chan time.Time) (qi queryreg.Info, reading bool) {
	tick := time.NewTicker(pollWait / 5)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-timeout:
			return qi, false
		case <-ctx.Done():
			return qi, false
		}
		qi, _ = s.queries.Progress(ctx, id)
		if qi.State.Ended() {
			return qi, false
		}
		if qi.Served {
			return qi, true
		}
	}
}

// answer is a PollInfo of info at progress, with the descriptor to poll
// again when more is to come.
func (p *polled) answer(info *flight.FlightInfo, progress float64, more bool) *flight.PollInfo {
	pi := &flight.PollInfo{Info: info, Progress: &progress}
	if more {
		pi.FlightDescriptor = p.retry
		pi.ExpirationTime = timestamppb.New(time.Now().Add(pollAbandon))
	}
	return pi
}

// CancelFlightInfo cancels the statement a FlightInfo belongs to: a
// polled statement (the descriptor of any FlightInfo a poll answered
// names it) or a query by the id its tickets carry. The caller must be
// its principal or an admin.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	id, err := s.queryIDOf(req.GetInfo())
	if err != nil {
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, ToStatus(err)
	}
	admin, me := s.opts.Policy.Admin(ctx), auth.Name(ctx)
	may := func(principal string) bool { return admin || principal == me }
	cause := fmt.Errorf("%w: %s", queryreg.ErrCancelled, id)
	stopped := false
	if p := s.polls.get(id); p != nil && !p.ended() {
		if !may(p.principal) {
			return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, ToStatus(fmt.Errorf("%w: %s", queryreg.ErrNotYours, id))
		}
		p.cancel(cause)
		stopped = true
	}
	_, err = s.queries.Cancel(ctx, id, may)
	switch {
	case err == nil, stopped && errors.Is(err, queryreg.ErrNotFound):
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
	case errors.Is(err, queryreg.ErrNotFound):
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, nil // it ended
	case errors.Is(err, queryreg.ErrNotYours):
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, ToStatus(err)
	}
	// Cancelled here; a worker not told ends its streams at the tickets'
	// expiry.
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
}

// queryIDOf is the statement a FlightInfo belongs to: the one its poll
// descriptor names, else the query id of its first endpoint's ticket.
func (s *Server) queryIDOf(info *flight.FlightInfo) (string, error) {
	if h, ok, err := s.pollHandleOf(info.GetFlightDescriptor()); ok {
		return h.ID, err
	}
	for _, ep := range info.GetEndpoint() {
		raw := ep.GetTicket().GetTicket()
		if t, err := s.opts.Key.Open(raw, time.Now()); err == nil {
			return t.QueryID, nil
		}
		if st, err := flightsql.GetStatementQueryTicket(ep.GetTicket()); err == nil {
			var pt proxyTicket
			if unseal(s.opts.Key, proxyQueryID, st.GetStatementHandle(), &pt) == nil {
				return pt.QueryID, nil
			}
		}
	}
	return "", fmt.Errorf("%w: the FlightInfo names no statement of this cluster that can be cancelled", ErrHandle)
}
