package streamidle_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/streamidle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// service streams 256 KiB messages until its context ends (DoGet), or
// takes uploads until the client closes (DoPut). A ticket "pause" makes
// DoGet compute for 3 timeouts between two messages and then end.
type service struct {
	flight.BaseFlightServer
	pause  time.Duration
	mu     sync.Mutex
	causes []error
}

func (s *service) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	body := make([]byte, 256<<10)
	if string(t.Ticket) == "pause" {
		if err := stream.Send(&flight.FlightData{DataBody: body[:1]}); err != nil {
			return err
		}
		time.Sleep(s.pause)
		return stream.Send(&flight.FlightData{DataBody: body[:1]})
	}
	for {
		if err := stream.Send(&flight.FlightData{DataBody: body}); err != nil {
			s.record(context.Cause(stream.Context()))
			return err
		}
	}
}

func (s *service) DoPut(stream flight.FlightService_DoPutServer) error {
	for {
		if _, err := stream.Recv(); err != nil {
			s.record(context.Cause(stream.Context()))
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (s *service) record(err error) {
	s.mu.Lock()
	s.causes = append(s.causes, err)
	s.mu.Unlock()
}

type cut struct {
	method  string
	sending bool
}

// serve starts a server with the idle cut and returns a client of it; the
// test's end stops both.
func serve(t *testing.T, timeout time.Duration) (flight.FlightServiceClient, *service, chan cut) {
	t.Helper()
	cuts := make(chan cut, 16)
	svc := &service{pause: 3 * timeout}
	g := grpc.NewServer(grpc.ChainStreamInterceptor(streamidle.Interceptor(streamidle.Options{
		Timeout: timeout,
		OnCut:   func(m string, sending bool) { cuts <- cut{m, sending} },
	})))
	flight.RegisterFlightServiceServer(g, svc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop() })
	return flight.NewFlightServiceClient(conn), svc, cuts
}

func wantCut(t *testing.T, cuts chan cut, method string, sending bool, within time.Duration) {
	t.Helper()
	select {
	case c := <-cuts:
		if !strings.HasSuffix(c.method, method) || c.sending != sending {
			t.Fatalf("cut %+v, want %s (sending %v)", c, method, sending)
		}
	case <-time.After(within):
		t.Fatalf("no stream cut within %s", within)
	}
}

// wantIdleStatus checks the error a cut stream's client reads.
func wantIdleStatus(t *testing.T, err error, what string) {
	t.Helper()
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), streamidle.Key) || !strings.Contains(err.Error(), what) {
		t.Fatalf("the client read %v, want DeadlineExceeded saying %q and naming %s", err, what, streamidle.Key)
	}
}

// A client that opens a stream and never reads is cut; its handler's
// context says why; when the client reads at last it gets what was
// buffered and then the cut's status; nothing of either side outlives
// the stream (TestMain's goleak check).
func TestClientThatStopsReadingIsCut(t *testing.T) {
	cl, svc, cuts := serve(t, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := cl.DoGet(ctx, &flight.Ticket{Ticket: []byte("forever")})
	if err != nil {
		t.Fatal(err)
	}
	wantCut(t, cuts, "/DoGet", true, 10*time.Second)
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
	}
	wantIdleStatus(t, err, "the client read nothing")
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.causes) != 1 || !errors.Is(svc.causes[0], streamidle.ErrIdle) {
		t.Fatalf("handler's context causes %v, want one ErrIdle", svc.causes)
	}
}

// An upload that stops sending is cut too.
func TestUploadThatStopsSendingIsCut(t *testing.T) {
	cl, _, cuts := serve(t, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := cl.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&flight.FlightData{DataBody: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	wantCut(t, cuts, "/DoPut", false, 10*time.Second)
	_, err = stream.Recv()
	wantIdleStatus(t, err, "the client sent nothing")
}

// Time the server spends between two messages is not idle: a handler that
// computes for three timeouts and a client that reads all along finish.
func TestComputingIsNotIdle(t *testing.T) {
	cl, _, cuts := serve(t, 100*time.Millisecond)
	stream, err := cl.DoGet(context.Background(), &flight.Ticket{Ticket: []byte("pause")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, io.EOF) || n != 2 {
		t.Fatalf("read %d messages, then %v; want 2 and the end", n, err)
	}
	select {
	case c := <-cuts:
		t.Fatalf("cut %+v of a stream that was never idle", c)
	default:
	}
}

// Zero turns the cut off.
func TestZeroCutsNothing(t *testing.T) {
	g := grpc.NewServer(grpc.ChainStreamInterceptor(streamidle.Interceptor(streamidle.Options{})))
	flight.RegisterFlightServiceServer(g, &service{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	defer g.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	stream, err := flight.NewFlightServiceClient(conn).DoGet(ctx, &flight.Ticket{Ticket: []byte("forever")})
	if err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	for err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.DeadlineExceeded || strings.Contains(err.Error(), streamidle.Key) {
		t.Fatalf("with no idle timeout the stream ended with %v, want only the client's own deadline", err)
	}
}
