package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServerOptions configure a process's HTTP listener.
type ServerOptions struct {
	// Addr is host:port; port 0 picks a free one. Required.
	Addr string
	// Gatherer is what /metrics serves. Required.
	Gatherer prometheus.Gatherer
	// Status, when set, serves the status page at / and what it posts.
	Status http.Handler
	// Profile serves Go's net/http/pprof handlers at /debug/pprof/; only
	// on a loopback Addr, since profiles expose the process's memory.
	Profile bool
}

// Validate reports every problem with o.
func (o ServerOptions) Validate() error {
	var errs []error
	if o.Addr == "" {
		errs = append(errs, errors.New("metrics: Addr is required"))
	}
	if o.Gatherer == nil {
		errs = append(errs, errors.New("metrics: Gatherer is required"))
	}
	if o.Profile && !Loopback(o.Addr) {
		errs = append(errs, fmt.Errorf("metrics: profiling handlers are only served on a loopback address, not %q", o.Addr))
	}
	return errors.Join(errs...)
}

// Loopback says whether addr's host is a loopback address.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// Server is a running HTTP listener.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen starts serving /metrics, /healthz and what o adds.
func Listen(o ServerOptions) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	if o.Profile {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.Status != nil {
		mux.Handle("/", o.Status)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", o.Addr, err)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	return s.srv.Close()
}
