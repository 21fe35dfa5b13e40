package fleet

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

type healthServer struct {
	loc    string
	health *health.Server
	grpc   *grpc.Server
	done   chan struct{}
}

// keyChecker answers the pool's key checks as a worker does.
type keyChecker struct {
	flight.BaseFlightServer
	key      *wire.Key
	instance string
}

func (k *keyChecker) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	answer, err := membership.Answer(k.key, a.GetBody(), k.instance)
	if errors.Is(err, membership.ErrKeyMismatch) {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: answer})
}

func testKey(t *testing.T, pass string) *wire.Key {
	t.Helper()
	k, err := wire.KeyFromPassphrase(pass)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func startHealth(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus) *healthServer {
	return startWorkerWithKey(t, st, testKey(t, "pool test key"))
}

// startWorkerWithKey is a stand-in worker: the health service and the key
// check under key.
func startWorkerWithKey(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus, key *wire.Key) *healthServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &healthServer{loc: "grpc://" + lis.Addr().String(), health: health.NewServer(), grpc: grpc.NewServer(), done: make(chan struct{})}
	h.health.SetServingStatus("", st)
	healthpb.RegisterHealthServer(h.grpc, h.health)
	flight.RegisterFlightServiceServer(h.grpc, &keyChecker{key: key})
	go func() {
		defer close(h.done)
		_ = h.grpc.Serve(lis)
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *healthServer) stop() {
	h.grpc.Stop()
	<-h.done
}

func locations(ws []planner.Worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Location)
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWorkerPool(t *testing.T) {
	a := startHealth(t, healthpb.HealthCheckResponse_SERVING)
	b := startHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	// c is a port nothing listens on.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := "grpc://" + lis.Addr().String()
	lis.Close()

	pool, err := NewWorkerPool(testKey(t, "pool test key"), []string{a.loc, b.loc, c}, WithHealthInterval(50*time.Millisecond), WithHealthTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if got := pool.Live(); len(got) != 0 {
		t.Errorf("live before Start = %v", got)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Start checks once before returning.
	live := pool.Live()
	if !slices.Equal(locations(live), []string{a.loc}) || live[0].Slots != planner.DefaultSlotsPerWorker {
		t.Fatalf("live after Start = %v", live)
	}

	b.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	eventually(t, "b to serve", func() bool { return slices.Equal(locations(pool.Live()), []string{a.loc, b.loc}) })

	a.stop()
	eventually(t, "a to drop", func() bool { return slices.Equal(locations(pool.Live()), []string{b.loc}) })

	b.health.Shutdown() // every service NOT_SERVING
	eventually(t, "b to drop", func() bool { return len(pool.Live()) == 0 })

	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pool.Live(); len(got) != 0 {
		t.Errorf("live after Close = %v", got)
	}
}

func TestWorkerPoolOptions(t *testing.T) {
	for name, c := range map[string]struct {
		locs []string
		opts []PoolOption
	}{
		"no locations": {nil, nil},
		"bad scheme":   {[]string{"http://x:1"}, nil},
		"no host":      {[]string{"grpc://"}, nil},
		"twice":        {[]string{"grpc://x:1", "grpc://x:1"}, nil},
		"interval":     {[]string{"grpc://x:1"}, []PoolOption{WithHealthInterval(0)}},
		"slots":        {[]string{"grpc://x:1"}, []PoolOption{WithSlots(0)}},
	} {
		if _, err := NewWorkerPool(testKey(t, "k"), c.locs, c.opts...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewWorkerPool(nil, []string{"grpc://x:1"}); err == nil {
		t.Error("no key: no error")
	}
	if _, err := NewWorkerPool(testKey(t, "k"), nil, WithAnnouncements()); err != nil {
		t.Errorf("announcements alone: %v", err)
	}
	p, err := NewWorkerPool(testKey(t, "k"), []string{"grpc+tls://x:1", "grpc+tcp://y:2"}, WithSlots(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStaticWorkers(t *testing.T) {
	w := NewStaticWorkers("grpc://a:1", "grpc://b:2")
	live := w.Live()
	if !slices.Equal(locations(live), []string{"grpc://a:1", "grpc://b:2"}) || live[1].Slots != planner.DefaultSlotsPerWorker {
		t.Fatalf("live = %v", live)
	}
	live[0].Location = "changed"
	if w.Live()[0].Location != "grpc://a:1" {
		t.Error("Live shares its slice")
	}
}

// TestWorkerPoolKeyCheck: a worker whose ticket key differs never joins,
// and the pool logs why, once.
func TestWorkerPoolKeyCheck(t *testing.T) {
	key := testKey(t, "pool test key")
	good := startWorkerWithKey(t, healthpb.HealthCheckResponse_SERVING, key)
	bad := startWorkerWithKey(t, healthpb.HealthCheckResponse_SERVING, testKey(t, "another key"))
	core, logs := observer.New(zap.InfoLevel)
	pool, err := NewWorkerPool(key, []string{good.loc, bad.loc}, WithHealthInterval(20*time.Millisecond), WithPoolLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	time.Sleep(200 * time.Millisecond)
	if got := locations(pool.Live()); !slices.Equal(got, []string{good.loc}) {
		t.Fatalf("live = %v, want only the worker with the same key", got)
	}
	refusals := logs.FilterMessageSnippet("ticket key differs").FilterField(zap.String("worker", bad.loc)).Len()
	if refusals != 1 {
		t.Fatalf("refusal logged %d times, want once:\n%v", refusals, logs.All())
	}
}

// TestWorkerPoolAnnouncements: an announced worker joins, leaves at once
// when it announces it drains, and is forgotten when its announcements
// stop; one sealed with another key is refused.
func TestWorkerPoolAnnouncements(t *testing.T) {
	key := testKey(t, "pool test key")
	w := startWorkerWithKey(t, healthpb.HealthCheckResponse_SERVING, key)
	pool, err := NewWorkerPool(key, nil, WithAnnouncements(), WithHealthInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	announce := func(k *wire.Key, draining bool, ttl time.Duration) error {
		body, nonce, err := membership.SealAnnouncement(k, membership.Announcement{Location: w.loc, Draining: draining, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		ack, err := pool.Announce(context.Background(), body, "test")
		if err != nil {
			return err
		}
		return membership.CheckAck(k, ack, nonce)
	}
	if err := announce(testKey(t, "another key"), false, time.Minute); !errors.Is(err, membership.ErrKeyMismatch) {
		t.Fatalf("announcement under another key: %v", err)
	}
	if len(pool.Known()) != 0 {
		t.Fatalf("a refused announcement added %v", pool.Known())
	}
	if err := announce(key, false, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the announced worker to join", func() bool { return slices.Equal(locations(pool.Live()), []string{w.loc}) })
	if err := announce(key, true, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := pool.Live(); len(got) != 0 {
		t.Fatalf("a draining worker is still live: %v", got)
	}
	if err := announce(key, false, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker to come back", func() bool { return len(pool.Live()) == 1 })
	eventually(t, "the silent worker to be forgotten", func() bool { return len(pool.Known()) == 0 })
}

// TestWorkerPoolUnreachable: a worker a query could not reach leaves
// planning at once and comes back with its next good health check.
func TestWorkerPoolUnreachable(t *testing.T) {
	w := startHealth(t, healthpb.HealthCheckResponse_SERVING)
	pool, err := NewWorkerPool(testKey(t, "pool test key"), []string{w.loc}, WithHealthInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if len(pool.Live()) != 1 {
		t.Fatal("worker not live after Start")
	}
	w.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	pool.Unreachable(w.loc)
	if len(pool.Live()) != 0 {
		t.Fatal("an unreachable worker stayed live until its next check")
	}
	w.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	pool.Unreachable(w.loc) // checks again at once
	eventually(t, "the worker to come back", func() bool { return len(pool.Live()) == 1 })
	if !strings.HasPrefix(w.loc, "grpc://") {
		t.Fatal(w.loc)
	}
}

// slowHealth answers health checks late while slow is set, as a worker
// starved of CPU does, and counts the checks it got meanwhile.
type slowHealth struct {
	*health.Server
	slow      atomic.Bool
	slowCalls atomic.Int32
}

func (s *slowHealth) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if s.slow.Load() {
		s.slowCalls.Add(1)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	return s.Server.Check(ctx, r)
}

// TestWorkerPoolSlowWorkerStays: one health check that times out does not
// take a worker out of planning (a worker busy with a heavy query answers
// late); DefaultHealthMisses in a row do, and it comes back when it
// answers again.
func TestWorkerPoolSlowWorkerStays(t *testing.T) {
	key := testKey(t, "pool test key")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &slowHealth{Server: health.NewServer()}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	flight.RegisterFlightServiceServer(srv, &keyChecker{key: key})
	go srv.Serve(lis)
	defer srv.Stop()
	pool, err := NewWorkerPool(key, []string{"grpc://" + lis.Addr().String()},
		WithHealthInterval(100*time.Millisecond), WithHealthTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if len(pool.Live()) != 1 {
		t.Fatal("worker not live after Start")
	}
	hs.slow.Store(true)
	// The second slow check arrives only after the first timed out.
	eventually(t, "a second slow check", func() bool { return hs.slowCalls.Load() >= 2 })
	if len(pool.Live()) != 1 {
		t.Fatalf("worker left planning after one timed-out check, want it to stay until %d", DefaultHealthMisses)
	}
	eventually(t, "the worker to leave after missing checks", func() bool { return len(pool.Live()) == 0 })
	if n := hs.slowCalls.Load(); n < DefaultHealthMisses {
		t.Fatalf("left after %d slow checks, want %d", n, DefaultHealthMisses)
	}
	hs.slow.Store(false)
	eventually(t, "the worker to come back", func() bool { return len(pool.Live()) == 1 })
}
