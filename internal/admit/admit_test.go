package admit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func mustNew(t *testing.T, o Options) *Limiter {
	t.Helper()
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestQueueFullAndQueuedTooLong(t *testing.T) {
	l := mustNew(t, Options{Noun: "statements", Key: "k.max", MaxRunning: 1, MaxQueued: 1, QueueTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	rel, err := l.Acquire(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx, ""); queued <- err }()
	for l.Stats().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	_, err = l.Acquire(ctx, "")
	if !errors.Is(err, ErrQueueFull) || err.Error() != "queue full: 1 statements running, 1 queued (limit key k.max)" {
		t.Fatalf("third: %v", err)
	}
	if err := <-queued; !errors.Is(err, ErrQueuedTooLong) || !strings.Contains(err.Error(), "after 50ms") {
		t.Fatalf("queued: %v", err)
	}
	rel()
	rel() // idempotent
	if st := l.Stats(); st.Running != 0 || st.Queued != 0 || st.Refused != 1 || st.TimedOut != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQueuedIsAdmittedOnRelease(t *testing.T) {
	l := mustNew(t, Options{MaxRunning: 1, MaxQueued: 4, QueueTimeout: time.Minute})
	rel, _ := l.Acquire(context.Background(), "")
	got := make(chan func(), 1)
	go func() {
		r, err := l.Acquire(context.Background(), "")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	for l.Stats().Queued != 1 {
		time.Sleep(time.Millisecond)
	}
	rel()
	(<-got)()
	if st := l.Stats(); st.Running != 0 || st.Admitted != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPerPrincipalDoesNotBlockOthers(t *testing.T) {
	l := mustNew(t, Options{Noun: "statements", PrincipalKey: "k.pp", MaxRunning: 4, MaxPerPrincipal: 1})
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, "alice")
	if !errors.Is(err, ErrQueueFull) || err.Error() != "queue full: principal alice has 1 statements running, 0 queued (limit key k.pp)" {
		t.Fatalf("alice again: %v", err)
	}
	if _, err := l.Acquire(ctx, "bob"); err != nil {
		t.Fatalf("bob: %v", err)
	}
}

func TestCancelWhileQueued(t *testing.T) {
	l := mustNew(t, Options{MaxRunning: 1, MaxQueued: 1})
	l.Acquire(context.Background(), "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if st := l.Stats(); st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNilAdmitsAll(t *testing.T) {
	var l *Limiter
	rel, err := l.Acquire(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	rel()
}

func TestTimeoutCause(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	dl := DeadlineOf(ctx)
	if dl.Timeout != 10*time.Millisecond || dl.At.IsZero() {
		t.Fatalf("deadline %+v", dl)
	}
	<-ctx.Done()
	err := TimedOut(ctx)
	if !errors.Is(err, ErrStatementTimeout) || !strings.Contains(err.Error(), "statement_timeout of 10ms") {
		t.Fatalf("cause %v", err)
	}
	// A ticket's deadline ends a worker's context the same way.
	wctx, wcancel := WithDeadline(context.Background(), dl)
	defer wcancel()
	<-wctx.Done()
	if TimedOut(wctx) == nil {
		t.Fatal("worker context did not end by the statement timeout")
	}
	plain, pcancel := WithTimeout(context.Background(), 0)
	pcancel()
	if TimedOut(plain) != nil || !DeadlineOf(plain).At.IsZero() {
		t.Fatal("no timeout but a timeout cause")
	}
}
