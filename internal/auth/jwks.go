package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"
)

// Defaults for JWKSOptions.
const (
	// DefaultJWKSRefresh is how often a JWKS URL is fetched again.
	DefaultJWKSRefresh = 10 * time.Minute
	// DefaultPrincipalClaim names the principal of an external JWT.
	DefaultPrincipalClaim = "sub"
	// DefaultRolesClaim holds its roles (a list, or a space-separated string).
	DefaultRolesClaim = "roles"
	// jwksRetry is the least time between two fetches for an unknown key id.
	jwksRetry = 30 * time.Second
	// jwksTimeout bounds one fetch of a JWKS URL.
	jwksTimeout = 10 * time.Second
	// maxJWKSBytes bounds a key set read from a file or URL.
	maxJWKSBytes = 1 << 20
)

// JWKSOptions accept external JWTs signed by the keys of a JSON Web Key
// Set, from a file (read again when it changes) or a URL (fetched again
// every Refresh, and at once for an unknown key id).
type JWKSOptions struct {
	File string
	URL  string
	// Issuer and Audience are the iss and aud a token must carry. Required.
	Issuer   string
	Audience string
	// PrincipalClaim names the principal; "" means DefaultPrincipalClaim.
	// A dotted name reads a nested claim.
	PrincipalClaim string
	// RolesClaim holds the roles; "" means DefaultRolesClaim. Dotted
	// names read nested claims (e.g. realm_access.roles).
	RolesClaim string
	// AttributeClaims name the claims (dotted names read nested ones)
	// that become the principal's attributes, each under its name: a
	// string as it is, a number or boolean as JSON writes it.
	AttributeClaims []string
	// DefaultRoles are given to every principal of an external JWT.
	DefaultRoles []string
	// Refresh is how often a URL is fetched again; 0 means
	// DefaultJWKSRefresh.
	Refresh time.Duration
	// HTTPClient fetches a URL; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Validate reports every problem at once.
func (o JWKSOptions) Validate() error {
	var errs []error
	if (o.File == "") == (o.URL == "") {
		errs = append(errs, errors.New("auth: jwt: give exactly one of jwks_file and jwks_url"))
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		switch {
		case err != nil || u.Host == "":
			errs = append(errs, fmt.Errorf("auth: jwt: jwks_url %q is not a URL", RedactURL(o.URL)))
		case u.Scheme == "https":
		case u.Scheme == "http" && isLoopback(u.Hostname()):
		default:
			errs = append(errs, fmt.Errorf("auth: jwt: jwks_url must be https (http only on a loopback address), got %s", u.Scheme))
		}
	}
	if o.Issuer == "" {
		errs = append(errs, errors.New("auth: jwt: issuer is required"))
	}
	if o.Audience == "" {
		errs = append(errs, errors.New("auth: jwt: audience is required"))
	}
	if o.Refresh < 0 {
		errs = append(errs, errors.New("auth: jwt: refresh must be >= 0"))
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RedactURL drops a URL's user info and query, which may hold secrets.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// jwks is a key set kept fresh.
type jwks struct {
	opts JWKSOptions
	log  *zap.Logger

	mu      sync.Mutex
	set     *jose.JSONWebKeySet
	stamp   string    // file: size and modification time of what set holds
	fetched time.Time // when set was last loaded (or tried)
}

func newJWKS(o JWKSOptions, log *zap.Logger) (*jwks, error) {
	if o.PrincipalClaim == "" {
		o.PrincipalClaim = DefaultPrincipalClaim
	}
	if o.RolesClaim == "" {
		o.RolesClaim = DefaultRolesClaim
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultJWKSRefresh
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	k := &jwks{opts: o, log: log}
	if o.File != "" {
		// A missing or broken file is a configuration error at start.
		if err := k.reloadFile(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func parseSet(data []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	return &set, nil
}

// reloadFile reads the file when it changed; k.mu is held or k is new.
func (k *jwks) reloadFile() error {
	fi, err := os.Stat(k.opts.File)
	if err != nil {
		return fmt.Errorf("auth: jwt: jwks_file: %w", err)
	}
	stamp := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	if k.set != nil && stamp == k.stamp {
		return nil
	}
	f, err := os.Open(k.opts.File)
	if err != nil {
		return fmt.Errorf("auth: jwt: jwks_file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJWKSBytes))
	if err != nil {
		return fmt.Errorf("auth: jwt: jwks_file: %w", err)
	}
	set, err := parseSet(data)
	if err != nil {
		return fmt.Errorf("auth: jwt: jwks_file %s: %w", k.opts.File, err)
	}
	k.set, k.stamp = set, stamp
	return nil
}

// fetch reads the URL; k.mu is held.
func (k *jwks) fetch(ctx context.Context) error {
	k.fetched = time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.opts.URL, nil)
	if err != nil {
		return err
	}
	res, err := k.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch JWKS %s: %w", RedactURL(k.opts.URL), err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch JWKS %s: HTTP %s", RedactURL(k.opts.URL), res.Status)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes))
	if err != nil {
		return fmt.Errorf("fetch JWKS %s: %w", RedactURL(k.opts.URL), err)
	}
	set, err := parseSet(data)
	if err != nil {
		return fmt.Errorf("fetch JWKS %s: %w", RedactURL(k.opts.URL), err)
	}
	k.set = set
	return nil
}

// keys returns the keys that may have signed a token with this key id;
// missing says the set should be loaded again to find one.
func (k *jwks) keys(ctx context.Context, kid string, again bool) []jose.JSONWebKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	var err error
	switch {
	case k.opts.File != "":
		err = k.reloadFile()
	case k.set == nil || time.Since(k.fetched) > k.opts.Refresh || (again && time.Since(k.fetched) > jwksRetry):
		err = k.fetch(ctx)
	}
	if err != nil {
		// Keep the keys we had: an issuer's outage must not lock users out
		// until the next successful fetch.
		k.log.Warn("auth: JWKS not refreshed", zap.Error(err))
	}
	if k.set == nil {
		return nil
	}
	if kid == "" {
		return k.set.Keys
	}
	return k.set.Key(kid)
}

// verify checks an external JWT and returns its principal.
func (k *jwks) verify(ctx context.Context, tok *jwt.JSONWebToken, h jose.Header) (*Principal, error) {
	if h.Algorithm == string(jose.HS256) {
		return nil, fmt.Errorf("%w: external tokens must be signed with a public-key algorithm", ErrBadToken)
	}
	keys := k.keys(ctx, h.KeyID, false)
	if len(keys) == 0 {
		keys = k.keys(ctx, h.KeyID, true)
	}
	var (
		std jwt.Claims
		raw map[string]any
		ok  bool
	)
	for _, key := range keys {
		if _, symmetric := key.Key.([]byte); symmetric || !key.Valid() {
			continue
		}
		if (key.Algorithm != "" && key.Algorithm != h.Algorithm) || (key.Use != "" && key.Use != "sig") {
			continue
		}
		if err := tok.Claims(key.Public().Key, &std, &raw); err == nil {
			ok = true
			break
		}
	}
	if !ok {
		if len(keys) == 0 {
			return nil, fmt.Errorf("%w: no key %q in the JWKS", ErrBadToken, h.KeyID)
		}
		return nil, fmt.Errorf("%w: bad signature", ErrBadToken)
	}
	if err := validate(std, jwt.Expected{Issuer: k.opts.Issuer, AnyAudience: jwt.Audience{k.opts.Audience}}); err != nil {
		return nil, err
	}
	name, _ := claim(raw, k.opts.PrincipalClaim).(string)
	if name == "" || name == ClusterName {
		return nil, fmt.Errorf("%w: claim %s names no principal", ErrBadToken, k.opts.PrincipalClaim)
	}
	roles := append([]string(nil), k.opts.DefaultRoles...)
	switch v := claim(raw, k.opts.RolesClaim).(type) {
	case string:
		roles = append(roles, strings.Fields(v)...)
	case []any:
		for _, r := range v {
			if s, ok := r.(string); ok {
				roles = append(roles, s)
			}
		}
	}
	return &Principal{Name: name, Roles: roles, Attributes: claimAttributes(raw, k.opts.AttributeClaims), Method: MethodJWT, Expires: std.Expiry.Time()}, nil
}

// claimAttributes reads the attribute claims of a JWT; a claim missing
// or not a scalar is no attribute.
func claimAttributes(raw map[string]any, names []string) map[string]string {
	var out map[string]string
	for _, name := range names {
		var v string
		switch x := claim(raw, name).(type) {
		case string:
			v = x
		case float64, bool, json.Number:
			b, _ := json.Marshal(x)
			v = string(b)
		default:
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = v
	}
	return out
}

// claim reads a possibly dotted claim name.
func claim(raw map[string]any, name string) any {
	var cur any = raw
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}
