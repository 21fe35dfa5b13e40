package flightsql

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/icefloe/icefloe/planner"
)

type healthServer struct {
	loc    string
	health *health.Server
	grpc   *grpc.Server
	done   chan struct{}
}

func startHealth(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus) *healthServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &healthServer{loc: "grpc://" + lis.Addr().String(), health: health.NewServer(), grpc: grpc.NewServer(), done: make(chan struct{})}
	h.health.SetServingStatus("", st)
	healthpb.RegisterHealthServer(h.grpc, h.health)
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

	pool, err := NewWorkerPool([]string{a.loc, b.loc, c}, WithHealthInterval(50*time.Millisecond), WithHealthTimeout(500*time.Millisecond))
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
		if _, err := NewWorkerPool(c.locs, c.opts...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	p, err := NewWorkerPool([]string{"grpc+tls://x:1", "grpc+tcp://y:2"}, WithSlots(5))
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
