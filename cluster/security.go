package cluster

import (
	"context"
	"crypto/tls"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/statement"
)

// Security is how a role's listener and its clients are secured. The zero
// value is plaintext without authentication (the embedded demo default,
// which the binary binds to loopback).
type Security struct {
	// Auth, when set, authenticates every call of the listener, and the
	// role's own calls to other processes of the cluster carry its
	// cluster token.
	Auth *auth.Authenticator
	// Policy decides privileges on the coordinator; with Auth set and no
	// Policy, only the admin role may do anything.
	Policy *authz.Policy
	// TLS, when set, is the listener's TLS configuration; the role's
	// location is then grpc+tls://.
	TLS *tls.Config
	// ClientTLS is what the role verifies the other processes' servers
	// against; nil means the system's roots.
	ClientTLS *tls.Config
	// Audit, when set, gets the role's audit lines; the caller closes it.
	Audit *audit.Log
}

// policy is the policy in force: nil when authentication is off.
func (s Security) policy() *authz.Policy {
	if s.Auth == nil {
		return nil
	}
	if s.Policy == nil {
		p, _ := authz.NewPolicy(nil)
		return p
	}
	return s.Policy
}

// serverOptions are the listener's TLS and authentication; extra
// interceptors run after authentication.
func (s Security) serverOptions(extra ...grpc.ServerOption) []grpc.ServerOption {
	// Tracing's interceptors run first, so they see the call's final
	// error.
	opts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(DefaultMaxMessageSize), flightclient.ServerKeepalive()}, tracing.ServerOptions()...)
	if s.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.TLS)))
	}
	if s.Auth != nil {
		opts = append(opts, s.Auth.ServerOptions()...)
	}
	return append(opts, extra...)
}

// Client is how the role dials the others: their CA, its cluster token.
func (s Security) Client() flightclient.Options {
	o := flightclient.Options{TLS: s.ClientTLS}
	if s.Auth != nil {
		o.Authorization = s.Auth.ClusterAuthorization
	}
	return o
}

// Scheme is the scheme of the role's Flight location.
func (s Security) Scheme() string {
	if s.TLS != nil {
		return "grpc+tls://"
	}
	return "grpc://"
}

// guard puts the coordinator's catalogs behind the policy and tells the
// workers of every table dropped through them.
func (s Security) guard(mounts *catalog.Mounts, ex *statement.Executor, log *zap.Logger) {
	g := &authz.Guard{Policy: s.policy(), OnDrop: func(ctx context.Context, ref catalog.TableRef, uuid string) {
		if err := ex.TablesDropped(ctx, uuid); err != nil {
			// The drop stands; tickets still out expire on their own.
			log.Warn("not every worker was told of a dropped table", zap.String("table", ref.String()), zap.Error(err))
		}
	}}
	mounts.SetGuard(g.Wrap)
}
