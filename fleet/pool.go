package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// Defaults for a WorkerPool: a worker that dies leaves planning within
// about DefaultHealthInterval (its connection is refused at once, and a
// query's failed call to it counts too); one that hangs after
// DefaultHealthMisses checks in a row time out, within about
// DefaultHealthMisses × (DefaultHealthInterval + DefaultHealthTimeout).
// A single check that times out is not enough: a worker starved of CPU
// by a heavy query answers late, and planning without it (or failing
// `SELECT 1` with "no live worker") would only make things worse.
const (
	DefaultHealthInterval = 500 * time.Millisecond
	DefaultHealthTimeout  = 800 * time.Millisecond
	DefaultHealthMisses   = 3
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

// WithClient sets how the workers are dialed for their health and key
// checks: the TLS roots of grpc+tls workers, and the cluster token the
// key check (a Flight action, behind the workers' authentication) carries.
func WithClient(o flightclient.Options) PoolOption { return func(p *WorkerPool) { p.client = o } }

// WithDialOptions adds gRPC dial options for the health connections.
func WithDialOptions(opts ...grpc.DialOption) PoolOption {
	return func(p *WorkerPool) { p.dialOpts = append(p.dialOpts, opts...) }
}

// WithPoolLogger logs joins, leaves and refusals.
func WithPoolLogger(l *zap.Logger) PoolOption { return func(p *WorkerPool) { p.log = l } }

// WithDNS adds a DNS source: the workers are every address the name
// resolves to, again every resolution.
func WithDNS(d *membership.DNS) PoolOption { return func(p *WorkerPool) { p.dns = d } }

// WithAnnouncements lets workers join by announcing themselves (Announce).
func WithAnnouncements() PoolOption { return func(p *WorkerPool) { p.announced = true } }

// member is one worker the pool knows of, from any source.
type member struct {
	static, dns bool
	// announcedUntil is when an announced worker is forgotten unless it
	// announces again.
	announcedUntil time.Time
	draining       bool
	conn           *grpc.ClientConn
	serving        bool
	// misses counts health checks in a row that timed out while the
	// worker was serving: it leaves planning at DefaultHealthMisses.
	misses int
	// keyOK says the worker passed the key check since it last went
	// away; instance is the process id its answer carried.
	keyOK    bool
	instance string
	// live is what Live last said about it, to log changes; refused
	// says a key mismatch was logged.
	live, refused bool
}

func (m *member) known(now time.Time) bool {
	return m.static || m.dns || now.Before(m.announcedUntil)
}

// WorkerPool is the set of workers a coordinator plans over: listed ones,
// the addresses a DNS name resolves to, and workers that announce
// themselves. Each is checked with the standard gRPC health protocol
// (grpc.health.v1 Check of service "") every interval, and with a key
// check whenever it joins: a challenge sealed with the ticket key that
// only a worker holding the same key can answer. Joining is the first
// time, and every time it comes back after it went away (a failed or
// refused health check, a call that found it unreachable, an expired
// announcement) or after its process restarted (the instance id its
// health checks answer with changed). Live returns the workers that
// answered both and are not draining. It is safe for concurrent use.
type WorkerPool struct {
	key       *wire.Key
	static    []string
	dns       *membership.DNS
	announced bool
	interval  time.Duration
	timeout   time.Duration
	slots     int
	client    flightclient.Options
	dialOpts  []grpc.DialOption
	log       *zap.Logger

	mu      sync.RWMutex
	members map[string]*member
	order   []string // locations in the order they became known
	started bool
	closed  bool
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

var _ planner.Workers = (*WorkerPool)(nil)

// NewWorkerPool returns a pool over the listed worker Flight locations
// (grpc://host:port, grpc+tcp://host:port or grpc+tls://host:port) and the
// sources of the options. key is the ticket key workers must share. No
// worker is live until Start has checked it.
func NewWorkerPool(key *wire.Key, locations []string, opts ...PoolOption) (*WorkerPool, error) {
	p := &WorkerPool{
		key:      key,
		static:   append([]string(nil), locations...),
		interval: DefaultHealthInterval,
		timeout:  DefaultHealthTimeout,
		slots:    planner.DefaultSlotsPerWorker,
		log:      zap.NewNop(),
		members:  map[string]*member{},
	}
	for _, o := range opts {
		o(p)
	}
	var errs []error
	if key == nil {
		errs = append(errs, errors.New("flightsql: worker pool needs the ticket key"))
	}
	if len(p.static) == 0 && p.dns == nil && !p.announced {
		errs = append(errs, errors.New("flightsql: worker pool has no workers: list some, give a DNS name or accept announcements"))
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
	for _, l := range p.static {
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

// dial opens the health and key-check connection of a worker through
// internal/flightclient, with the pool's TLS and cluster token.
func (p *WorkerPool) dial(loc string) (*grpc.ClientConn, error) {
	return flightclient.Conn(loc, p.client, append([]grpc.DialOption{
		// Reconnect within about one interval of a worker coming back,
		// instead of gRPC's default backoff of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: p.interval},
			MinConnectTimeout: p.timeout,
		}),
	}, p.dialOpts...)...)
}

// Start checks every listed worker and resolves the DNS source once before
// returning, then keeps checking every interval until ctx ends or Close.
func (p *WorkerPool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("flightsql: worker pool started twice")
	}
	p.started = true
	p.ctx, p.stop = context.WithCancel(ctx)
	for _, l := range p.static {
		p.addLocked(l).static = true
	}
	p.mu.Unlock()
	if p.dns != nil {
		if locs, err := p.dns.Resolve(ctx); err == nil {
			p.setDNS(locs)
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.dns.Run(p.ctx, p.setDNS) }()
	}
	p.checkAll(p.ctx)
	p.wg.Add(1)
	go p.loop(p.ctx)
	return nil
}

// addLocked returns the member at loc, adding it if new.
func (p *WorkerPool) addLocked(loc string) *member {
	m, ok := p.members[loc]
	if !ok {
		m = &member{}
		p.members[loc] = m
		p.order = append(p.order, loc)
	}
	return m
}

// setDNS makes locs the DNS source's workers.
func (p *WorkerPool) setDNS(locs []string) {
	p.mu.Lock()
	for _, m := range p.members {
		m.dns = false
	}
	var added []string
	for _, l := range locs {
		if _, _, err := flightclient.Parse(l); err != nil {
			continue
		}
		if _, ok := p.members[l]; !ok {
			added = append(added, l)
		}
		p.addLocked(l).dns = true
	}
	p.mu.Unlock()
	for _, l := range added {
		p.checkSoon(l)
	}
}

// Announce handles a worker's sealed announcement and returns the sealed
// acknowledgement. An announcement sealed with another key fails with
// membership.ErrKeyMismatch, logged here with where it came from.
func (p *WorkerPool) Announce(ctx context.Context, body []byte, from string) ([]byte, error) {
	if !p.announced {
		return nil, fmt.Errorf("%w: this coordinator takes no announcements", planner.ErrUnsupported)
	}
	a, ack, err := membership.OpenAnnouncement(p.key, body)
	if errors.Is(err, membership.ErrKeyMismatch) {
		p.log.Error("refused a worker's announcement: its ticket key differs from this coordinator's; set the same ticket_key (ICEFLOE_TICKET_KEY) on both",
			zap.String("from", from))
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if _, _, err := flightclient.Parse(a.Location); err != nil {
		return nil, fmt.Errorf("%w: %w", membership.ErrMalformed, err)
	}
	p.mu.Lock()
	m, known := p.members[a.Location]
	if !known {
		m = p.addLocked(a.Location)
	}
	wasDraining := m.draining
	m.announcedUntil = time.Now().Add(a.TTL)
	m.draining = a.Draining
	if a.Draining {
		p.updateLiveLocked(a.Location, m, "draining")
	}
	p.mu.Unlock()
	if !known || wasDraining != a.Draining {
		p.checkSoon(a.Location)
	}
	return ack, nil
}

// Unreachable tells the pool a call to the worker at loc failed as
// unreachable: it leaves planning until a health check answers again and
// it passed the key check again, and is checked at once.
func (p *WorkerPool) Unreachable(loc string) {
	p.mu.Lock()
	m, ok := p.members[loc]
	if ok {
		m.serving, m.keyOK = false, false
		p.updateLiveLocked(loc, m, "a call to it failed")
	}
	p.mu.Unlock()
	if ok {
		p.checkSoon(loc)
	}
}

// checkSoon checks one worker now, in the background.
func (p *WorkerPool) checkSoon(loc string) {
	p.mu.Lock()
	ctx := p.ctx
	if ctx == nil || p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() { defer p.wg.Done(); p.checkOne(ctx, loc) }()
}

func (p *WorkerPool) loop(ctx context.Context) {
	defer p.wg.Done()
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

// checkAll forgets workers no source names any more, then checks the
// others in parallel.
func (p *WorkerPool) checkAll(ctx context.Context) {
	now := time.Now()
	p.mu.Lock()
	var locs []string
	keep := p.order[:0]
	for _, l := range p.order {
		m := p.members[l]
		if !m.known(now) {
			p.updateLiveLocked(l, m, "no longer announced or resolved")
			if m.conn != nil {
				m.conn.Close()
			}
			delete(p.members, l)
			continue
		}
		keep = append(keep, l)
		locs = append(locs, l)
	}
	p.order = keep
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range locs {
		wg.Add(1)
		go func() { defer wg.Done(); p.checkOne(ctx, l) }()
	}
	wg.Wait()
}

// checkOne runs the health check of one worker, and its key check when
// the worker has not passed one since it last went away or restarted,
// and records the outcome.
func (p *WorkerPool) checkOne(ctx context.Context, loc string) {
	p.mu.Lock()
	m, ok := p.members[loc]
	if !ok {
		p.mu.Unlock()
		return
	}
	if m.conn == nil {
		conn, err := p.dial(loc)
		if err != nil {
			p.mu.Unlock()
			p.log.Warn("worker location cannot be dialed", zap.String("worker", loc), zap.Error(err))
			return
		}
		m.conn = conn
	}
	conn, keyOK, checked := m.conn, m.keyOK, m.instance
	p.mu.Unlock()

	serving, timedOut, instance := p.health(ctx, conn, loc)
	// Another process answers at the location than the one whose key was
	// checked (it restarted between two checks): check again.
	restarted := keyOK && instance != "" && checked != "" && instance != checked
	var keyErr error
	var answered string
	if serving && (!keyOK || restarted) {
		answered, keyErr = p.keyCheck(ctx, conn)
	}
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m2, ok := p.members[loc]; !ok || m2 != m {
		return
	}
	switch {
	case serving || !timedOut || !m.serving:
		m.misses = 0
		m.serving = serving
	case m.misses+1 >= DefaultHealthMisses:
		m.misses = 0
		m.serving = false
	default:
		m.misses++
		p.log.Debug("worker health check timed out; it stays in planning until it misses more", zap.String("worker", loc), zap.Int("misses", m.misses))
	}
	if restarted {
		m.keyOK = false
		p.log.Info("worker restarted at its location; checking its key again", zap.String("worker", loc))
	}
	if !m.serving {
		// Gone (dead, hung, draining or refusing): whatever comes back at
		// the location passes the key check again before it is planned on.
		m.keyOK = false
	}
	switch {
	case errors.Is(keyErr, membership.ErrKeyMismatch):
		if !m.refused {
			m.refused = true
			p.log.Error("refused worker: its ticket key differs from this coordinator's; set the same ticket_key (ICEFLOE_TICKET_KEY) on both",
				zap.String("worker", loc))
		}
		m.keyOK = false
	case status.Code(keyErr) == codes.Unauthenticated:
		if !m.refused {
			m.refused = true
			p.log.Error("worker refused this coordinator's cluster token: configure auth (and the same ticket_key) alike on coordinators and workers",
				zap.String("worker", loc), zap.Error(keyErr))
		}
		m.keyOK = false
	case keyErr != nil:
		p.log.Debug("worker key check failed", zap.String("worker", loc), zap.Error(keyErr))
		m.keyOK = false
	case serving && (!keyOK || restarted):
		m.keyOK, m.refused, m.instance = true, false, answered
	}
	p.updateLiveLocked(loc, m, "health check")
}

// health runs one health check: serving, whether it failed only by
// timing out (the worker may be slow rather than gone), and the instance
// id the worker answered with ("" if none).
func (p *WorkerPool) health(ctx context.Context, conn *grpc.ClientConn, loc string) (serving, timedOut bool, instance string) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var md metadata.MD
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ""}, grpc.Header(&md))
	if err != nil {
		p.log.Debug("worker health check failed", zap.String("worker", loc), zap.Error(err))
		return false, status.Code(err) == codes.DeadlineExceeded, ""
	}
	if v := md.Get(membership.InstanceHeader); len(v) > 0 {
		instance = v[0]
	}
	return res.GetStatus() == healthpb.HealthCheckResponse_SERVING, false, instance
}

// keyCheck sends the worker a sealed challenge, checks its answer and
// returns the instance id the answer carries.
func (p *WorkerPool) keyCheck(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	challenge, nonce, err := membership.NewChallenge(p.key)
	if err != nil {
		return "", err
	}
	answer, err := flightclient.DoActionOne(ctx, flight.NewFlightServiceClient(conn), membership.KeyCheckAction, challenge)
	if err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return "", membership.ErrKeyMismatch
		}
		return "", err
	}
	return membership.CheckAnswer(p.key, answer, nonce)
}

func (m *member) isLive() bool { return m.serving && m.keyOK && !m.draining }

// updateLiveLocked logs a worker joining or leaving planning.
func (p *WorkerPool) updateLiveLocked(loc string, m *member, why string) {
	live := m.isLive()
	if live == m.live {
		return
	}
	m.live = live
	if live {
		p.log.Info("worker joined planning", zap.String("worker", loc))
	} else {
		p.log.Info("worker left planning", zap.String("worker", loc), zap.String("reason", why))
	}
}

// Live returns the workers that are serving, hold the ticket key and are
// not draining, in the order they became known.
func (p *WorkerPool) Live() []planner.Worker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []planner.Worker
	for _, l := range p.order {
		if m := p.members[l]; m.isLive() {
			out = append(out, planner.Worker{Location: l, Slots: p.slots})
		}
	}
	return out
}

// Known returns every worker location the pool knows of, live or not.
func (p *WorkerPool) Known() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.order)
}

// Close stops the checks and closes the connections.
func (p *WorkerPool) Close() error {
	p.mu.Lock()
	p.closed = true
	stop := p.stop
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for l, m := range p.members {
		if m.conn != nil {
			errs = append(errs, m.conn.Close())
		}
		delete(p.members, l)
	}
	p.order = nil
	return errors.Join(errs...)
}

// WorkerHealth is one worker as the pool sees it.
type WorkerHealth struct {
	Location string
	// Health is live (planned on), draining, unhealthy (failing its
	// health check), refused (another ticket key or cluster token) or
	// unknown (not checked yet).
	Health string
	Slots  int
}

// Health states of WorkerHealth.
const (
	HealthLive      = "live"
	HealthDraining  = "draining"
	HealthUnhealthy = "unhealthy"
	HealthRefused   = "refused"
	HealthUnknown   = "unknown"
)

// Health returns every known worker's health, in the order they became
// known.
func (p *WorkerPool) Health() []WorkerHealth {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]WorkerHealth, 0, len(p.order))
	for _, l := range p.order {
		m := p.members[l]
		h := HealthUnknown
		switch {
		case m.isLive():
			h = HealthLive
		case m.draining:
			h = HealthDraining
		case m.refused:
			h = HealthRefused
		case m.conn != nil && !m.serving:
			h = HealthUnhealthy
		}
		out = append(out, WorkerHealth{Location: l, Health: h, Slots: p.slots})
	}
	return out
}
