package fleet

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/wire"
)

// process is a stand-in worker process at a fixed address: health checks
// answered with its instance id, key checks under its key. Both can be
// swapped, as when another process takes the address over between two
// health checks.
type process struct {
	flight.BaseFlightServer
	*health.Server
	key      atomic.Pointer[wire.Key]
	instance atomic.Value // string
}

func (p *process) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(membership.InstanceHeader, p.instance.Load().(string)))
	return p.Server.Check(ctx, r)
}

func (p *process) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	answer, err := membership.Answer(p.key.Load(), a.GetBody(), p.instance.Load().(string))
	if errors.Is(err, membership.ErrKeyMismatch) {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: answer})
}

// serveProcess serves a stand-in process with key at addr ("" picks a
// port) and returns its location and the func that stops it.
func serveProcess(t *testing.T, addr string, key *wire.Key, instance string) (*process, string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	for try := 0; try < 50; try++ {
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := &process{Server: health.NewServer()}
	p.key.Store(key)
	p.instance.Store(instance)
	p.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, p)
	flight.RegisterFlightServiceServer(g, p)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			g.Stop()
			<-done
		}
	}
	t.Cleanup(stop)
	return p, "grpc://" + lis.Addr().String(), stop
}

// neverLive fails if loc is live at any check of the pool during d.
func neverLive(t *testing.T, pool *WorkerPool, loc string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if slices.Contains(locations(pool.Live()), loc) {
			t.Fatalf("the worker with another key at %s is live", loc)
		}
	}
}

// checkingPool is a started pool over loc that checks every 20 ms, once
// the worker there joined.
func checkingPool(t *testing.T, key *wire.Key, loc string) *WorkerPool {
	t.Helper()
	pool, err := NewWorkerPool(key, []string{loc}, WithHealthInterval(20*time.Millisecond), WithHealthTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	eventually(t, "the worker to join", func() bool { return len(pool.Live()) == 1 })
	return pool
}

// TestWorkerPoolRejoinChecksKey: a worker that went away and came back at
// its address passes the key check again before it is planned on: one
// with another key never becomes live, one with the pool's key does.
func TestWorkerPoolRejoinChecksKey(t *testing.T) {
	key, other := testKey(t, "pool test key"), testKey(t, "another key")
	_, loc, stop := serveProcess(t, "", key, "first")
	addr := loc[len("grpc://"):]
	pool := checkingPool(t, key, loc)

	stop()
	eventually(t, "the stopped worker to leave", func() bool { return len(pool.Live()) == 0 })
	_, _, stop = serveProcess(t, addr, other, "second")
	neverLive(t, pool, loc, time.Second)
	if h := pool.Health(); h[0].Health != HealthRefused {
		t.Fatalf("the worker with another key: %+v, want refused", h)
	}

	stop()
	serveProcess(t, addr, key, "third")
	eventually(t, "a worker with the key to rejoin", func() bool { return len(pool.Live()) == 1 })
}

// TestWorkerPoolRestartUnnoticed: when another process answers at a
// live worker's location between two health checks (a restart the pool
// never saw fail), its new instance id triggers a new key check: with
// another key it leaves planning; with the same key it stays.
func TestWorkerPoolRestartUnnoticed(t *testing.T) {
	key, other := testKey(t, "pool test key"), testKey(t, "another key")
	p, loc, _ := serveProcess(t, "", key, "first")
	pool := checkingPool(t, key, loc)

	p.instance.Store("restarted")
	time.Sleep(200 * time.Millisecond)
	if len(pool.Live()) != 1 {
		t.Fatal("a worker restarted with the same key left planning")
	}
	p.key.Store(other)
	p.instance.Store("restarted with another key")
	eventually(t, "the restarted worker with another key to leave", func() bool { return len(pool.Live()) == 0 })
	neverLive(t, pool, loc, 500*time.Millisecond)
}
