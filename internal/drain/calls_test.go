package drain

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCalls(t *testing.T) {
	c := New()
	if !c.WaitIdle(time.Now(), 0) {
		t.Fatal("an empty set is not idle")
	}
	ctx, end := c.Begin(context.Background())
	if c.WaitIdle(time.Now().Add(50*time.Millisecond), 0) {
		t.Fatal("idle with a call in flight")
	}
	cause := errors.New("drained")
	if n := c.CancelAll(cause); n != 1 || context.Cause(ctx) != cause {
		t.Fatalf("CancelAll = %d, cause %v", n, context.Cause(ctx))
	}
	end()
	if c.WaitIdle(time.Now(), time.Hour) {
		t.Fatal("idle before the quiet spell passed")
	}
	if !c.WaitIdle(time.Now().Add(time.Second), 30*time.Millisecond) {
		t.Fatal("not idle after the quiet spell")
	}
	// Long idle already, a wait still lasts its quiet spell.
	start := time.Now()
	if !c.WaitIdle(time.Now().Add(time.Second), 100*time.Millisecond) || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("an idle set's wait ended after %s, before its quiet spell", time.Since(start))
	}
}
