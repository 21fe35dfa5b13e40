package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/metrics"
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
	// StatementTimeout ends statements that run longer; 0 means the
	// default (1h), a negative duration none.
	StatementTimeout time.Duration `yaml:"statement_timeout,omitempty"`
	// StagingGrace is the age past which a starting coordinator drops a
	// staging table a create that did not finish left; 0 means the
	// default.
	StagingGrace time.Duration `yaml:"staging_grace,omitempty"`
	// MemoryBudget is the process's memory (e.g. "8GiB"), split between
	// its DuckDB instances and its Go-side Arrow buffers; empty means
	// membudget.DefaultPercent of the machine's (or cgroup's) memory.
	MemoryBudget string `yaml:"memory_budget,omitempty"`
	// QueryMemory bounds one query's Go-side Arrow buffers in a process;
	// empty means half the process's Arrow share.
	QueryMemory string `yaml:"query_memory,omitempty"`
	// MaxTempDirectorySize bounds what the process's DuckDB instances
	// spill to disk together; empty means the memory budget's size.
	MaxTempDirectorySize string `yaml:"max_temp_directory_size,omitempty"`
	// MaxStatementBytes bounds a statement's text; 0 is the default, -1
	// none.
	MaxStatementBytes int `yaml:"max_statement_bytes,omitempty"`
	// MaxValueBytes bounds one value built by repeat, lpad, rpad,
	// list_resize or array_resize; empty is the default.
	MaxValueBytes string `yaml:"max_value_bytes,omitempty"`
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
	if l.StagingGrace < 0 {
		errs = append(errs, fmt.Errorf("config: limits.staging_grace: must be >= 0, got %s", l.StagingGrace))
	}
	if _, err := l.memorySizes(); err != nil {
		errs = append(errs, err)
	}
	if l.MaxStatementBytes < -1 {
		errs = append(errs, fmt.Errorf("config: limits.max_statement_bytes: must be >= -1, got %d", l.MaxStatementBytes))
	}
	if l.MaxValueBytes != "" {
		if _, err := engine.ParseMemoryLimit(l.MaxValueBytes); err != nil {
			errs = append(errs, fmt.Errorf("config: limits.max_value_bytes: %w", err))
		}
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
	st := l.StatementTimeout
	switch {
	case st == 0:
		st = cluster.DefaultStatementTimeout
	case st < 0:
		st = 0
	}
	lim := cluster.NewLimits(
		count(l.MaxRunningStatements, cluster.DefaultMaxRunningStatements), count(l.MaxRunningStatementsPerPrincipal, 0),
		count(l.MaxQueuedStatements, cluster.DefaultMaxQueuedStatements),
		count(l.MaxRunningFragments, cluster.DefaultMaxRunningFragments), count(l.MaxRunningFragmentsPerPrincipal, 0),
		count(l.MaxQueuedFragments, cluster.DefaultMaxQueuedFragments),
		qt, st)
	lim.StagingGrace = l.StagingGrace
	lim.MaxStatementBytes = l.MaxStatementBytes
	if l.MaxValueBytes != "" {
		lim.MaxValueBytes, _ = engine.ParseMemoryLimit(l.MaxValueBytes) // validate checked it
	}
	switch idle := l.StreamIdleTimeout; {
	case idle == 0:
		lim.StreamIdleTimeout = streamidle.DefaultTimeout
	case idle > 0:
		lim.StreamIdleTimeout = idle
	}
	return lim
}

// memorySizes are the budget, spill size and per-query limit the config
// sets, defaults filled in.
func (l *LimitsConfig) memorySizes() (sizes [3]int64, err error) {
	if l == nil {
		l = &LimitsConfig{}
	}
	var errs []error
	for i, c := range []struct{ key, v string }{
		{"memory_budget", l.MemoryBudget}, {"max_temp_directory_size", l.MaxTempDirectorySize}, {"query_memory", l.QueryMemory},
	} {
		if c.v == "" {
			continue
		}
		n, err := engine.ParseMemoryLimit(c.v)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: limits.%s: %w", c.key, err))
			continue
		}
		sizes[i] = n
	}
	if sizes[0] == 0 && l.MemoryBudget == "" {
		sizes[0] = membudget.Default()
	} else if sizes[0] < membudget.MinBudget && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("config: limits.memory_budget: %s is below the minimum of 256MiB", l.MemoryBudget))
	}
	if sizes[1] == 0 && l.MaxTempDirectorySize == "" {
		sizes[1] = sizes[0]
	}
	return sizes, errors.Join(errs...)
}

// memory splits the process's budget between a coordinator (when
// coordinator is set) and workers.
func (l *LimitsConfig) memory(coordinator bool, workers int) (membudget.Shares, error) {
	sz, err := l.memorySizes()
	if err != nil {
		return membudget.Shares{}, err
	}
	return membudget.Split(sz[0], sz[1], sz[2], coordinator, workers), nil
}

// applyMemory bounds DuckDB's heap in the process to its share of the
// budget, sets the Go runtime's soft memory limit to the Go share (unless
// GOMEMLIMIT is set), puts the process's budget of Arrow buffers in lim
// and registers the gauges of both in reg. It runs before any DuckDB
// opens.
func applyMemory(sh membudget.Shares, lim *cluster.Limits, reg prometheus.Registerer) error {
	if err := engine.SetHeapLimit(sh.Engine); err != nil {
		return err
	}
	metrics.RegisterHeap(reg)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(sh.GoLimit)
	}
	lim.Memory = membudget.New(sh.Arrow, sh.Query, nil)
	metrics.RegisterBudget(reg, lim.Memory)
	return nil
}
