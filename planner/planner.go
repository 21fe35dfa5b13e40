package planner

import (
	"errors"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/commit"
)

// Planner plans queries and runs coordinator-side statements. It is safe
// for concurrent use.
type Planner struct {
	opts       Options
	log        *zap.Logger
	aggregates aggregateNames
	// unstable are the functions whose value changes between runs
	// (resultcache.go).
	unstable aggregateNames
	stats    statsCache
	commits  commit.Stats
}

// New returns a planner; Mounts, Engine, Key, Workers and Flight are required.
func New(o Options) (*Planner, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.TicketTTL == 0 {
		o.TicketTTL = DefaultTicketTTL
	}
	if o.TargetGroupBytes == 0 {
		o.TargetGroupBytes = DefaultTargetGroupBytes
	}
	if o.MaxValueBytes == 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.BroadcastBytes == 0 {
		o.BroadcastBytes = DefaultBroadcastBytes
	}
	if o.ShuffleBytes == 0 {
		o.ShuffleBytes = DefaultShuffleBytes
	}
	if o.ShufflePartitions == 0 {
		o.ShufflePartitions = DefaultShufflePartitions
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Planner{opts: o, log: log}, nil
}

// Options returns the options p runs with, defaults filled in: what the
// statement package executes with.
func (p *Planner) Options() Options { return p.opts }

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Mounts == nil {
		errs = append(errs, errors.New("planner: Mounts is required"))
	}
	if o.Engine == nil {
		errs = append(errs, errors.New("planner: Engine is required"))
	}
	if o.Key == nil {
		errs = append(errs, errors.New("planner: Key is required"))
	}
	if o.Workers == nil {
		errs = append(errs, errors.New("planner: Workers is required"))
	}
	if o.Flight == nil {
		errs = append(errs, errors.New("planner: Flight is required"))
	}
	if o.TicketTTL < 0 {
		errs = append(errs, errors.New("planner: TicketTTL must be >= 0"))
	}
	if o.TargetGroupBytes < 0 {
		errs = append(errs, errors.New("planner: TargetGroupBytes must be >= 0"))
	}
	if o.ShufflePartitions < 0 {
		errs = append(errs, errors.New("planner: ShufflePartitions must be >= 0"))
	}
	return errors.Join(errs...)
}
