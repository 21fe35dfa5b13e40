package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
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
	// on a loopback Addr, since profiles expose the process's memory,
	// and only to an admin.
	Profile bool
	// Hosts are the names the status page and the profiles answer to
	// besides IP addresses, localhost and Addr's host: a request naming
	// another host in its Host header is refused, so a page of another
	// name that resolves to this listener (DNS rebinding) cannot read or
	// post to them.
	Hosts []string
	// Auth authenticates the profiles' requests as the Flight service's
	// calls are, and Policy says who is an admin; nil Auth serves
	// everyone (authentication is off). The status page authenticates
	// its own requests.
	Auth   *auth.Authenticator
	Policy *authz.Policy
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

// hostNames are the lower-cased names besides IP addresses and localhost
// that the guarded handlers answer to.
func (o ServerOptions) hostNames() []string {
	var names []string
	if host, _, err := net.SplitHostPort(o.Addr); err == nil && host != "" && net.ParseIP(host) == nil {
		names = append(names, host)
	}
	names = append(names, o.Hosts...)
	for i, n := range names {
		names[i] = strings.TrimSuffix(strings.ToLower(n), ".")
	}
	return names
}

// hostAllowed tells whether a request's Host header names this listener:
// an IP address (a page of an IP address cannot be rebound to another
// host), localhost, or one of names.
func hostAllowed(host string, names []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	return host != "" && (net.ParseIP(host) != nil || host == "localhost" || slices.Contains(names, host))
}

// hostGuard refuses (403) a request whose Host
// header names another host than this listener's.
func hostGuard(names []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, names) {
			http.Error(w, "this listener does not answer to host "+strconv.Quote(r.Host)+": add it to http_hosts in the config", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// adminOnly serves h to an admin (anyone while authentication is off).
func adminOnly(p *authz.Policy, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Admin(r.Context()) {
			http.Error(w, "profiles are served to the admin role only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
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
	hosts := o.hostNames()
	if o.Profile {
		prof := http.NewServeMux()
		prof.HandleFunc("/debug/pprof/", pprof.Index)
		prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
		prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.Handle("/debug/pprof/", hostGuard(hosts, o.Auth.Handler(adminOnly(o.Policy, prof))))
	}
	if o.Status != nil {
		mux.Handle("/", hostGuard(hosts, o.Status))
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", o.Addr, err)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Addr is the address the listener is bound to; "" for none (a nil
// Server: no --http-addr).
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the listener.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	return s.srv.Close()
}
