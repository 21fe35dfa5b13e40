package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/icefloe/icefloe/internal/readyline"
)

// proc is one icefloe process of the cluster, stopped by PID.
type proc struct {
	name   string
	log    string // path of its log
	cmd    *exec.Cmd
	pprof  string // host:port of its pprof handlers
	fields map[string]any
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// cluster is a coordinator and its workers.
type cluster struct {
	dir, logs   string
	coordinator *proc
	workers     []*proc
}

// procs lists every process, coordinator first.
func (c *cluster) procs() []*proc {
	out := []*proc{}
	if c.coordinator != nil {
		out = append(out, c.coordinator)
	}
	return append(out, c.workers...)
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startProc starts `bin args…` with env added, its stderr logged to
// <logs>/<name>.log, and waits for its ready line.
func startProc(bin, logs, name string, env []string, args ...string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, pprof: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), env...), "ICEFLOE_PPROF="+p.pprof)
	// Killed with us even if we die without stopping it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(logs, name+".log"))
	if err != nil {
		return nil, err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p.log = logf.Name()
	ready := make(chan map[string]any, 1)
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if f := readyline.Fields(line); f != nil {
				select {
				case ready <- f:
				default:
				}
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.fields = <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before it was ready (%v): see %s", name, p.err, logf.Name())
	case <-time.After(2 * time.Minute):
		p.stop(5 * time.Second)
		return nil, fmt.Errorf("%s not ready after 2 minutes: see %s", name, logf.Name())
	}
}

func (p *proc) field(name string) string { s, _ := p.fields[name].(string); return s }

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process and waits up to grace for it to end,
// then kills it.
func (p *proc) stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM: killed", p.name, grace)
	}
}

// startCluster starts the workers, then a coordinator that plans over
// them, all sharing dir's warehouse and a fresh ticket key, logging into
// logs.
func startCluster(bin, dir, logs string, workers int, coordConfig, workerConfig string) (*cluster, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	env := []string{"ICEFLOE_TICKET_KEY=" + hex.EncodeToString(key)}
	data := filepath.Join(dir, "data")
	c := &cluster{dir: dir, logs: logs}
	coordArgs := []string{"coordinator", "--listen", "127.0.0.1:0", "--data-dir", data, "--config", coordConfig}
	for i := range workers {
		name := fmt.Sprintf("worker-%d", i+1)
		w, err := startProc(bin, logs, name, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", data, "--config", workerConfig)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.workers = append(c.workers, w)
		coordArgs = append(coordArgs, "--worker", w.field("worker"))
	}
	co, err := startProc(bin, logs, "coordinator", env, coordArgs...)
	if err != nil {
		c.stop()
		return nil, err
	}
	c.coordinator = co
	return c, nil
}

// addr is the coordinator's grpc:// URI.
func (c *cluster) uri() string { return c.coordinator.field("coordinator") }

// stop stops the coordinator, then the workers, each by PID.
func (c *cluster) stop() error {
	var errs []error
	for _, p := range c.procs() {
		if err := p.stop(40 * time.Second); err != nil && !isSignalExit(err) {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

// isSignalExit says whether err is only the process having ended by the
// SIGTERM it was sent (icefloe exits 0 on SIGTERM, but be lenient).
func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return true
		}
	}
	return false
}

// ---- what the processes hold ---------------------------------------------------

// procStatus reads VmRSS and VmHWM (bytes) of /proc/PID/status.
func procStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = n * 1024
		} else {
			hwm = n * 1024
		}
	}
	return rss, hwm, nil
}

// resetHWM resets the process's VmHWM to its current RSS (Linux:
// writing 5 to /proc/PID/clear_refs); it says whether that worked.
func resetHWM(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// goroutineCount is a process's goroutines: all of them, and those not
// serving an open gRPC connection (each connection, client or server
// side, keeps three or four goroutines for as long as it is pooled).
type goroutineCount struct {
	Total, Other int
}

// goroutines counts the process's goroutines from its pprof handler.
func goroutines(ctx context.Context, p *proc) (goroutineCount, error) {
	var n goroutineCount
	body, err := get(ctx, p, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return n, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() {
		return n, fmt.Errorf("%s goroutine profile: empty (%v)", p.name, sc.Err())
	}
	// "goroutine profile: total 123", then "N @ pcs…" and "#\tpc func file" lines per stack.
	const pre = "goroutine profile: total "
	if !strings.HasPrefix(sc.Text(), pre) {
		return n, fmt.Errorf("%s goroutine profile starts %q", p.name, sc.Text())
	}
	if n.Total, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(sc.Text(), pre))); err != nil {
		return n, err
	}
	count, conn := 0, false
	flush := func() {
		if !conn {
			n.Other += count
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if c, _, ok := strings.Cut(line, " @ "); ok && !strings.HasPrefix(line, "#") {
			flush()
			count, conn = 0, false
			count, _ = strconv.Atoi(c)
			continue
		}
		if strings.Contains(line, "grpc/internal/transport.") || strings.Contains(line, "grpcsync.(*CallbackSerializer)") {
			conn = true
		}
	}
	flush()
	return n, sc.Err()
}

// saveGoroutines writes the process's goroutine profile (debug=1: one
// entry per distinct stack, with counts) to path.
func saveGoroutines(ctx context.Context, p *proc, path string) error {
	body, err := get(ctx, p, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	return errors.Join(err, f.Close())
}

// get GETs path of the process's HTTP listener; the caller closes the
// body.
func get(ctx context.Context, p *proc, path string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprof+path, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%s %s: %s", p.name, path, resp.Status)
	}
	return cancelCloser{resp.Body, cancel}, nil
}

type cancelCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelCloser) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// sampler samples every process's VmRSS every interval, and the load
// average every second, until stopped.
type sampler struct {
	mu      sync.Mutex
	peak    map[string]int64
	series  map[string][]int64 // MiB, every interval
	loadavg []float64          // 1-minute load average, every second
	stopc   chan struct{}
	done    chan struct{}
}

func startSampler(procs []*proc, interval time.Duration) *sampler {
	s := &sampler{peak: map[string]int64{}, series: map[string][]int64{}, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		n := 0
		for {
			s.sample(procs, n%int(time.Second/interval) == 0)
			n++
			select {
			case <-s.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample(procs []*proc, withLoad bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range procs {
		rss, _, err := procStatus(p.pid())
		if err != nil {
			continue
		}
		s.peak[p.name] = max(s.peak[p.name], rss)
		s.series[p.name] = append(s.series[p.name], rss>>20)
	}
	rss, _, err := procStatus(os.Getpid())
	if err == nil {
		s.peak["load client"] = max(s.peak["load client"], rss)
	}
	if withLoad {
		if la, err := loadavg(); err == nil {
			s.loadavg = append(s.loadavg, la[0])
		}
	}
}

func (s *sampler) stop() {
	close(s.stopc)
	<-s.done
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadavg() ([3]float64, error) {
	var out [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return out, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("/proc/loadavg: %q", b)
	}
	for i := range out {
		if out[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return out, err
		}
	}
	return out, nil
}

// coordinatorCounters are the coordinator metrics a phase reports, as
// differences over it.
var coordinatorCounters = []string{
	"icefloe_commit_attempts_total", "icefloe_commit_conflicts_total", "icefloe_commit_retries_total",
	"icefloe_query_queue_seconds_sum", "icefloe_query_queue_seconds_count",
	"icefloe_query_plan_seconds_sum", "icefloe_query_plan_seconds_count",
}

// scrape reads the unlabelled samples of the process's /metrics.
func scrape(ctx context.Context, p *proc) (map[string]float64, error) {
	body, err := get(ctx, p, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

// countLines counts the lines of the file that contain s.
func countLines(path, s string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}
