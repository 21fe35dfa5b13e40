package flightsql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/planner"
)

// Defaults for a WorkerPool.
const (
	DefaultHealthInterval = 2 * time.Second
	DefaultHealthTimeout  = time.Second
)

// StaticWorkers is a fixed list of workers, always live: the in-process
// workers of a standalone serve.
type StaticWorkers []planner.Worker

var _ planner.Workers = StaticWorkers(nil)

// NewStaticWorkers returns the workers at locations with
// planner.DefaultSlotsPerWorker slots each.
func NewStaticWorkers(locations ...string) StaticWorkers {
	out := make(StaticWorkers, len(locations))
	for i, l := range locations {
		out[i] = planner.Worker{Location: l, Slots: planner.DefaultSlotsPerWorker}
	}
	return out
}

// Live returns a copy of the list.
func (w StaticWorkers) Live() []planner.Worker { return append([]planner.Worker(nil), w...) }

// PoolOption configures a WorkerPool.
type PoolOption func(*WorkerPool)

// WithHealthInterval sets how often each worker is checked.
func WithHealthInterval(d time.Duration) PoolOption { return func(p *WorkerPool) { p.interval = d } }

// WithHealthTimeout bounds each health check.
func WithHealthTimeout(d time.Duration) PoolOption { return func(p *WorkerPool) { p.timeout = d } }

// WithSlots sets the slots each live worker reports.
func WithSlots(n int) PoolOption { return func(p *WorkerPool) { p.slots = n } }

// WithClient sets how the health connections are dialed: the TLS roots
// of grpc+tls workers (the health service needs no credentials).
func WithClient(o flightclient.Options) PoolOption { return func(p *WorkerPool) { p.client = o } }

// WithDialOptions adds gRPC dial options for the health connections.
func WithDialOptions(opts ...grpc.DialOption) PoolOption {
	return func(p *WorkerPool) { p.dialOpts = append(p.dialOpts, opts...) }
}

// WithPoolLogger logs health changes.
func WithPoolLogger(l *zap.Logger) PoolOption { return func(p *WorkerPool) { p.log = l } }

// WorkerPool is a fixed set of worker locations, each checked with the
// standard gRPC health protocol (grpc.health.v1 Check of service ""). Live
// returns the ones that answered SERVING to their latest check. It is safe
// for concurrent use.
type WorkerPool struct {
	locations []string
	interval  time.Duration
	timeout   time.Duration
	slots     int
	client    flightclient.Options
	dialOpts  []grpc.DialOption
	log       *zap.Logger

	mu      sync.RWMutex
	serving map[string]bool
	conns   map[string]*grpc.ClientConn
	started bool
	stop    context.CancelFunc
	done    chan struct{}
}

var _ planner.Workers = (*WorkerPool)(nil)

// NewWorkerPool returns a pool over the worker Flight locations
// (grpc://host:port, grpc+tcp://host:port or grpc+tls://host:port). No
// worker is live until Start has checked it.
func NewWorkerPool(locations []string, opts ...PoolOption) (*WorkerPool, error) {
	p := &WorkerPool{
		locations: append([]string(nil), locations...),
		interval:  DefaultHealthInterval,
		timeout:   DefaultHealthTimeout,
		slots:     planner.DefaultSlotsPerWorker,
		log:       zap.NewNop(),
		serving:   map[string]bool{},
		conns:     map[string]*grpc.ClientConn{},
	}
	for _, o := range opts {
		o(p)
	}
	var errs []error
	if len(p.locations) == 0 {
		errs = append(errs, errors.New("flightsql: worker pool has no locations"))
	}
	if p.interval <= 0 {
		errs = append(errs, errors.New("flightsql: health interval must be > 0"))
	}
	if p.timeout <= 0 {
		errs = append(errs, errors.New("flightsql: health timeout must be > 0"))
	}
	if p.slots <= 0 {
		errs = append(errs, errors.New("flightsql: slots must be > 0"))
	}
	seen := map[string]bool{}
	for _, l := range p.locations {
		if seen[l] {
			errs = append(errs, fmt.Errorf("flightsql: worker %s listed twice", l))
		}
		seen[l] = true
		if _, _, err := flightclient.Parse(l); err != nil {
			errs = append(errs, fmt.Errorf("flightsql: worker: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Start opens a connection to each worker, checks every worker once before
// returning, then keeps checking every interval until ctx ends or Close.
func (p *WorkerPool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("flightsql: worker pool started twice")
	}
	p.started = true
	for _, l := range p.locations {
		opts := append([]grpc.DialOption{
			// Reconnect within about one interval of a worker coming back,
			// instead of gRPC's default backoff of up to two minutes.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: p.interval},
				MinConnectTimeout: p.timeout,
			}),
		}, p.dialOpts...)
		conn, err := flightclient.Conn(l, p.client, opts...)
		if err != nil {
			p.mu.Unlock()
			p.closeConns()
			return fmt.Errorf("flightsql: worker %s: %w", l, err)
		}
		p.conns[l] = conn
	}
	ctx, p.stop = context.WithCancel(ctx)
	p.done = make(chan struct{})
	p.mu.Unlock()

	p.checkAll(ctx)
	go p.loop(ctx)
	return nil
}

func (p *WorkerPool) loop(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.checkAll(ctx)
		}
	}
}

// checkAll checks every worker in parallel and records the results.
func (p *WorkerPool) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	results := make([]bool, len(p.locations))
	for i, l := range p.locations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.check(ctx, l)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, l := range p.locations {
		if was, ok := p.serving[l]; !ok || was != results[i] {
			p.log.Info("worker health changed", zap.String("worker", l), zap.Bool("serving", results[i]))
		}
		p.serving[l] = results[i]
	}
}

func (p *WorkerPool) check(ctx context.Context, loc string) bool {
	p.mu.RLock()
	conn := p.conns[loc]
	p.mu.RUnlock()
	if conn == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		p.log.Debug("worker health check failed", zap.String("worker", loc), zap.Error(err))
		return false
	}
	return res.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// Live returns the workers whose latest check answered SERVING, in the
// order they were listed.
func (p *WorkerPool) Live() []planner.Worker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []planner.Worker
	for _, l := range p.locations {
		if p.serving[l] {
			out = append(out, planner.Worker{Location: l, Slots: p.slots})
		}
	}
	return out
}

// Close stops the checks and closes the connections.
func (p *WorkerPool) Close() error {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	return p.closeConns()
}

func (p *WorkerPool) closeConns() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for l, c := range p.conns {
		errs = append(errs, c.Close())
		delete(p.conns, l)
	}
	clear(p.serving)
	return errors.Join(errs...)
}
