// Package testproc runs the real servers end-to-end suites test against
// (catalog servers, an S3 gateway) as child processes of a test.
package testproc

import (
	"bytes"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Start starts cmd with its output in the returned log, and kills it when
// t ends (and when the test binary dies, even without cleanup). exited is
// closed once the process has ended.
func Start(t testing.TB, cmd *exec.Cmd) (log *Log, exited <-chan struct{}) {
	t.Helper()
	log = &Log{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return log, done
}

// FreePort returns a port of 127.0.0.1 that is free now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Log is a process's output, safe to read while it writes.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns what the process wrote so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// WaitHTTP polls url until it answers at all, failing t when the process
// exits first or wait passes.
func WaitHTTP(t testing.TB, url string, exited <-chan struct{}, log *Log, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s: the server exited:\n%s", url, log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not come up:\n%s", url, log.String())
}
