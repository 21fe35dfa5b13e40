package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors of this package; the interceptors answer each with Unauthenticated.
var (
	// ErrNoCredentials: the call carries no authorization.
	ErrNoCredentials = errors.New("authentication required: log in with a user name and password (basic auth) or send a bearer token")
	// ErrBadPassword: the user is unknown or the password wrong (which
	// of the two is never said).
	ErrBadPassword = errors.New("wrong user name or password")
	// ErrBadToken: a bearer token that does not verify.
	ErrBadToken = errors.New("invalid bearer token")
	// ErrExpired: a bearer token past its expiry.
	ErrExpired = errors.New("bearer token expired; log in again")
)

// Methods a Principal authenticated with.
const (
	MethodPassword = "password"
	MethodToken    = "token"
	MethodJWT      = "jwt"
	MethodCluster  = "cluster"
)

// ClusterName is the principal name of icefloe's own calls between its
// processes.
const ClusterName = "icefloe-cluster"

// Principal is who a call is authenticated as.
type Principal struct {
	// Name is the user name, or the JWT's principal claim.
	Name string
	// Roles are the roles the principal's grants come from.
	Roles []string
	// Attributes are the principal's attributes (a user's from its config
	// entry, an external JWT's from the claims JWKSOptions.AttributeClaims
	// names), which row filters and column masks read through
	// current_user_attribute('name').
	Attributes map[string]string
	// Method is how the principal authenticated (MethodPassword, …).
	Method string
	// Expires is when the bearer token it presented expires (zero for a
	// password); LoggedIn when its session began (the password login its
	// icefloe token descends from).
	Expires, LoggedIn time.Time
}

// Cluster tells whether the principal is icefloe itself.
func (p *Principal) Cluster() bool { return p != nil && p.Method == MethodCluster }

// HasRole tells whether the principal has the role.
func (p *Principal) HasRole(role string) bool { return p != nil && slices.Contains(p.Roles, role) }

// String names the principal and its roles.
func (p *Principal) String() string {
	if p == nil {
		return "anonymous"
	}
	return fmt.Sprintf("%s (%s; roles %s)", p.Name, p.Method, strings.Join(p.Roles, ","))
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of a call, or nil when the call was
// not authenticated (authentication is off).
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// Name returns the principal's name, or "" for none.
func Name(ctx context.Context) string {
	if p := FromContext(ctx); p != nil {
		return p.Name
	}
	return ""
}
