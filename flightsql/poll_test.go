package flightsql

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
)

// An update started by PollFlightInfo runs on after the first poll
// answered: the polls answer a descriptor and no endpoint until it ends,
// then its count, complete at progress 1. Only its principal may poll
// it, on the coordinator that started it; a draining coordinator still
// answers its polls but starts nothing new; CancelFlightInfo with a
// FlightInfo a poll answered cancels it.
func TestPollUpdate(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	block := make(chan struct{})
	e.planner.mu.Lock()
	e.planner.block = block
	e.planner.mu.Unlock()

	pi, err := e.client.ExecutePoll(ctx, "INSERT INTO t SELECT 1", nil)
	if err != nil {
		t.Fatal(err)
	}
	retry := pi.GetFlightDescriptor()
	if retry == nil || len(pi.GetInfo().GetEndpoint()) != 0 || pi.Progress == nil || pi.GetProgress() != 0 {
		t.Fatalf("first poll of a running update: %v", pi)
	}
	again, err := e.client.ExecutePoll(ctx, "", retry)
	if err != nil || again.GetFlightDescriptor() == nil {
		t.Fatalf("second poll of a running update: %v %v", again, err)
	}

	// Descriptors this coordinator did not answer, or answered another
	// principal.
	other, _ := seal(e.key, pollQueryID, pollHandle{ID: "0123456789abcdef"}, time.Hour)
	unknown, _ := pollDescriptor(other)
	_, err = e.client.ExecutePoll(ctx, "", unknown)
	wantCode(t, err, codes.NotFound)
	theirs, _ := seal(e.key, pollQueryID, pollHandle{ID: "0123456789abcdef", Principal: "mallory"}, time.Hour)
	foreign, _ := pollDescriptor(theirs)
	_, err = e.client.ExecutePoll(ctx, "", foreign)
	wantCode(t, err, codes.PermissionDenied)
	forged, _ := pollDescriptor([]byte("not sealed"))
	_, err = e.client.ExecutePoll(ctx, "", forged)
	wantCode(t, err, codes.InvalidArgument)
	_, err = e.client.ExecutePoll(ctx, "", &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("nothing")})
	wantCode(t, err, codes.Unimplemented)

	// Draining: the running update's polls are follow-ups, a new
	// statement is refused.
	e.srv.gate.mu.Lock()
	e.srv.gate.draining = true
	e.srv.gate.mu.Unlock()
	if _, err := e.client.ExecutePoll(ctx, "", retry); err != nil {
		t.Fatalf("poll while draining: %v", err)
	}
	_, err = e.client.ExecutePoll(ctx, "INSERT INTO t SELECT 2", nil)
	wantCode(t, err, codes.Unavailable)
	e.srv.gate.mu.Lock()
	e.srv.gate.draining = false
	e.srv.gate.mu.Unlock()

	close(block)
	done, err := e.client.ExecutePoll(ctx, "", retry)
	if err != nil {
		t.Fatal(err)
	}
	if done.GetFlightDescriptor() != nil || done.GetInfo().GetTotalRecords() != 7 || done.GetProgress() != 1 {
		t.Fatalf("poll of the ended update: %v", done)
	}
	if again, err := e.client.ExecutePoll(ctx, "", retry); err != nil || again.GetInfo().GetTotalRecords() != 7 {
		t.Fatalf("a repeated last poll: %v %v", again, err)
	}

	// CancelFlightInfo of a running one.
	e.planner.mu.Lock()
	e.planner.block = make(chan struct{})
	e.planner.mu.Unlock()
	pi, err = e.client.ExecutePoll(ctx, "INSERT INTO t SELECT 3", nil)
	if err != nil || pi.GetFlightDescriptor() == nil {
		t.Fatalf("first poll: %v %v", pi, err)
	}
	res, err := e.client.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: pi.GetInfo()})
	if err != nil || res.GetStatus() != flight.CancelStatusCancelled {
		t.Fatalf("CancelFlightInfo: %v %v", res, err)
	}
	_, err = e.client.ExecutePoll(ctx, "", pi.GetFlightDescriptor())
	wantCode(t, err, codes.Canceled)
}

// A query's first poll answers its complete FlightInfo with a descriptor;
// when no worker began serving it while the next poll waited, that poll
// ends the polling (the client reads after it polled) with the same
// endpoints.
func TestPollQueryNobodyReads(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.planner.mu.Lock()
	e.planner.expires = time.Now().Add(time.Hour)
	e.planner.mu.Unlock()
	pi, err := e.client.ExecutePoll(ctx, "SELECT 1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pi.GetFlightDescriptor() == nil || len(pi.GetInfo().GetEndpoint()) != 2 || pi.GetProgress() != 0 {
		t.Fatalf("first poll of a query: %v", pi)
	}
	next, err := e.client.ExecutePoll(ctx, "", pi.GetFlightDescriptor())
	if err != nil {
		t.Fatal(err)
	}
	if next.GetFlightDescriptor() != nil || len(next.GetInfo().GetEndpoint()) != 2 {
		t.Fatalf("second poll of a query nobody reads: %v", next)
	}
}

// A query planned after its first poll answered gets its endpoints with
// a descriptor on the poll that first carries them (the client has not
// been able to read them yet), and the polling ends on the next when
// nobody reads them.
func TestPollQueryPlannedLate(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	block := make(chan struct{})
	e.planner.mu.Lock()
	e.planner.expires, e.planner.block = time.Now().Add(time.Hour), block
	e.planner.mu.Unlock()
	pi, err := e.client.ExecutePoll(ctx, "SELECT 1", nil)
	if err != nil || pi.GetFlightDescriptor() == nil || len(pi.GetInfo().GetEndpoint()) != 0 {
		t.Fatalf("first poll of a query still planning: %v %v", pi, err)
	}
	close(block)
	planned, err := e.client.ExecutePoll(ctx, "", pi.GetFlightDescriptor())
	if err != nil || planned.GetFlightDescriptor() == nil || len(planned.GetInfo().GetEndpoint()) != 2 {
		t.Fatalf("the poll that carries the endpoints: %v %v", planned, err)
	}
	last, err := e.client.ExecutePoll(ctx, "", planned.GetFlightDescriptor())
	if err != nil || last.GetFlightDescriptor() != nil || len(last.GetInfo().GetEndpoint()) != 2 {
		t.Fatalf("the poll after, nobody reading: %v %v", last, err)
	}
}
