package membership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/wire"
)

// DefaultAnnounceInterval is how often a worker repeats its announcement;
// a coordinator forgets it after AnnounceTTLFactor intervals of silence.
const (
	DefaultAnnounceInterval = 2 * time.Second
	AnnounceTTLFactor       = 3
)

// Dialer opens a gRPC connection to a Flight location.
type Dialer func(location string) (*grpc.ClientConn, error)

// AnnouncerOptions configure an Announcer.
type AnnouncerOptions struct {
	// Key seals the announcements. Required.
	Key *wire.Key
	// Location is the worker's own Flight location. Required.
	Location string
	// Coordinators are the Flight locations announced to. Required.
	Coordinators []string
	// Interval between announcements; 0 means DefaultAnnounceInterval.
	Interval time.Duration
	// Dial connects to a coordinator. Required.
	Dial   Dialer
	Logger *zap.Logger
}

// Validate reports every problem at once.
func (o AnnouncerOptions) Validate() error {
	var errs []error
	if o.Key == nil {
		errs = append(errs, errors.New("membership: announcer: Key is required"))
	}
	if o.Location == "" {
		errs = append(errs, errors.New("membership: announcer: Location is required"))
	}
	if len(o.Coordinators) == 0 {
		errs = append(errs, errors.New("membership: announcer: no coordinator to announce to"))
	}
	if o.Interval < 0 {
		errs = append(errs, errors.New("membership: announcer: Interval must be >= 0"))
	}
	if o.Dial == nil {
		errs = append(errs, errors.New("membership: announcer: Dial is required"))
	}
	return errors.Join(errs...)
}

// Announcer repeats a worker's announcement to every coordinator until it
// drains. It is safe for concurrent use.
type Announcer struct {
	o     AnnouncerOptions
	log   *zap.Logger
	conns map[string]*grpc.ClientConn

	mu    sync.Mutex
	state map[string]string // last outcome per coordinator, logged on change
	stop  context.CancelFunc
	done  chan struct{}
}

// NewAnnouncer dials the coordinators (lazily, as gRPC does).
func NewAnnouncer(o AnnouncerOptions) (*Announcer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Interval == 0 {
		o.Interval = DefaultAnnounceInterval
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	a := &Announcer{o: o, log: o.Logger, conns: map[string]*grpc.ClientConn{}, state: map[string]string{}}
	for _, c := range o.Coordinators {
		conn, err := o.Dial(c)
		if err != nil {
			a.closeConns()
			return nil, fmt.Errorf("membership: coordinator %s: %w", c, err)
		}
		a.conns[c] = conn
	}
	return a, nil
}

// Start announces now and then every interval until Drain or Close.
func (a *Announcer) Start(ctx context.Context) {
	ctx, a.stop = context.WithCancel(ctx)
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTicker(a.o.Interval)
		defer t.Stop()
		for {
			a.announceAll(ctx, false)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Drain stops the repeats and tells every coordinator, within ctx, that
// the worker is draining, so they plan nothing more on it.
func (a *Announcer) Drain(ctx context.Context) {
	a.halt()
	a.announceAll(ctx, true)
}

// Close stops the repeats and closes the connections.
func (a *Announcer) Close() error {
	a.halt()
	return a.closeConns()
}

func (a *Announcer) halt() {
	if a.stop != nil {
		a.stop()
		<-a.done
	}
}

func (a *Announcer) closeConns() error {
	var errs []error
	for _, c := range a.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func (a *Announcer) announceAll(ctx context.Context, draining bool) {
	var wg sync.WaitGroup
	for loc, conn := range a.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.record(loc, a.announce(ctx, conn, draining), draining)
		}()
	}
	wg.Wait()
}

func (a *Announcer) announce(ctx context.Context, conn *grpc.ClientConn, draining bool) error {
	ctx, cancel := context.WithTimeout(ctx, a.o.Interval)
	defer cancel()
	ann := Announcement{Location: a.o.Location, Draining: draining, TTL: AnnounceTTLFactor * a.o.Interval}
	body, nonce, err := SealAnnouncement(a.o.Key, ann)
	if err != nil {
		return err
	}
	ack, err := flightclient.DoActionOne(ctx, flight.NewFlightServiceClient(conn), AnnounceAction, body)
	if err != nil {
		if f := flightclient.FailureOf(err); f.Kind == flightclient.Denied {
			return fmt.Errorf("%w (%s)", ErrKeyMismatch, f.Message)
		}
		return err
	}
	return CheckAck(a.o.Key, ack, nonce)
}

// record logs an announcement's outcome when it differs from the last one
// to the same coordinator.
func (a *Announcer) record(coord string, err error, draining bool) {
	outcome := "ok"
	if err != nil {
		outcome = err.Error()
	}
	a.mu.Lock()
	changed := a.state[coord] != outcome
	a.state[coord] = outcome
	a.mu.Unlock()
	switch {
	case errors.Is(err, ErrKeyMismatch):
		if changed {
			a.log.Error("coordinator refused this worker: its ticket key differs from this worker's; set the same ticket_key (ICEFLOE_TICKET_KEY) on both",
				zap.String("coordinator", coord), zap.String("worker", a.o.Location))
		}
	case err != nil:
		if changed || draining {
			a.log.Warn("announcement to coordinator failed", zap.String("coordinator", coord), zap.Error(err))
		}
	case draining:
		a.log.Info("told coordinator this worker is draining", zap.String("coordinator", coord))
	case changed:
		a.log.Info("joined coordinator", zap.String("coordinator", coord), zap.String("worker", a.o.Location))
	}
}
