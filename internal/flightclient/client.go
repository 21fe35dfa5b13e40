package flightclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/icefloe/icefloe/internal/tracing"
)

// Defaults.
const (
	// DefaultMaxRecvBytes bounds one received message: worker batches
	// (64 Ki rows) exceed gRPC's default of 4 MiB.
	DefaultMaxRecvBytes = 1 << 30
	// DefaultPoolSize bounds a Pool's clients, one per location.
	DefaultPoolSize = 64
)

// AuthorizationHeader is the metadata key of the credentials a call carries.
const AuthorizationHeader = "authorization"

// ErrLocation: a Flight location icefloe cannot dial.
var ErrLocation = errors.New("flightclient: invalid location")

// Options say how locations are dialed. The zero value dials plaintext
// locations without credentials and TLS locations against the system's
// roots.
type Options struct {
	// TLS is the client configuration for grpc+tls locations; nil means
	// the system roots and TLS 1.2 or later. It is cloned per client.
	TLS *tls.Config
	// Authorization, when set, gives the authorization header value each
	// call carries ("Bearer …"); "" sends none. A call whose outgoing
	// context already has an authorization header keeps its own.
	Authorization func(ctx context.Context) (string, error)
	// MaxRecvBytes bounds one received message; 0 means
	// DefaultMaxRecvBytes.
	MaxRecvBytes int
	// Middleware is added to every client (e.g. session cookies).
	Middleware []flight.ClientMiddleware
	// Extra gRPC dial options are added after icefloe's own.
	Extra []grpc.DialOption
}

// Parse turns a Flight location (grpc://host:port, grpc+tcp://host:port or
// grpc+tls://host:port) into a gRPC target and whether it uses TLS.
func Parse(loc string) (target string, useTLS bool, err error) {
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return "", false, fmt.Errorf("%w %q: want grpc://host:port or grpc+tls://host:port", ErrLocation, loc)
	}
	switch u.Scheme {
	case "grpc", "grpc+tcp":
		return u.Host, false, nil
	case "grpc+tls":
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("%w %q: scheme must be grpc, grpc+tcp or grpc+tls", ErrLocation, loc)
}

// DialOptions are the gRPC options of a connection to a location that
// uses TLS or not.
func (o Options) DialOptions(useTLS bool) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLS != nil {
			cfg = o.TLS.Clone()
		}
		creds = credentials.NewTLS(cfg)
	}
	max := o.MaxRecvBytes
	if max <= 0 {
		max = DefaultMaxRecvBytes
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max)),
		keepaliveParams(),
		grpc.WithChainUnaryInterceptor(unaryKeepalive),
		grpc.WithChainStreamInterceptor(streamKeepalive),
	}
	if o.Authorization != nil {
		opts = append(opts,
			grpc.WithChainUnaryInterceptor(o.unaryAuth),
			grpc.WithChainStreamInterceptor(o.streamAuth))
	}
	opts = append(opts, tracing.DialOptions()...)
	return append(opts, o.Extra...)
}

// withAuthorization adds the authorization header unless ctx has one.
func (o Options) withAuthorization(ctx context.Context) (context.Context, error) {
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(AuthorizationHeader)) > 0 {
		return ctx, nil
	}
	v, err := o.Authorization(ctx)
	if err != nil || v == "" {
		return ctx, err
	}
	return metadata.AppendToOutgoingContext(ctx, AuthorizationHeader, v), nil
}

func (o Options) unaryAuth(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, err := o.withAuthorization(ctx)
	if err != nil {
		return err
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (o Options) streamAuth(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, err := o.withAuthorization(ctx)
	if err != nil {
		return nil, err
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// Dial returns a Flight client of the location.
func Dial(loc string, o Options) (flight.Client, error) {
	target, useTLS, err := Parse(loc)
	if err != nil {
		return nil, err
	}
	return DialTarget(target, useTLS, o)
}

// DialTarget returns a Flight client of a gRPC target (host:port).
func DialTarget(target string, useTLS bool, o Options) (flight.Client, error) {
	cl, err := flight.NewClientWithMiddleware(target, nil, o.Middleware, o.DialOptions(useTLS)...)
	if err != nil {
		return nil, fmt.Errorf("flightclient: dial %s: %w", target, err)
	}
	return cl, nil
}

// Conn returns a plain gRPC connection to the location (for the health
// service), with extra options after o's.
func Conn(loc string, o Options, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	target, useTLS, err := Parse(loc)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, append(o.DialOptions(useTLS), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("flightclient: dial %s: %w", loc, err)
	}
	return conn, nil
}

// Pool holds one Flight client per location, dialed on first use, at most
// size of them: past that the least recently used one leaves the pool, and
// is closed once no caller holds it. It is safe for concurrent use; Close
// closes every client as its last holder lets go.
type Pool struct {
	opts    Options
	mu      sync.Mutex
	closed  bool
	open    int // clients dialed and not yet closed
	clients *lru.Cache[string, *pooled]
}

// pooled is a client and how many callers hold it. Its fields are guarded
// by the pool's mu (the cache evicts only inside Add and Purge, which run
// under it).
type pooled struct {
	cl      flight.Client
	holds   int
	evicted bool
}

// NewPool returns a pool dialing with o; size <= 0 means DefaultPoolSize.
func NewPool(o Options, size int) *Pool {
	if size <= 0 {
		size = DefaultPoolSize
	}
	p := &Pool{opts: o}
	p.clients, _ = lru.NewWithEvict[string, *pooled](size, func(_ string, e *pooled) {
		e.evicted = true
		if e.holds == 0 {
			p.closeLocked(e)
		}
	})
	return p
}

// closeLocked closes a client that left the pool and is no longer held.
func (p *Pool) closeLocked(e *pooled) {
	_ = e.cl.Close()
	p.open--
}

// Open returns how many clients the pool has dialed and not yet closed:
// those in the pool and those that left it but are still held. It is 0
// after Close once every holder has let go.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

// Options returns the options the pool dials with.
func (p *Pool) Options() Options { return p.opts }

// Hold returns the client of a location and the func that lets go of it:
// call it when done with the client and every stream opened on it. Until
// then the client stays open, even once it has left the pool.
func (p *Pool) Hold(loc string) (flight.Client, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, errors.New("flightclient: pool is closed")
	}
	e, ok := p.clients.Get(loc)
	if !ok {
		cl, err := Dial(loc, p.opts)
		if err != nil {
			return nil, nil, err
		}
		e = &pooled{cl: cl}
		p.open++
		p.clients.Add(loc, e)
	}
	e.holds++
	var once sync.Once
	return e.cl, func() { once.Do(func() { p.release(e) }) }, nil
}

func (p *Pool) release(e *pooled) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.holds--
	if e.evicted && e.holds == 0 {
		p.closeLocked(e)
	}
}

// Close closes every client no caller holds, and each held one when it is
// let go; later Holds fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.clients.Purge()
	return nil
}
