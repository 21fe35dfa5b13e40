package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// PprofEnv names the environment variable that makes a server role
// (serve, coordinator, worker) serve Go's net/http/pprof handlers at
// /debug/pprof/ on the given loopback host:port, e.g.
// ICEFLOE_PPROF=127.0.0.1:6060. Unset (the default) serves nothing. Only
// loopback addresses are accepted: profiles expose the process's memory.
const PprofEnv = "ICEFLOE_PPROF"

// startPprof serves the profiling handlers when PprofEnv is set.
func startPprof() error {
	addr := os.Getenv(PprofEnv)
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %w", PprofEnv, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s: %q is not a loopback address", PprofEnv, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", PprofEnv, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // lives as long as the process
	return nil
}
