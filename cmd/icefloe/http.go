package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/metrics"
)

// PprofEnv names the environment variable that makes a server role
// (serve, coordinator, worker) serve Go's net/http/pprof handlers at
// /debug/pprof/ on its HTTP listener, e.g. ICEFLOE_PPROF=127.0.0.1:6060:
// the listener is at that address unless --http-addr (http_listen) sets
// one. Unset (the default) serves no profiles. Only loopback addresses
// are accepted: profiles expose the process's memory.
const PprofEnv = "ICEFLOE_PPROF"

// httpAddrUsage describes --http-addr.
const httpAddrUsage = "host:port of the HTTP listener: /metrics (Prometheus), /healthz and, on a coordinator, the status page; empty: none"

// newMetricsRegistry is a process's metrics registry, with Go's runtime
// and the process's metrics.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// httpListen is where the role's HTTP listener binds ("": none) and
// whether it serves profiles.
func (r *roleFlags) httpListen() (addr string, profile bool, err error) {
	addr, pp := *r.httpAddr, os.Getenv(PprofEnv)
	if pp == "" {
		return addr, false, nil
	}
	if !metrics.Loopback(pp) {
		return "", false, fmt.Errorf("%s: %q is not a loopback address", PprofEnv, pp)
	}
	if addr == "" {
		addr = pp
	}
	if !metrics.Loopback(addr) {
		return "", false, fmt.Errorf("%s: profiles are served on the HTTP listener, and --http-addr %q is not a loopback address", PprofEnv, addr)
	}
	return addr, true, nil
}

// startHTTP starts the role's HTTP listener, if it has one; status, when
// set, serves the status page. Profiles are served to sec's admins.
func (r *roleFlags) startHTTP(reg prometheus.Gatherer, sec cluster.Security, status http.Handler) (*metrics.Server, error) {
	addr, profile, err := r.httpListen()
	if err != nil || addr == "" {
		return nil, err
	}
	srv, err := metrics.Listen(metrics.ServerOptions{Addr: addr, Gatherer: reg, Status: status, Profile: profile,
		Hosts: r.cfg.HTTPHosts, Auth: sec.Auth, Policy: sec.Policy})
	if err != nil {
		return nil, fmt.Errorf("--http-addr: %w", err)
	}
	return srv, nil
}

// startCoordinatorHTTP starts the HTTP listener of a process that runs
// coordinator c: its metrics, pprof when asked, and c's status page.
func (r *roleFlags) startCoordinatorHTTP(reg prometheus.Gatherer, sec cluster.Security, c *cluster.Coordinator) (*metrics.Server, error) {
	page, err := c.StatusPage()
	if err != nil {
		return nil, err
	}
	return r.startHTTP(reg, sec, page)
}
