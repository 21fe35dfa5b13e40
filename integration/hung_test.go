package integration

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/icefloe/icefloe/internal/flightclient"
)

// hungBound is how long a statement on a stopped worker may take to fail:
// the keepalive's bound, with room for a loaded machine.
const hungBound = flightclient.StoppedAnsweringAfter + 60*time.Second

// stopWorker sends SIGSTOP to a worker process and, at the test's end,
// SIGCONT (its kill follows, by startProc's cleanup).
func stopWorker(t *testing.T, w *role) {
	t.Helper()
	w.signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) })
}

// within runs f and fails the test unless it returns within d.
func within(t *testing.T, d time.Duration, what string, f func() error) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err, time.Since(start)
	case <-time.After(d):
		t.Fatalf("%s still waits %s after the worker stopped", what, d)
		return nil, 0
	}
}

// wantStopped checks that err names the stopped worker and says it
// stopped answering.
func wantStopped(t *testing.T, what string, err error, w *role, took time.Duration) {
	t.Helper()
	addr := strings.TrimPrefix(w.field("worker"), "grpc://")
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("%s on a stopped worker: %v, want an error naming %s that says it stopped answering", what, err, addr)
	}
	t.Logf("%s failed %s after the worker stopped: %v", what, took.Round(time.Second), err)
}

// TestHungWorkerFailsItsStatements: a worker stopped with SIGSTOP while
// the coordinator pulls from it (the single-endpoint proxy of a query, the
// fan-out of an INSERT … SELECT) fails the statement within the keepalive's
// bound, with an error naming the worker and saying it stopped answering,
// instead of holding it until the worker resumes.
func TestHungWorkerFailsItsStatements(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	env := []string{membershipKey}
	w := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	c := startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker", w.field("worker"))
	cnxn := adbcConn(t, c.addr())
	seedTable(t, cnxn, "t", 10000)
	execUpdate(t, cnxn, `CREATE TABLE counts (n BIGINT)`)
	const slow = `SELECT count(*) FROM t a, t b, t c WHERE a.g + b.g + c.g < 0`

	single := metadata.AppendToOutgoingContext(context.Background(), "x-icefloe-single-endpoint", "true")
	cl := flightClient(t, c.addr())
	info, err := cl.Execute(single, slow)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(single, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	insert := make(chan error, 1)
	go func() { insert <- runADBC(adbcConn(t, c.addr()), `INSERT INTO counts `+slow, true, false) }()
	time.Sleep(time.Second)
	stopWorker(t, w)

	err, took := within(t, hungBound, "a proxied query", func() error {
		for rdr.Next() {
		}
		if rdr.Err() == nil {
			return fmt.Errorf("the proxied query answered %d rows", rdr.RecordBatch().NumRows())
		}
		return rdr.Err()
	})
	wantStopped(t, "a proxied query", err, w, took)
	err, took = within(t, hungBound, "an INSERT … SELECT", func() error { return <-insert })
	wantStopped(t, "an INSERT … SELECT", err, w, took)
	c.waitLog(5*time.Second, "worker left planning", w.field("worker"))
}

// TestHungPeerOfAGather: a worker running a gather whose peer stops
// (SIGSTOP) while it pulls the peer's children does not wait for ever:
// within the keepalive's bound the child's pull fails and, as no row of
// it had arrived, is pulled at its next location, so the gather answers
// in full.
func TestHungPeerOfAGather(t *testing.T) {
	_, w1, w2, c, cnxn := listedWorkersIn(t, 10000)
	const gather = `SELECT count(*), sum(r) FROM (SELECT id, row_number() OVER (ORDER BY id) AS r FROM t) WHERE r = id + 1`
	want := mustQuery(t, cnxn, gather).rows
	info, err := flightClient(t, c.addr()).Execute(context.Background(), gather)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 {
		t.Fatalf("a gather planned %d endpoints", len(info.Endpoint))
	}
	owner, peer := w1, w2
	if info.Endpoint[0].Location[0].Uri == w2.field("worker") {
		owner, peer = w2, w1
	}
	stopWorker(t, peer)
	var got []string
	err, took := within(t, hungBound, "a gather pulling from a stopped peer", func() error {
		rdr, err := flightClient(t, strings.TrimPrefix(owner.field("worker"), "grpc://")).DoGet(context.Background(), info.Endpoint[0].Ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
			got = append(got, rowsOf(rdr.RecordBatch())...)
		}
		return rdr.Err()
	})
	if err != nil {
		if !strings.Contains(err.Error(), "stopped answering") || !strings.Contains(err.Error(), strings.TrimPrefix(peer.field("worker"), "grpc://")) {
			t.Fatalf("a gather pulling from a stopped peer: %v, want the whole answer or an error naming the peer that says it stopped answering", err)
		}
		t.Logf("the gather failed %s after its peer stopped: %v", took.Round(time.Second), err)
		return
	}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("a gather pulling from a stopped peer answered %v, want %v", got, want)
	}
	t.Logf("the gather answered in full %s after its peer stopped", took.Round(time.Second))
}
