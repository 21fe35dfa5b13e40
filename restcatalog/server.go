package restcatalog

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// Defaults of Options.
const (
	// DefaultMaxInFlight bounds the requests served at once; more wait
	// up to DefaultQueueWait for a slot, then get 503.
	DefaultMaxInFlight = 64
	DefaultQueueWait   = 10 * time.Second
	// DefaultMaxBodyBytes bounds a request's body (a commit of a wide
	// table's schema is the largest the specification sends).
	DefaultMaxBodyBytes = 16 << 20
	// DefaultRequestTimeout bounds a request that is not a commit; a
	// commit that started runs to its end (internal/commit).
	DefaultRequestTimeout = time.Minute
)

// Credentials say what a table load hands out for reading and writing
// its files.
type Credentials string

// The credential modes.
const (
	// CredentialsNone hands out no storage credentials: clients of an
	// object store bring their own, clients of a local warehouse read
	// and write the files through the file system they share with the
	// server (its permissions decide).
	CredentialsNone Credentials = "none"
	// CredentialsVended hands out the short-lived credentials an upstream
	// REST catalog vended for the table (scoped by that catalog), and
	// nothing for other catalogs.
	CredentialsVended Credentials = "vended"
	// CredentialsStatic also hands out a catalog's own configured
	// storage keys (s3.access-key-id, …) for its tables: keys that open
	// everything those keys open, not just the table. Only when the
	// operator opts in.
	CredentialsStatic Credentials = "static"
)

// Options configure a Server.
type Options struct {
	// Mounts are the catalogs served, one prefix each. Required.
	Mounts *catalog.Mounts
	// DefaultCatalog is the prefix GET /v1/config answers when the
	// client names no warehouse.
	DefaultCatalog string
	// Auth authenticates every request but GET /v1/config's and the
	// token endpoint's own; nil serves everyone (authentication is off,
	// as on the Flight listener).
	Auth *auth.Authenticator
	// Policy decides privileges; nil allows everything (authentication
	// is off).
	Policy *authz.Policy
	// Commits counts the commits (the coordinator's commit counters);
	// nil counts nothing.
	Commits *commit.Stats
	// Credentials is what a table load hands out (CredentialsNone when
	// empty).
	Credentials Credentials
	// MaxInFlight, QueueWait, MaxBodyBytes and RequestTimeout bound the
	// server; 0 means the default.
	MaxInFlight    int
	QueueWait      time.Duration
	MaxBodyBytes   int64
	RequestTimeout time.Duration
	// Audit gets one line per request (EventREST); nil writes none.
	Audit *audit.Log
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Mounts == nil {
		errs = append(errs, errors.New("restcatalog: Mounts is required"))
	}
	switch o.Credentials {
	case "", CredentialsNone, CredentialsVended, CredentialsStatic:
	default:
		errs = append(errs, fmt.Errorf("restcatalog: credentials %q: want %s, %s or %s", o.Credentials, CredentialsNone, CredentialsVended, CredentialsStatic))
	}
	if o.MaxInFlight < 0 || o.QueueWait < 0 || o.MaxBodyBytes < 0 || o.RequestTimeout < 0 {
		errs = append(errs, errors.New("restcatalog: limits must be >= 0"))
	}
	return errors.Join(errs...)
}

// Server serves the Iceberg REST catalog API. It is safe for concurrent
// use.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	slots chan struct{}
	log   *zap.Logger
	// proposed are the locations staged creates proposed.
	proposed *proposals
}

// New returns a server for o.
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Credentials == "" {
		o.Credentials = CredentialsNone
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.QueueWait == 0 {
		o.QueueWait = DefaultQueueWait
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	s := &Server{opts: o, mux: http.NewServeMux(), slots: make(chan struct{}, o.MaxInFlight), log: o.Logger, proposed: newProposals()}
	s.routes()
	return s, nil
}

// String describes the server without secrets.
func (s *Server) String() string {
	return fmt.Sprintf("restcatalog.Server{catalogs: %v, auth: %t, credentials: %s}", s.opts.Mounts.Names(), s.opts.Auth != nil, s.opts.Credentials)
}

// handler is one endpoint: it answers a value (written as JSON with
// status 200, or 204 when nil) or an error.
type handler func(r *http.Request) (any, error)

// routes registers every endpoint the server serves; endpoints lists the
// same for GET /v1/config.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /v1/config", s.authed("getConfig", s.config))
	s.mux.HandleFunc("POST /v1/oauth/tokens", s.tokens)
	for _, e := range endpoints {
		s.mux.HandleFunc(e.method+" "+e.path, s.authed(e.kind, e.serve(s)))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: %s %s is not an endpoint of this server", ErrUnsupported, r.Method, r.URL.Path))
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(s.opts.QueueWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
	case <-t.C:
		writeError(w, ErrBusy)
		return
	case <-r.Context().Done():
		return
	}
	defer func() { <-s.slots }()
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

// authed serves h to an authenticated caller, whose principal rides in
// the request's context, and writes the request's audit line (kind
// names it; a caller that fails to authenticate gets the login line the
// authenticator writes).
func (s *Server) authed(kind string, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Auth != nil {
			p, _, err := s.opts.Auth.HTTP(r)
			if err != nil {
				writeError(w, err)
				return
			}
			r = r.WithContext(auth.NewContext(r.Context(), p))
		}
		start := time.Now()
		ctx, rec := audit.WithRecord(r.Context())
		code, err := s.answer(w, r.WithContext(ctx), h)
		if s.opts.Audit == nil {
			return
		}
		e := audit.Entry{Event: audit.EventREST, Kind: "rest." + kind, Client: r.RemoteAddr,
			Duration: audit.Since(start), Code: strconv.Itoa(code)}
		if p := auth.FromContext(ctx); p != nil {
			e.Principal, e.Method = p.Name, p.Method
		}
		rec.Fill(&e)
		s.opts.Audit.Write(e, err)
	}
}

// answer answers the request with h and returns the status sent and, on
// failure, the error as the client got it (scrubbed of secrets).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, h handler) (int, error) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
	defer cancel()
	v, err := h(r.WithContext(ctx))
	switch {
	case err != nil:
		code, m := errorResponse(err)
		if code >= 500 {
			s.log.Warn("restcatalog: request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.String("principal", auth.Name(r.Context())), zap.Error(err))
		}
		writeError(w, err)
		return code, errors.New(m.Message)
	case v == nil:
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	default:
		writeJSON(w, http.StatusOK, v)
		return http.StatusOK, nil
	}
}

// decode reads a JSON request body into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest("the request body is over %d bytes", tooBig.Limit)
		}
		return badRequest("read the request body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("the request body holds more than one JSON value")
	}
	return nil
}

// Listener is the server on its own listener.
type Listener struct {
	srv *http.Server
	ln  net.Listener
	tls bool
}

// Listen serves s on addr (port 0 picks a free one), with TLS when
// tlsConf is set (the Flight listener's configuration: the same
// certificates, reloaded as they change).
func (s *Server) Listen(addr string, tlsConf *tls.Config) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("restcatalog: listen %s: %w", addr, err)
	}
	l := &Listener{srv: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: zap.NewStdLog(s.log)}, ln: ln}
	if tlsConf != nil {
		c := tlsConf.Clone()
		c.NextProtos = []string{"h2", "http/1.1"}
		ln = tls.NewListener(ln, c)
		l.tls = true
	}
	go l.srv.Serve(ln) //nolint:errcheck // ends with Close
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// URL is the catalog's base URI, what clients take as `uri`.
func (l *Listener) URL() string {
	if l.tls {
		return "https://" + l.Addr()
	}
	return "http://" + l.Addr()
}

// Close stops the listener: requests in flight get grace to finish (a
// commit runs to its end), then their connections close.
func (l *Listener) Close(grace time.Duration) error {
	if l == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		return l.srv.Close()
	}
	return nil
}

// ident splits a namespace path segment: levels joined by the unit
// separator (0x1F), as the specification encodes them.
func namespaceOf(seg string) []string {
	return strings.Split(seg, "\x1f")
}
