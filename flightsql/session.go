package flightsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// Session option names a client may set.
const (
	OptionCatalog = "catalog"
	OptionSchema  = "schema"
	// OptionWAPBranch names the branch that takes the session's writes and
	// reads of tables with 'write.wap.enabled' = 'true' (Spark's
	// spark.wap.branch); see planner.Session.WAPBranch.
	OptionWAPBranch = "icefloe.wap_branch"
)

// maxSessionOptionBytes bounds the encoded value of one session option:
// catalog and schema names, a branch name, a duration. A coordinator
// keeps the sessions changed on it (sessionrepair.go), so a value a
// client chooses must not be what sizes its memory.
const maxSessionOptionBytes = 1024

// clientOptions are the session options a client may set.
var clientOptions = map[string]bool{OptionCatalog: true, OptionSchema: true, OptionSingleEndpoint: true,
	OptionWAPBranch: true, OptionStatementTimeout: true, OptionResultCache: true}

// checkOptionSize refuses a value over maxSessionOptionBytes, naming
// the option and the limit.
func checkOptionSize(name string, v *flight.SessionOptionValue) error {
	if n := proto.Size(v); n > maxSessionOptionBytes {
		return fmt.Errorf("%w: %s is %d bytes, at most %d bytes are allowed", ErrSessionOption, name, n, maxSessionOptionBytes)
	}
	return nil
}

// cookieOptionsValid tells whether a session decoded from a client's
// cookie holds only options icefloe sets, each within its size: a cookie
// is the client's to write, and anything else starts a fresh session.
func cookieOptionsValid(opts map[string]*flight.SessionOptionValue) bool {
	for name, v := range opts {
		if !clientOptions[name] && name != optSessionID && name != optSessionGen || checkOptionSize(name, v) != nil {
			return false
		}
	}
	return true
}

// flightMethodPrefix selects the calls the session middleware applies to.
const flightMethodPrefix = "/arrow.flight.protocol.FlightService/"

// sessionMiddleware keeps session options in arrow-go's stateless session
// cookie, so any coordinator can serve any call of a session. The options
// hold nothing secret (a catalog and a schema name the client chose), and
// every name is checked again when a statement uses it. A call whose
// cookie is older than the session is served with the newer state
// (sessionrepair.go).
type sessionMiddleware struct {
	mw     flight.ServerMiddleware
	recent *recentSessions
}

func newSessionMiddleware() *sessionMiddleware {
	recent := newRecentSessions()
	mgr := sessionManager{stateless: session.NewStatelessServerSessionManager(), recent: recent}
	return &sessionMiddleware{mw: flight.CreateServerMiddleware(session.NewServerSessionMiddleware(mgr)), recent: recent}
}

func (m *sessionMiddleware) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, flightMethodPrefix) {
		return handler(ctx, req)
	}
	return m.mw.Unary(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		before := optionsOf(ctx)
		resp, err := handler(ctx, req)
		m.recent.record(ctx, before)
		return resp, err
	})
}

func (m *sessionMiddleware) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !strings.HasPrefix(info.FullMethod, flightMethodPrefix) {
		return handler(srv, ss)
	}
	return m.mw.Stream(srv, ss, info, func(srv any, ss grpc.ServerStream) error {
		before := optionsOf(ss.Context())
		err := handler(srv, ss)
		m.recent.record(ss.Context(), before)
		return err
	})
}

// sessionManager decodes the session from the call's cookie, served with
// the newer state this coordinator knows of (sessionrepair.go); a cookie
// it cannot decode starts a fresh session, where arrow-go's middleware
// would panic and take the process down. A fresh session has its id.
type sessionManager struct {
	stateless session.ServerSessionManager
	recent    *recentSessions
}

func (m sessionManager) CreateSession(context.Context) (session.ServerSession, error) {
	return newSession(), nil
}

func (m sessionManager) GetSession(ctx context.Context) (session.ServerSession, error) {
	if s, err := session.GetSessionFromContext(ctx); err == nil {
		return s, nil // the call's own, as it ends
	}
	s, err := m.stateless.GetSession(ctx)
	if err != nil || !cookieOptionsValid(s.GetSessionOptions()) {
		return nil, session.ErrNoSession
	}
	s, closed := m.recent.repair(ctx, s)
	if closed {
		return nil, session.ErrNoSession
	}
	return s, nil
}

func (m sessionManager) CloseSession(s session.ServerSession) error {
	return m.stateless.CloseSession(s)
}

// sessionOf returns the session defaults of the call: the session's
// options over the server's defaults.
func (s *Server) sessionOf(ctx context.Context) planner.Session {
	out := planner.Session{Catalog: s.opts.DefaultCatalog, Schema: s.opts.DefaultSchema}
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil || ss.Closed() {
		return out
	}
	if v, ok := stringOption(ss.GetSessionOption(OptionCatalog)); ok {
		out.Catalog = v
	}
	if v, ok := stringOption(ss.GetSessionOption(OptionSchema)); ok {
		out.Schema = v
	}
	if v, ok := stringOption(ss.GetSessionOption(OptionWAPBranch)); ok {
		out.WAPBranch = v
	}
	return out
}

func stringOption(v *flight.SessionOptionValue) (string, bool) {
	if sv, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue); ok {
		return sv.StringValue, true
	}
	return "", false
}

// SetSessionOptions sets catalog and schema. A value with nothing set
// resets the option to the server default. Problems are reported per
// option in the result, as the protocol asks, not as a failed call: an
// unknown name is INVALID_NAME, a value that is not a string or names a
// catalog that is not mounted is INVALID_VALUE. Valid options are set even
// when others fail. A value over maxSessionOptionBytes fails the call
// (InvalidArgument, naming the option and the limit) and sets nothing.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, ToStatus(ErrNoSession)
	}
	for name, v := range req.GetSessionOptions() {
		if err := checkOptionSize(name, v); err != nil {
			return nil, ToStatus(err)
		}
	}
	res := &flight.SetSessionOptionsResult{}
	fail := func(name string, v pb.SetSessionOptionsResult_ErrorValue) {
		if res.Errors == nil {
			res.Errors = map[string]*flight.SetSessionOptionsResultError{}
		}
		res.Errors[name] = &flight.SetSessionOptionsResultError{Value: v}
	}
	names := make([]string, 0, len(req.GetSessionOptions()))
	for name := range req.GetSessionOptions() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := req.GetSessionOptions()[name]
		if !clientOptions[name] {
			fail(name, flight.SetSessionOptionsResultErrorInvalidName)
			continue
		}
		if v.GetOptionValue() == nil {
			ss.EraseSessionOption(name)
			continue
		}
		if name == OptionSingleEndpoint {
			if !validSingleEndpointValue(v) {
				fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
			ss.SetSessionOption(name, v)
			continue
		}
		if name == OptionResultCache {
			if _, ok := resultCacheValue(v); !ok {
				fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
			ss.SetSessionOption(name, v)
			continue
		}
		if name == OptionStatementTimeout {
			if _, ok := s.timeoutOption(v); !ok {
				fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
			ss.SetSessionOption(name, v)
			continue
		}
		str, ok := stringOption(v)
		if !ok || str == "" {
			fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
			continue
		}
		if name == OptionCatalog {
			if _, err := s.opts.Mounts.Get(str); err != nil || !s.opts.Policy.CanSee(ctx, authz.Object{str}) {
				fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
		}
		ss.SetSessionOption(name, v)
	}
	return res, nil
}

// GetSessionOptions returns the catalog and schema in effect, defaults
// included.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	if _, err := session.GetSessionFromContext(ctx); err != nil {
		return nil, ToStatus(ErrNoSession)
	}
	cur := s.sessionOf(ctx)
	vals := map[string]any{OptionCatalog: cur.Catalog, OptionSchema: cur.Schema}
	if cur.WAPBranch != "" {
		vals[OptionWAPBranch] = cur.WAPBranch
	}
	if d := s.statementTimeout(ctx); d > 0 {
		vals[OptionStatementTimeout] = d.String()
	}
	if s.opts.ResultCache != nil {
		vals[OptionResultCache] = !resultCacheOff(ctx)
	}
	opts, err := flight.NewSessionOptionValues(vals)
	if err != nil {
		return nil, ToStatus(err)
	}
	return &flight.GetSessionOptionsResult{SessionOptions: opts}, nil
}

// CloseSession ends the session; the client's cookie is expired and its
// next call starts from the defaults.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, ToStatus(ErrNoSession)
	}
	if err := ss.Close(); err != nil {
		return nil, ToStatus(errors.Join(errors.New("flightsql: close session"), err))
	}
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

// execute runs an update: a statement the session runs itself (USE sets
// the session's catalog and schema, in its cookie, like
// SetSessionOptions); anything else goes to the planner.
func (s *Server) execute(ctx context.Context, sess planner.Session, st *parse.Statement, args ...any) (int64, error) {
	if st.Info().Runner != parse.RunSession {
		return s.opts.Backend.Exec(ctx, sess, st, args...)
	}
	if set, ok := st.Body.(*parse.Set); ok {
		return 0, s.setResultCache(ctx, set)
	}
	next, err := s.opts.Backend.Use(ctx, sess, st)
	if err != nil {
		return 0, err
	}
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return 0, ErrNoSession
	}
	opts, err := flight.NewSessionOptionValues(map[string]any{OptionCatalog: next.Catalog, OptionSchema: next.Schema})
	if err != nil {
		return 0, err
	}
	for name, v := range opts {
		if err := checkOptionSize(name, v); err != nil {
			return 0, err
		}
	}
	for name, v := range opts {
		ss.SetSessionOption(name, v)
	}
	sendCookie(ctx, ss)
	return 0, nil
}

// sendCookie sends the session's new cookie in the header. The
// middleware sends it in the trailer, which a client of a stream (DoPut)
// may never read: this sends it while the header has not gone yet.
func sendCookie(ctx context.Context, ss session.ServerSession) {
	if c, err := session.CreateCookieForSession(ss); err == nil {
		_ = grpc.SetHeader(ctx, metadata.Pairs("Set-Cookie", c.String()))
	}
}
