package main

import (
	"testing"
	"time"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/streamidle"
)

func TestLimitsConfig(t *testing.T) {
	var none *LimitsConfig
	if got, want := none.limits(), cluster.DefaultLimits(); got != want {
		t.Fatalf("no limits section: %+v, want the defaults %+v", got, want)
	}
	l := (&LimitsConfig{MaxRunningStatements: -1, MaxRunningFragmentsPerPrincipal: 2, MaxQueuedFragments: -1, StatementTimeout: time.Minute}).limits()
	if l.Statements.MaxRunning != 0 || l.Statements.MaxQueued != cluster.DefaultMaxQueuedStatements ||
		l.Fragments.MaxPerPrincipal != 2 || l.Fragments.MaxQueued != 0 || l.Fragments.MaxRunning != cluster.DefaultMaxRunningFragments ||
		l.StatementTimeout != time.Minute || l.Fragments.QueueTimeout != cluster.DefaultQueueTimeout {
		t.Fatalf("limits %+v", l)
	}
	if l.StreamIdleTimeout != streamidle.DefaultTimeout {
		t.Fatalf("stream idle timeout %s, want the default", l.StreamIdleTimeout)
	}
	if l := (&LimitsConfig{StreamIdleTimeout: -time.Second}).limits(); l.StreamIdleTimeout != 0 {
		t.Fatalf("a negative stream_idle_timeout gave %s, want none", l.StreamIdleTimeout)
	}
	if l := (&LimitsConfig{StreamIdleTimeout: time.Second}).limits(); l.StreamIdleTimeout != time.Second {
		t.Fatalf("stream_idle_timeout 1s gave %s", l.StreamIdleTimeout)
	}
	if l := (&LimitsConfig{StatementTimeout: -time.Second}).limits(); l.StatementTimeout != 0 {
		t.Fatalf("a negative statement_timeout gave %s, want none", l.StatementTimeout)
	}
	if l := (&LimitsConfig{}).limits(); l.StatementTimeout != cluster.DefaultStatementTimeout || l.StatementTimeout == 0 {
		t.Fatalf("no statement_timeout gave %s, want the default", l.StatementTimeout)
	}
	if err := (&LimitsConfig{MaxQueuedStatements: -2, QueueTimeout: -time.Second}).validate(); err == nil ||
		err.Error() != "config: limits.max_queued_statements: must be >= -1, got -2\nconfig: limits.queue_timeout: must be >= 0, got -1s" {
		t.Fatalf("validate: %v", err)
	}
}
