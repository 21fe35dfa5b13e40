package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultRefreshMargin is how long before its expiry a token is refreshed.
const DefaultRefreshMargin = 30 * time.Second

// OAuthConfig configures the OAuth2 client-credentials flow of a REST
// catalog. Credential is "client_id:client_secret" (or just a secret) as in
// iceberg's "credential" property.
type OAuthConfig struct {
	TokenURL   string
	Credential string
	Scope      string
	Audience   string
	Resource   string
	// RefreshMargin: a token is refreshed this long before it expires;
	// 0 means DefaultRefreshMargin, capped at half the token's lifetime.
	RefreshMargin time.Duration
}

// String describes the config without its credential.
func (c OAuthConfig) String() string {
	return fmt.Sprintf("oauth2(token_url=%s, scope=%s, credential=<redacted>)", c.TokenURL, c.Scope)
}

// OAuthTransport is the http.RoundTripper a REST catalog sends requests
// through. It fetches a client-credentials token, refreshes it before it
// expires (when the token response has expires_in), and on a 401 or 419
// answer refreshes once and retries the request once. iceberg-go does
// neither the retry nor refresh without expires_in. It is safe for
// concurrent use.
type OAuthTransport struct {
	cfg  OAuthConfig
	base http.RoundTripper
	now  func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time // zero: no known expiry
	margin  time.Duration
	fetches int
}

// NewOAuthTransport returns a transport over base (nil: a new
// http.Transport).
func NewOAuthTransport(cfg OAuthConfig, base http.RoundTripper) *OAuthTransport {
	if base == nil {
		base = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	if cfg.RefreshMargin <= 0 {
		cfg.RefreshMargin = DefaultRefreshMargin
	}
	return &OAuthTransport{cfg: cfg, base: base, now: time.Now}
}

// Fetches returns how many tokens were fetched so far.
func (t *OAuthTransport) Fetches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fetches
}

// RoundTrip implements http.RoundTripper.
func (t *OAuthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.isTokenRequest(req) {
		return t.base.RoundTrip(req)
	}
	tok, err := t.current(req, false, "")
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != 419) {
		return resp, err
	}
	// Refused: refresh once (unless another request already did) and retry
	// once, if the body can be sent again.
	if req.Body != nil && req.GetBody == nil {
		return resp, nil
	}
	tok2, err := t.current(req, true, tok)
	if err != nil {
		return resp, nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return t.send(req, tok2)
}

func (t *OAuthTransport) isTokenRequest(req *http.Request) bool {
	return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/oauth/tokens")
}

func (t *OAuthTransport) send(req *http.Request, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// current returns a usable token: the cached one unless it is missing,
// about to expire, or (force) the one that was just refused.
func (t *OAuthTransport) current(req *http.Request, force bool, refused string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	fresh := t.token != "" && (t.expires.IsZero() || now.Add(t.marginLocked()).Before(t.expires))
	if fresh && !(force && t.token == refused) {
		return t.token, nil
	}
	tok, lifetime, err := t.fetch(req)
	if err != nil {
		return "", err
	}
	t.fetches++
	t.token = tok
	t.expires = time.Time{}
	t.margin = t.cfg.RefreshMargin
	if lifetime > 0 {
		t.expires = now.Add(lifetime)
		t.margin = min(t.cfg.RefreshMargin, lifetime/2)
	}
	return tok, nil
}

func (t *OAuthTransport) marginLocked() time.Duration {
	if t.margin == 0 {
		return t.cfg.RefreshMargin
	}
	return t.margin
}

// fetch runs the client-credentials grant. Its errors never carry the
// credential.
func (t *OAuthTransport) fetch(orig *http.Request) (string, time.Duration, error) {
	id, secret, ok := strings.Cut(t.cfg.Credential, ":")
	if !ok {
		id, secret = "", t.cfg.Credential
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_secret": {secret}}
	if id != "" {
		form.Set("client_id", id)
	}
	if t.cfg.Scope != "" {
		form.Set("scope", t.cfg.Scope)
	}
	if t.cfg.Audience != "" {
		form.Set("audience", t.cfg.Audience)
	}
	if t.cfg.Resource != "" {
		form.Set("resource", t.cfg.Resource)
	}
	body := form.Encode()
	req, err := http.NewRequestWithContext(orig.Context(), http.MethodPost, t.cfg.TokenURL, strings.NewReader(body))
	if err != nil {
		return "", 0, fmt.Errorf("%w: oauth2 token url: %v", ErrUnauthenticated, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return "", 0, fmt.Errorf("%w: oauth2 token request: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		AccessToken string      `json:"access_token"`
		ExpiresIn   json.Number `json:"expires_in"`
		Error       string      `json:"error"`
		Desc        string      `json:"error_description"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&out)
	if resp.StatusCode >= 500 {
		return "", 0, fmt.Errorf("%w: oauth2 token endpoint answered %s", ErrUnavailable, resp.Status)
	}
	if resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		msg := resp.Status
		if out.Error != "" {
			msg += ": " + out.Error
		}
		return "", 0, fmt.Errorf("%w: oauth2 client credentials refused (%s)", ErrUnauthenticated, msg)
	}
	var lifetime time.Duration
	if s, err := out.ExpiresIn.Int64(); err == nil && s > 0 {
		lifetime = time.Duration(s) * time.Second
	}
	return out.AccessToken, lifetime, nil
}

var _ http.RoundTripper = (*OAuthTransport)(nil)
