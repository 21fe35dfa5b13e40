package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// healthPrefix is the standard health service, which stays open: probes
// and load balancers call it without credentials, and it tells nothing
// but SERVING or not.
const healthPrefix = "/grpc.health.v1.Health/"

// handshakeSuffix ends the full method name of Flight's Handshake.
const handshakeSuffix = "/Handshake"

// ServerOptions returns the interceptors that authenticate every call of
// a gRPC server, unary and streaming. Put them before any other
// interceptor that needs the caller.
func (a *Authenticator) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.unary),
		grpc.ChainStreamInterceptor(a.stream),
	}
}

func (a *Authenticator) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, healthPrefix) {
		return handler(ctx, req)
	}
	p, reply, err := a.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if reply != "" {
		if err := grpc.SetHeader(ctx, metadata.Pairs("authorization", reply)); err != nil {
			return nil, status.Error(codes.Internal, "auth: send token")
		}
	}
	return handler(NewContext(ctx, p), req)
}

func (a *Authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, healthPrefix) {
		return handler(srv, ss)
	}
	p, reply, err := a.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if reply != "" {
		if err := ss.SetHeader(metadata.Pairs("authorization", reply)); err != nil {
			return status.Error(codes.Internal, "auth: send token")
		}
	}
	return handler(srv, &authStream{ServerStream: ss, ctx: NewContext(ss.Context(), p)})
}

type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *authStream) Context() context.Context { return s.ctx }

// authenticate checks the call's authorization header. reply is the
// header to answer with: a fresh bearer token after a password login or
// when the caller's token is past half its lifetime (Refresh), or the
// caller's own token for a Handshake (the JDBC driver's token= mode
// handshakes with it and expects one back).
func (a *Authenticator) authenticate(ctx context.Context, method string) (p *Principal, reply string, err error) {
	scheme, cred := credentials(ctx)
	p, reply, err = a.check(ctx, LoginEvent{Client: ClientAddr(ctx), RPC: method}, scheme, cred)
	if err != nil {
		err = status.Error(codes.Unauthenticated, err.Error())
	}
	return p, reply, err
}

// HTTP authenticates an HTTP request (the status page) as a Flight call
// is: its Authorization header, Basic or Bearer, with the same users,
// tokens and login reports. It returns the principal and, as for a
// Flight call, the Authorization value to answer with ("" for none).
func (a *Authenticator) HTTP(r *http.Request) (*Principal, string, error) {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return a.check(r.Context(), LoginEvent{Client: r.RemoteAddr, RPC: "HTTP " + r.Method + " " + r.URL.Path}, scheme, strings.TrimLeft(cred, " "))
}

// Handler returns h behind a's authentication, as the Flight service's
// calls are: a request that does not authenticate is answered 401,
// asking for Basic credentials; the principal rides in the request's
// context. A nil a serves everyone (authentication is off).
func (a *Authenticator) Handler(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, err := a.HTTP(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="icefloe", charset="UTF-8"`)
			http.Error(w, "unauthenticated: "+err.Error(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(NewContext(r.Context(), p)))
	})
}

// check verifies a scheme's credentials and reports the login.
func (a *Authenticator) check(ctx context.Context, ev LoginEvent, scheme, cred string) (p *Principal, reply string, err error) {
	method := ev.RPC
	defer func() {
		if err != nil || ev.Method == MethodPassword {
			ev.Err = err
			if p != nil {
				ev.User = p.Name
			}
			a.report(ctx, ev)
		}
	}()
	switch {
	case strings.EqualFold(scheme, "Basic"):
		ev.Method = MethodPassword
		user, pass, err := decodeBasic(cred)
		if err != nil {
			return nil, "", err
		}
		ev.User = user
		if p, err = a.Password(user, pass); err != nil {
			return nil, "", err
		}
		tok, _, err := a.Issue(p, 0)
		if err != nil {
			return nil, "", err
		}
		return p, "Bearer " + tok, nil
	case strings.EqualFold(scheme, "Bearer") && cred != "":
		ev.Method = MethodToken
		if p, err = a.Verify(ctx, cred); err != nil {
			return nil, "", err
		}
		if fresh := a.Refresh(p); fresh != "" {
			return p, "Bearer " + fresh, nil
		}
		if strings.HasSuffix(method, handshakeSuffix) {
			reply = "Bearer " + cred
		}
		return p, reply, nil
	case scheme == "":
		return nil, "", ErrNoCredentials
	}
	return nil, "", fmt.Errorf("authorization scheme %q is not supported: use Basic or Bearer", scheme)
}

func (a *Authenticator) report(ctx context.Context, ev LoginEvent) {
	if a.opts.OnLogin != nil {
		a.opts.OnLogin(ctx, ev)
		return
	}
	if ev.Err != nil {
		a.log.Info("auth: authentication failed", zap.String("user", ev.User), zap.String("client", ev.Client),
			zap.String("rpc", ev.RPC), zap.String("error", ev.Err.Error()))
	}
}

// credentials splits the call's authorization header into its scheme and
// credentials.
func credentials(ctx context.Context) (scheme, cred string) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return "", ""
	}
	scheme, cred, _ = strings.Cut(strings.TrimSpace(vals[0]), " ")
	return scheme, strings.TrimLeft(cred, " ")
}

// decodeBasic reads "user:password" in base64, with or without padding
// (ADBC sends none).
func decodeBasic(cred string) (user, pass string, err error) {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(cred, "="))
	if err != nil {
		return "", "", errors.New("basic auth credentials are not base64")
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New("basic auth credentials are not user:password")
	}
	return user, pass, nil
}

// ClientAddr is the network address of a call's caller, "" when unknown.
func ClientAddr(ctx context.Context) string {
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		return pr.Addr.String()
	}
	return ""
}
