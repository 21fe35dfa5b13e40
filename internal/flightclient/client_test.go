package flightclient

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

var testSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

// server answers DoGet of "ok" with two batches, of "fail" with
// Unavailable before any batch, and of "half" with one batch then
// Internal. It records the authorization header of each call.
type server struct {
	flight.BaseFlightServer
	mu    sync.Mutex
	auths []string
}

func (s *server) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	s.mu.Lock()
	s.auths = append(s.auths, strings.Join(md.Get(AuthorizationHeader), ","))
	s.mu.Unlock()
	switch string(t.GetTicket()) {
	case "fail":
		return status.Error(codes.Unavailable, "not here")
	case "oom":
		return status.Error(codes.ResourceExhausted, "run fragment: Out of Memory Error: could not allocate")
	}
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(testSchema))
	defer wr.Close()
	for i := int64(0); i < 2; i++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
		b.Field(0).(*array.Int64Builder).Append(i)
		rec := b.NewRecordBatch()
		b.Release()
		err := wr.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
		if string(t.GetTicket()) == "half" {
			return status.Error(codes.Internal, "broke")
		}
	}
	return nil
}

func start(t *testing.T) (*server, string) {
	t.Helper()
	s := &server{}
	g := grpc.NewServer()
	flight.RegisterFlightServiceServer(g, s)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return s, "grpc://" + lis.Addr().String()
}

func collect(t *testing.T, p *Pool, ctx context.Context, locs []string, ticket string, o PullOptions) (int, error) {
	t.Helper()
	n := 0
	err := p.Pull(ctx, locs, []byte(ticket), o, func(rec arrow.RecordBatch) error {
		n += int(rec.NumRows())
		rec.Release()
		return nil
	})
	return n, err
}

func TestPullFallsBackOnlyBeforeRows(t *testing.T) {
	srv, loc := start(t)
	p := NewPool(Options{Authorization: func(context.Context) (string, error) { return "Bearer pool", nil }}, 0)
	defer p.Close()
	dead := "grpc://127.0.0.1:1"

	n, err := collect(t, p, context.Background(), []string{dead, loc}, "ok", PullOptions{})
	if err != nil || n != 2 {
		t.Fatalf("fallback from a dead location: %d rows, %v", n, err)
	}

	// A failure after rows arrived is final: the second location is not tried.
	n, err = collect(t, p, context.Background(), []string{loc, loc}, "half", PullOptions{})
	var pe *PullError
	if !errors.As(err, &pe) || !pe.Started || len(pe.Attempts) != 1 || n != 1 {
		t.Fatalf("failure after rows: %d rows, %v (%+v)", n, err, pe)
	}
	if st, _ := status.FromError(err); st.Code() != codes.Internal {
		t.Errorf("code %s, want the stream's Internal", st.Code())
	}

	// Out of memory is the fragment's, not the location's: not retried.
	_, err = collect(t, p, context.Background(), []string{loc, loc}, "oom", PullOptions{})
	if !errors.As(err, &pe) || len(pe.Attempts) != 1 || status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("out of memory: %v (%+v)", err, pe)
	}

	// Every location failing before rows: each attempt is reported.
	_, err = collect(t, p, context.Background(), []string{loc, loc}, "fail", PullOptions{})
	if !errors.As(err, &pe) || len(pe.Attempts) != 2 || pe.Started {
		t.Fatalf("all failing: %v", err)
	}

	// A refused schema is never retried elsewhere.
	refuse := errors.New("wrong schema")
	_, err = collect(t, p, context.Background(), []string{loc, loc}, "ok", PullOptions{CheckSchema: func(*arrow.Schema) error { return refuse }})
	if !errors.Is(err, refuse) || !errors.As(err, &pe) || len(pe.Attempts) != 1 {
		t.Fatalf("schema refusal: %v", err)
	}

	// The pool's credentials, unless the call brings its own.
	ctx := metadata.AppendToOutgoingContext(context.Background(), AuthorizationHeader, "Bearer own")
	if _, err := collect(t, p, ctx, []string{loc}, "ok", PullOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	got := srv.auths
	srv.mu.Unlock()
	if got[0] != "Bearer pool" || got[len(got)-1] != "Bearer own" {
		t.Errorf("authorization headers %q", got)
	}
}

func TestPullCallbackErrorEndsPull(t *testing.T) {
	_, loc := start(t)
	p := NewPool(Options{}, 0)
	defer p.Close()
	stop := errors.New("stop")
	err := p.Pull(context.Background(), []string{loc, loc}, []byte("ok"), PullOptions{}, func(rec arrow.RecordBatch) error {
		rec.Release()
		return stop
	})
	if err != stop {
		t.Fatalf("got %v, want the callback's own error", err)
	}
}

func TestParse(t *testing.T) {
	for loc, want := range map[string]bool{"grpc://h:1": false, "grpc+tcp://h:1": false, "grpc+tls://h:1": true} {
		target, tls, err := Parse(loc)
		if err != nil || target != "h:1" || tls != want {
			t.Errorf("Parse(%q) = %q, %t, %v", loc, target, tls, err)
		}
	}
	for _, bad := range []string{"h:1", "http://h:1", "grpc://", "::"} {
		if _, _, err := Parse(bad); !errors.Is(err, ErrLocation) {
			t.Errorf("Parse(%q): %v, want ErrLocation", bad, err)
		}
	}
}

// A client that leaves the pool (past its size, or at Close) stays open
// for whoever holds it, and closes when the last holder lets go.
func TestPoolKeepsHeldClients(t *testing.T) {
	_, a := start(t)
	_, b := start(t)
	p := NewPool(Options{}, 1)
	// arrow-go's client panics on any call once closed.
	pull := func(cl flight.Client) (err error) {
		defer func() {
			if recover() != nil {
				err = errors.New("the client is closed")
			}
		}()
		stream, err := cl.DoGet(context.Background(), &flight.Ticket{Ticket: []byte("ok")})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	held, release, err := p.Hold(a)
	if err != nil {
		t.Fatal(err)
	}
	// b takes a's place in the pool of one.
	other, releaseOther, err := p.Hold(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := pull(held); err != nil {
		t.Fatalf("a held client that left the pool: %v", err)
	}
	if n := p.Open(); n != 2 {
		t.Errorf("Open() = %d with one client in the pool and one held out of it, want 2", n)
	}
	release()
	release() // letting go twice counts once
	if err := pull(held); err == nil {
		t.Fatal("a client that left the pool is still open after its holder let go")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pull(other); err != nil {
		t.Fatalf("a held client after Close: %v", err)
	}
	if n := p.Open(); n != 1 {
		t.Errorf("Open() = %d after Close with one client held, want 1", n)
	}
	releaseOther()
	if err := pull(other); err == nil {
		t.Fatal("a client is still open after Close and its last holder let go")
	}
	if n := p.Open(); n != 0 {
		t.Errorf("Open() = %d after Close and every holder let go, want 0", n)
	}
	if _, _, err := p.Hold(a); err == nil {
		t.Fatal("Hold after Close")
	}
}

func TestPullReportsUnavailable(t *testing.T) {
	_, loc := start(t)
	p := NewPool(Options{}, 0)
	defer p.Close()
	dead := "grpc://127.0.0.1:1"
	var mu sync.Mutex
	var told []string
	o := PullOptions{OnUnavailable: func(l string) { mu.Lock(); told = append(told, l); mu.Unlock() }}

	// A refused connection and a worker answering Unavailable are told;
	// the pull still falls back to the next location.
	if n, err := collect(t, p, context.Background(), []string{dead, loc}, "ok", o); err != nil || n != 2 {
		t.Fatalf("fallback: %d rows, %v", n, err)
	}
	if _, err := collect(t, p, context.Background(), []string{loc}, "fail", o); err == nil {
		t.Fatal("fail ticket pulled")
	}
	// Other failures are not.
	if _, err := collect(t, p, context.Background(), []string{loc}, "half", o); err == nil {
		t.Fatal("half ticket pulled")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 || told[0] != dead || told[1] != loc {
		t.Errorf("told %q, want [%s %s]", told, dead, loc)
	}
}

func TestFailureOf(t *testing.T) {
	_, loc := start(t)
	p := NewPool(Options{}, 0)
	defer p.Close()
	for ticket, want := range map[string]Failure{
		"fail": {Kind: Unavailable, Remote: true, Code: "Unavailable"},
		"half": {Kind: Other, Remote: true, Code: "Internal"},
		"oom":  {Kind: Exhausted, Remote: true, Code: "ResourceExhausted"},
	} {
		_, err := collect(t, p, context.Background(), []string{loc}, ticket, PullOptions{})
		got := FailureOf(err)
		if got.Kind != want.Kind || got.Remote != want.Remote || got.Code != want.Code || got.Message != err.Error() {
			t.Errorf("%s: %+v, want %+v with the whole error as message", ticket, got, want)
		}
	}
	for err, want := range map[error]Kind{
		status.Error(codes.InvalidArgument, "x"):   Invalid,
		status.Error(codes.NotFound, "x"):          NotFound,
		status.Error(codes.ResourceExhausted, "x"): Exhausted,
		status.Error(codes.PermissionDenied, "x"):  Denied,
	} {
		if got := FailureOf(err); got.Kind != want || got.Message != "x" {
			t.Errorf("%v: %+v, want kind %d", err, got, want)
		}
	}
	if got := FailureOf(errors.New("dial")); got.Remote || got.Kind != Other {
		t.Errorf("a local error: %+v", got)
	}
}
