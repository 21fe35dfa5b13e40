package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
)

// sqlClient is one connection to a coordinator plus the worker connections
// its endpoints lead to.
type sqlClient struct {
	alloc   memory.Allocator
	cl      *flightsql.Client
	cookies flight.CookieMiddleware
	auth    *bearer
	// workers are the clients of the locations endpoints lead to.
	workers *flightclient.Pool
	// progress counts the running statement's endpoints (nil: none shown).
	progress *progress
}

func dialSQL(ctx context.Context, alloc memory.Allocator, o sqlFlags) (*sqlClient, error) {
	tlsCfg, err := clientTLS(o.tlsCA)
	if err != nil {
		return nil, err
	}
	target, useTLS, err := parseAddr(o.addr)
	if err != nil {
		return nil, err
	}
	auth := &bearer{}
	if o.token != "" {
		auth.set(o.token)
	}
	opts := flightclient.Options{TLS: tlsCfg, MaxRecvBytes: maxRecvBytes, Authorization: auth.authorization}
	// The coordinator keeps session options under a cookie.
	cookies := flight.NewCookieMiddleware()
	coordOpts := opts
	coordOpts.Middleware = []flight.ClientMiddleware{flight.CreateClientMiddleware(cookies)}
	fc, err := flightclient.DialTarget(target, useTLS, coordOpts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.addr, err)
	}
	cl := &flightsql.Client{Client: fc, Alloc: alloc}
	return &sqlClient{
		alloc:   alloc,
		cl:      cl,
		cookies: cookies,
		auth:    auth,
		workers: flightclient.NewPool(opts, 0),
	}, nil
}

func (c *sqlClient) close() {
	_ = c.workers.Close()
	_ = c.cl.Close()
}

// parseAddr turns --addr into a gRPC target and whether it uses TLS:
// host:port is plaintext, a URL names its scheme.
func parseAddr(addr string) (target string, useTLS bool, err error) {
	if !strings.Contains(addr, "://") {
		return withDefaultPort(addr), false, nil
	}
	target, useTLS, err = flightclient.Parse(addr)
	if err != nil {
		return "", false, fmt.Errorf("bad --addr: %w", err)
	}
	return withDefaultPort(target), useTLS, nil
}

// clientTLS is the TLS configuration of grpc+tls servers: the system's
// roots, or the CAs of --tls-ca.
func clientTLS(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// setSession sets the catalog and schema session options.
func (c *sqlClient) setSession(ctx context.Context, o sqlFlags) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	opts := map[string]any{}
	if o.catalog != "" {
		opts["catalog"] = o.catalog
	}
	if o.schema != "" {
		opts["schema"] = o.schema
	}
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		return err
	}
	var header, trailer metadata.MD
	res, err := c.cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: vals},
		grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		return fmt.Errorf("set session options: %w", rpcErr(err))
	}
	// The cookie middleware can miss the cookie of a streaming call whose
	// context ends as it completes (arrow-go reads headers only when it wins
	// that race), so hand it the session cookie here too.
	if h, ok := c.cookies.(flight.ClientHeadersMiddleware); ok {
		h.HeadersReceived(ctx, metadata.Join(header, trailer))
	}
	if errs := res.GetErrors(); len(errs) > 0 {
		names := make([]string, 0, len(errs))
		for name := range errs {
			names = append(names, name)
		}
		sort.Strings(names)
		msgs := make([]string, len(names))
		for i, name := range names {
			msgs[i] = fmt.Sprintf("%s=%v: %s", name, opts[name], errs[name].GetValue())
		}
		return fmt.Errorf("server rejected session options: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// closeSession ends the session, best effort.
func (c *sqlClient) closeSession(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	_, _ = c.cl.CloseSession(ctx, &flight.CloseSessionRequest{})
}

// runStatement runs a job (a statement: c.statement) within timeout (0:
// none).
func (c *sqlClient) runStatement(ctx context.Context, timeout time.Duration, run job, w resultWriter) error {
	if timeout <= 0 {
		return run(ctx, w)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := run(ctx, w)
	if dl, _ := ctx.Deadline(); err != nil && !time.Now().Before(dl) {
		// Whatever failed first (a server noticing the deadline resets its
		// stream), the cause is the time limit.
		return &statusError{st: status.Newf(codes.DeadlineExceeded, "statement exceeded --timeout %s", timeout)}
	}
	return err
}

// execute prepares stmt and runs it as a query or, when the server marks it
// an update or its dataset schema has no columns, as an update.
func (c *sqlClient) execute(ctx context.Context, stmt string, w resultWriter) error {
	prep, err := c.cl.Prepare(ctx, stmt)
	if err != nil {
		return rpcErr(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = prep.Close(cctx)
	}()

	update, ok := prep.IsUpdate()
	if !ok {
		ds := prep.DatasetSchema()
		update = ds == nil || ds.NumFields() == 0
	}
	if polled, err := c.executePolled(ctx, prep, update, w); polled || err != nil {
		return err
	}
	// A server without incremental execution (poll.go).
	if update {
		n, err := prep.ExecuteUpdate(ctx)
		if err != nil {
			return rpcErr(err)
		}
		return w.affected(n)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		return rpcErr(err)
	}
	return c.result(ctx, prep, info, w)
}

// result reads a query's FlightInfo: its schema, then its endpoints.
func (c *sqlClient) result(ctx context.Context, prep *flightsql.PreparedStatement, info *flight.FlightInfo, w resultWriter) (err error) {
	schema := prep.DatasetSchema()
	if len(info.GetSchema()) > 0 {
		if schema, err = flight.DeserializeSchema(info.GetSchema(), c.alloc); err != nil {
			return fmt.Errorf("read result schema: %w", err)
		}
	}
	if schema == nil {
		return errors.New("server sent no result schema")
	}
	return c.fetch(ctx, info.GetEndpoint(), schema, w)
}

// fetch pulls all endpoints in parallel and writes their batches in endpoint
// order. The first error cancels every stream.
func (c *sqlClient) fetch(ctx context.Context, eps []*flight.FlightEndpoint, schema *arrow.Schema, w resultWriter) error {
	if err := w.begin(schema); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}

	c.progress.endpoints(len(eps))
	chs := make([]chan arrow.RecordBatch, len(eps))
	for i, ep := range eps {
		chs[i] = make(chan arrow.RecordBatch, endpointQueue)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.pull(ctx, i, ep, schema, chs[i]); err != nil {
				fail(err)
			}
			c.progress.endpointDone()
			close(chs[i])
		}()
	}

	// Drain every channel even after a failure so producers never block.
	for _, ch := range chs {
		for rec := range ch {
			if ctx.Err() == nil {
				if err := w.write(rec); err != nil {
					fail(err)
				}
			}
			rec.Release()
		}
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.end()
}

// pull streams one endpoint into out (the receiver releases the batches).
// It tries the endpoint's locations in order, moving to the next one only
// while no row has arrived; an endpoint without locations (or with the
// reuse-connection location) is read from the coordinator.
func (c *sqlClient) pull(ctx context.Context, idx int, ep *flight.FlightEndpoint, schema *arrow.Schema, out chan<- arrow.RecordBatch) error {
	if ep.GetTicket() == nil {
		return fmt.Errorf("endpoint %d: no ticket", idx)
	}
	var locs, reuse []string
	for _, l := range ep.GetLocation() {
		if l.GetUri() == flight.LocationReuseConnection {
			reuse = []string{""}
			continue
		}
		locs = append(locs, l.GetUri())
	}
	locs = append(locs, reuse...) // the coordinator only after the others
	if len(locs) == 0 {
		locs = []string{""}
	}
	err := c.workers.Pull(ctx, locs, ep.GetTicket().GetTicket(), flightclient.PullOptions{
		Allocator: c.alloc,
		Client: func(loc string) (flight.Client, bool) {
			return c.cl.Client, loc == ""
		},
		CheckSchema: func(got *arrow.Schema) error {
			if !sameSchema(schema, got) {
				return fmt.Errorf("%w: result has %s, stream has %s", errSchemaMismatch, schemaText(schema), schemaText(got))
			}
			return nil
		},
	}, flightclient.SendTo(ctx, out, flightclient.Batch))
	var pe *flightclient.PullError
	if !errors.As(err, &pe) {
		return err
	}
	var b strings.Builder
	for i, a := range pe.Attempts {
		name := a.Location
		if name == "" {
			name = "coordinator"
		}
		if i == len(pe.Attempts)-1 {
			// The last attempt decided: its error is the one wrapped.
			return fmt.Errorf("endpoint %d: %s%s: %w", idx, b.String(), name, rpcErr(a.Err))
		}
		fmt.Fprintf(&b, "%s: %v; ", name, rpcErr(a.Err))
	}
	return fmt.Errorf("endpoint %d: %w", idx, err)
}

// sameSchema compares names, types and nullability, ignoring metadata, as
// the ADBC and JDBC drivers do.
func sameSchema(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func schemaText(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		null := ""
		if !f.Nullable {
			null = " not null"
		}
		parts[i] = fmt.Sprintf("%s %s%s", f.Name, f.Type, null)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// statusError shows a gRPC status as its message alone.
type statusError struct{ st *status.Status }

func (e *statusError) Error() string {
	if msg := e.st.Message(); msg != "" {
		return msg
	}
	return e.st.Code().String()
}

func (e *statusError) GRPCStatus() *status.Status { return e.st }

// rpcErr replaces an error that carries a gRPC status (possibly wrapped, e.g.
// by the IPC reader) with one whose text is the status message.
func rpcErr(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if _, ok := se.(*statusError); ok {
		return err
	}
	return &statusError{st: se.GRPCStatus()}
}
