package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/icefloe/icefloe/internal/cluster"
	"github.com/icefloe/icefloe/internal/streamidle"
)

// LimitsConfig bounds what runs at once and for how long
// (docs/operations.md). A count of 0 takes its default; -1 means none: no
// limit for a running count, no queue for a queued one.
type LimitsConfig struct {
	// MaxRunningStatements bounds a coordinator's statements.
	MaxRunningStatements int `yaml:"max_running_statements,omitempty"`
	// MaxRunningStatementsPerPrincipal bounds one principal's.
	MaxRunningStatementsPerPrincipal int `yaml:"max_running_statements_per_principal,omitempty"`
	// MaxQueuedStatements bounds those waiting for a slot.
	MaxQueuedStatements int `yaml:"max_queued_statements,omitempty"`
	// MaxRunningFragments bounds each worker's fragments.
	MaxRunningFragments int `yaml:"max_running_fragments,omitempty"`
	// MaxRunningFragmentsPerPrincipal bounds one principal's on a worker.
	MaxRunningFragmentsPerPrincipal int `yaml:"max_running_fragments_per_principal,omitempty"`
	// MaxQueuedFragments bounds those waiting for a slot on a worker.
	MaxQueuedFragments int `yaml:"max_queued_fragments,omitempty"`
	// QueueTimeout is how long a statement or fragment waits for a slot.
	QueueTimeout time.Duration `yaml:"queue_timeout,omitempty"`
	// StatementTimeout ends statements that run longer; 0 means none.
	StatementTimeout time.Duration `yaml:"statement_timeout,omitempty"`
	// StagingGrace is the age past which a starting coordinator drops a
	// staging table a create that did not finish left; 0 means the
	// default.
	StagingGrace time.Duration `yaml:"staging_grace,omitempty"`
	// StreamIdleTimeout cuts a stream whose client stopped reading, or an
	// upload that stopped sending; 0 means the default, a negative
	// duration none.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout,omitempty"`
}

func (l *LimitsConfig) validate() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, c := range []struct {
		key string
		v   int
	}{
		{"max_running_statements", l.MaxRunningStatements}, {"max_running_statements_per_principal", l.MaxRunningStatementsPerPrincipal},
		{"max_queued_statements", l.MaxQueuedStatements}, {"max_running_fragments", l.MaxRunningFragments},
		{"max_running_fragments_per_principal", l.MaxRunningFragmentsPerPrincipal}, {"max_queued_fragments", l.MaxQueuedFragments},
	} {
		if c.v < -1 {
			errs = append(errs, fmt.Errorf("config: limits.%s: must be >= -1, got %d", c.key, c.v))
		}
	}
	if l.QueueTimeout < 0 {
		errs = append(errs, fmt.Errorf("config: limits.queue_timeout: must be >= 0, got %s", l.QueueTimeout))
	}
	if l.StatementTimeout < 0 {
		errs = append(errs, fmt.Errorf("config: limits.statement_timeout: must be >= 0, got %s", l.StatementTimeout))
	}
	if l.StagingGrace < 0 {
		errs = append(errs, fmt.Errorf("config: limits.staging_grace: must be >= 0, got %s", l.StagingGrace))
	}
	return errors.Join(errs...)
}

// limits returns the cluster's limits: the defaults, with what the
// config sets over them.
func (l *LimitsConfig) limits() cluster.Limits {
	if l == nil {
		l = &LimitsConfig{}
	}
	count := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	qt := l.QueueTimeout
	if qt == 0 {
		qt = cluster.DefaultQueueTimeout
	}
	lim := cluster.NewLimits(
		count(l.MaxRunningStatements, cluster.DefaultMaxRunningStatements), count(l.MaxRunningStatementsPerPrincipal, 0),
		count(l.MaxQueuedStatements, cluster.DefaultMaxQueuedStatements),
		count(l.MaxRunningFragments, cluster.DefaultMaxRunningFragments), count(l.MaxRunningFragmentsPerPrincipal, 0),
		count(l.MaxQueuedFragments, cluster.DefaultMaxQueuedFragments),
		qt, l.StatementTimeout)
	lim.StagingGrace = l.StagingGrace
	switch idle := l.StreamIdleTimeout; {
	case idle == 0:
		lim.StreamIdleTimeout = streamidle.DefaultTimeout
	case idle > 0:
		lim.StreamIdleTimeout = idle
	}
	return lim
}
