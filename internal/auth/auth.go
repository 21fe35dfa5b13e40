package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/wire"
)

// Defaults for Options.
const (
	// DefaultTokenTTL is how long a token issued at login stays valid.
	DefaultTokenTTL = time.Hour
	// ClusterTokenTTL is how long a cluster token stays valid; a fresh one
	// is made when half of it has passed.
	ClusterTokenTTL = 10 * time.Minute
	// Leeway is the clock skew allowed between the processes of a cluster
	// and an external token issuer.
	Leeway = 30 * time.Second
	// MaxSession is how long after a login its tokens are still renewed
	// (Refresh): a session in use lasts at most this long.
	MaxSession = 12 * time.Hour
)

// Issuer is the iss (and aud) claim of the tokens icefloe issues.
const Issuer = "icefloe"

// Key ids in the JOSE header of icefloe's own tokens; any other kid is
// looked up in the external JWKS.
const (
	kidUser    = "icefloe-user-1"
	kidCluster = "icefloe-cluster-1"
)

// User is one user of the config file.
type User struct {
	Name string
	// PasswordHash is a bcrypt hash (icefloe passwd makes one).
	PasswordHash string
	Roles        []string
	// Attributes are the user's attributes (Principal.Attributes).
	Attributes map[string]string
}

// Options configure an Authenticator.
type Options struct {
	// Key is the cluster key; the signing keys of user and cluster tokens
	// are derived from it. Required.
	Key *wire.Key
	// Users may log in with a password.
	Users []User
	// TokenTTL is the lifetime of tokens issued at login; 0 means
	// DefaultTokenTTL.
	TokenTTL time.Duration
	// JWKS, when set, accepts external JWTs its keys sign.
	JWKS *JWKSOptions
	// OnLogin, when set, is told of every password login and of every
	// failed authentication (for the audit log).
	OnLogin func(ctx context.Context, e LoginEvent)
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
}

// LoginEvent is one authentication the audit log records. It never holds
// a password or a token.
type LoginEvent struct {
	// User is the user name given, or the token's principal if known.
	User   string
	Method string
	// Client is the caller's network address.
	Client string
	// Method of the RPC.
	RPC string
	Err error
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Key == nil {
		errs = append(errs, errors.New("auth: Key is required"))
	}
	if o.TokenTTL < 0 {
		errs = append(errs, errors.New("auth: TokenTTL must be >= 0"))
	}
	errs = append(errs, ValidateUsers(o.Users))
	if o.JWKS != nil {
		if err := o.JWKS.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ValidateUsers reports every problem of a user list at once.
func ValidateUsers(users []User) error {
	var errs []error
	seen := map[string]bool{}
	for i, u := range users {
		switch {
		case u.Name == "":
			errs = append(errs, fmt.Errorf("auth: users[%d]: empty name", i))
		case strings.Contains(u.Name, ":"):
			errs = append(errs, fmt.Errorf("auth: user %q: a name may not contain ':' (basic auth splits there)", u.Name))
		case u.Name == ClusterName:
			errs = append(errs, fmt.Errorf("auth: user %q: the name is icefloe's own", u.Name))
		case seen[u.Name]:
			errs = append(errs, fmt.Errorf("auth: user %q listed twice", u.Name))
		}
		seen[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			errs = append(errs, fmt.Errorf("auth: user %q: password_hash is not a bcrypt hash (make one with icefloe passwd)", u.Name))
		}
	}
	return errors.Join(errs...)
}

// Authenticator checks passwords and tokens and issues tokens. It is safe
// for concurrent use.
type Authenticator struct {
	opts       Options
	users      map[string]User
	userKey    []byte
	clusterKey []byte
	entryKey   []byte // keys the user entry versions tokens carry
	jwks       *jwks
	log        *zap.Logger

	mu      sync.Mutex
	cluster string
	renewAt time.Time
}

// dummyHash is compared against when the user is unknown, so a login
// takes as long whether or not the user exists.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("icefloe"), bcrypt.DefaultCost)
	return h
})

// New returns an Authenticator for o.
func New(o Options) (*Authenticator, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	a := &Authenticator{opts: o, users: map[string]User{}, log: o.Logger}
	for _, u := range o.Users {
		a.users[u.Name] = u
	}
	var err error
	if a.userKey, err = o.Key.Derive("user token signing", 32); err != nil {
		return nil, err
	}
	if a.clusterKey, err = o.Key.Derive("cluster token signing", 32); err != nil {
		return nil, err
	}
	if a.entryKey, err = o.Key.Derive("user entry version", 32); err != nil {
		return nil, err
	}
	if o.JWKS != nil {
		if a.jwks, err = newJWKS(*o.JWKS, o.Logger); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// String describes the authenticator without any secret.
func (a *Authenticator) String() string {
	return fmt.Sprintf("auth.Authenticator{users: %d, token ttl: %s, jwks: %t, keys: redacted}", len(a.users), a.opts.TokenTTL, a.jwks != nil)
}

// Password checks a user's password.
func (a *Authenticator) Password(user, password string) (*Principal, error) {
	u, ok := a.users[user]
	hash := []byte(u.PasswordHash)
	if !ok {
		hash = dummyHash()
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil || !ok {
		return nil, ErrBadPassword
	}
	return &Principal{Name: u.Name, Roles: append([]string(nil), u.Roles...), Attributes: maps.Clone(u.Attributes), Method: MethodPassword}, nil
}

// tokenClaims are the claims of icefloe's tokens.
type tokenClaims struct {
	jwt.Claims
	Roles []string `json:"roles,omitempty"`
	// AuthTime is when the session's password login was (OpenID's
	// auth_time).
	AuthTime *jwt.NumericDate `json:"auth_time,omitempty"`
	// Entry is the version of the user's config entry the token was
	// issued for (entryVersion): a token is good only while the entry
	// of the process verifying it has the same version.
	Entry string `json:"entry,omitempty"`
	// External marks a token issued on behalf of the principal of an
	// external JWT (Forward): it has no config entry, its roles are the
	// JWT's, and it never outlives the JWT.
	External bool `json:"ext,omitempty"`
	// Attrs are an external principal's attributes (from its JWT's
	// claims); a user's come from its config entry.
	Attrs map[string]string `json:"attrs,omitempty"`
}

// entryVersion is the version of a user's config entry that the user's
// tokens carry: a MAC, under a key derived from the cluster key, of its
// name, its roles (as a set) and its password hash. Any change to the
// entry — its removal, a role added or taken, a new password — changes
// it, and every process that has the changed config refuses the tokens
// issued before, with no state shared between them. The MAC keeps the
// password hash out of the token, which its holder can read.
func (a *Authenticator) entryVersion(u User) string {
	roles := slices.Clone(u.Roles)
	slices.Sort(roles)
	roles = slices.Compact(roles)
	// Each part length-prefixed, the roles counted: no two entries
	// write the same bytes.
	b := binary.AppendUvarint(nil, uint64(len(roles)))
	for _, part := range append([]string{u.Name, u.PasswordHash}, roles...) {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	m := hmac.New(sha256.New, a.entryKey)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

func (a *Authenticator) sign(key []byte, kid string, c tokenClaims) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return "", fmt.Errorf("auth: signer: %w", err)
	}
	tok, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return tok, nil
}

// Issue returns a bearer token for p valid for ttl (0 means the
// configured TokenTTL) and its expiry. A user's token carries the roles
// and the version of the user's entry in this Authenticator's config; a
// token for the principal of an external JWT carries the JWT's roles and
// expires with it at the latest.
func (a *Authenticator) Issue(p *Principal, ttl time.Duration) (string, time.Time, error) {
	if p == nil || p.Name == "" || p.Cluster() {
		return "", time.Time{}, errors.New("auth: no principal to issue a token for")
	}
	if ttl == 0 {
		ttl = a.opts.TokenTTL
	}
	now := time.Now()
	exp := now.Add(ttl)
	loggedIn := p.LoggedIn
	if loggedIn.IsZero() {
		loggedIn = now
	}
	c := tokenClaims{
		Claims: jwt.Claims{Issuer: Issuer, Audience: jwt.Audience{Issuer}, Subject: p.Name,
			IssuedAt: jwt.NewNumericDate(now)},
		AuthTime: jwt.NewNumericDate(loggedIn),
	}
	if p.Method == MethodJWT {
		if !p.Expires.IsZero() && p.Expires.Before(exp) {
			exp = p.Expires
		}
		c.Roles, c.External, c.Attrs = p.Roles, true, p.Attributes
	} else {
		u, ok := a.users[p.Name]
		if !ok {
			return "", time.Time{}, fmt.Errorf("auth: no user %q in the config to issue a token for", p.Name)
		}
		c.Roles, c.Entry = u.Roles, a.entryVersion(u)
	}
	c.Expiry = jwt.NewNumericDate(exp)
	tok, err := a.sign(a.userKey, kidUser, c)
	return tok, exp, err
}

// ClusterToken returns a bearer token that authenticates icefloe's own
// calls between its processes; it is renewed before it expires.
func (a *Authenticator) ClusterToken() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.cluster != "" && now.Before(a.renewAt) {
		return a.cluster, nil
	}
	tok, err := a.sign(a.clusterKey, kidCluster, tokenClaims{Claims: jwt.Claims{
		Issuer: Issuer, Audience: jwt.Audience{ClusterName}, Subject: ClusterName,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ClusterTokenTTL))}})
	if err != nil {
		return "", err
	}
	a.cluster, a.renewAt = tok, now.Add(ClusterTokenTTL/2)
	return tok, nil
}

// ClusterAuthorization is the authorization header value of icefloe's own
// calls (a flightclient.Options.Authorization).
func (a *Authenticator) ClusterAuthorization(context.Context) (string, error) {
	tok, err := a.ClusterToken()
	if err != nil {
		return "", err
	}
	return "Bearer " + tok, nil
}

// Forward returns the authorization header value of a call made on behalf
// of ctx's principal (the single-endpoint proxy pulling from workers): a
// short-lived token of that principal, which the workers verify locally.
func (a *Authenticator) Forward(ctx context.Context, ttl time.Duration) (string, error) {
	p := FromContext(ctx)
	if p.Cluster() {
		return a.ClusterAuthorization(ctx)
	}
	tok, _, err := a.Issue(p, ttl)
	if err != nil {
		return "", err
	}
	return "Bearer " + tok, nil
}

// Verify checks a bearer token: one icefloe issued (user or cluster), or
// an external JWT the JWKS verifies.
func (a *Authenticator) Verify(ctx context.Context, token string) (*Principal, error) {
	tok, err := jwt.ParseSigned(token, acceptedAlgorithms)
	if err != nil || len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: not a signed JWT", ErrBadToken)
	}
	h := tok.Headers[0]
	switch h.KeyID {
	case kidUser, kidCluster:
		return a.verifyOwn(tok, h)
	}
	if a.jwks == nil {
		return nil, fmt.Errorf("%w: not issued by this cluster and no JWKS is configured", ErrBadToken)
	}
	return a.jwks.verify(ctx, tok, h)
}

// acceptedAlgorithms are the signatures a token may carry: HMAC only for
// icefloe's own (checked again below), asymmetric ones for external JWTs.
var acceptedAlgorithms = []jose.SignatureAlgorithm{
	jose.HS256,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

func (a *Authenticator) verifyOwn(tok *jwt.JSONWebToken, h jose.Header) (*Principal, error) {
	if h.Algorithm != string(jose.HS256) {
		return nil, fmt.Errorf("%w: unexpected algorithm", ErrBadToken)
	}
	key, aud, method := a.userKey, Issuer, MethodToken
	if h.KeyID == kidCluster {
		key, aud, method = a.clusterKey, ClusterName, MethodCluster
	}
	var c tokenClaims
	if err := tok.Claims(key, &c); err != nil {
		return nil, fmt.Errorf("%w: bad signature", ErrBadToken)
	}
	if err := validate(c.Claims, jwt.Expected{Issuer: Issuer, AnyAudience: jwt.Audience{aud}}); err != nil {
		return nil, err
	}
	if c.Subject == "" || (method == MethodCluster) != (c.Subject == ClusterName) {
		return nil, fmt.Errorf("%w: bad subject", ErrBadToken)
	}
	p := &Principal{Name: c.Subject, Roles: c.Roles, Method: method, Expires: c.Expiry.Time()}
	if c.AuthTime != nil {
		p.LoggedIn = c.AuthTime.Time()
	}
	switch {
	case method == MethodCluster:
	case c.External:
		p.Method = MethodJWT
		p.Attributes = c.Attrs
	default:
		u, ok := a.users[c.Subject]
		if !ok {
			return nil, fmt.Errorf("%w: user %s is no longer configured; log in again", ErrBadToken, c.Subject)
		}
		if !hmac.Equal([]byte(c.Entry), []byte(a.entryVersion(u))) {
			return nil, fmt.Errorf("%w: the roles or password of user %s changed since it was issued; log in again", ErrBadToken, c.Subject)
		}
		p.Roles = slices.Clone(u.Roles)
		p.Attributes = maps.Clone(u.Attributes)
	}
	return p, nil
}

// Refresh returns a fresh token for a principal whose icefloe token has
// less than half the token lifetime left, so a session in use does not
// expire before MaxSession after its login: clients take the
// authorization header of any answer as their new token (ADBC, the JDBC
// driver). "" when no refresh is due.
func (a *Authenticator) Refresh(p *Principal) string {
	if p == nil || p.Method != MethodToken || p.Expires.IsZero() || time.Until(p.Expires) > a.opts.TokenTTL/2 ||
		p.LoggedIn.IsZero() || time.Since(p.LoggedIn) > MaxSession {
		return ""
	}
	tok, _, err := a.Issue(p, 0)
	if err != nil {
		return ""
	}
	return tok
}

// validate checks the standard claims; a token must expire.
func validate(c jwt.Claims, want jwt.Expected) error {
	if c.Expiry == nil {
		return fmt.Errorf("%w: it has no expiry (exp)", ErrBadToken)
	}
	err := c.ValidateWithLeeway(want.WithTime(time.Now()), Leeway)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return fmt.Errorf("%w: issuer %q is not accepted", ErrBadToken, c.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return fmt.Errorf("%w: audience %q is not accepted", ErrBadToken, strings.Join(c.Audience, ","))
	}
	return fmt.Errorf("%w: %v", ErrBadToken, err)
}
