package restcatalog

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// endpoint is one route of the specification the server serves.
type endpoint struct {
	method, path string
	// kind names the request in the audit log: the specification's
	// operation id.
	kind  string
	serve func(*Server) handler
}

// endpoints are the routes under a prefix, as GET /v1/config lists them
// (clients use only the endpoints listed there).
var endpoints = []endpoint{
	{"GET", "/v1/{prefix}/namespaces", "listNamespaces", func(s *Server) handler { return s.listNamespaces }},
	{"POST", "/v1/{prefix}/namespaces", "createNamespace", func(s *Server) handler { return s.createNamespace }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}", "loadNamespaceMetadata", func(s *Server) handler { return s.loadNamespace }},
	{"HEAD", "/v1/{prefix}/namespaces/{namespace}", "namespaceExists", func(s *Server) handler { return s.namespaceExists }},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}", "dropNamespace", func(s *Server) handler { return s.dropNamespace }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/properties", "updateProperties", func(s *Server) handler { return s.updateNamespace }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}/tables", "listTables", func(s *Server) handler { return s.listTables }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/tables", "createTable", func(s *Server) handler { return s.createTable }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "loadTable", func(s *Server) handler { return s.loadTable }},
	{"HEAD", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "tableExists", func(s *Server) handler { return s.tableExists }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "updateTable", func(s *Server) handler { return s.updateTable }},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", "dropTable", func(s *Server) handler { return s.dropTable }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials", "loadCredentials", func(s *Server) handler { return s.loadCredentials }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", "reportMetrics", func(s *Server) handler { return s.reportMetrics }},
	{"POST", "/v1/{prefix}/tables/rename", "renameTable", func(s *Server) handler { return s.renameTable }},
	{"POST", "/v1/{prefix}/transactions/commit", "commitTransaction", func(s *Server) handler { return s.commitTransaction }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}/views", "listViews", func(s *Server) handler { return s.listViews }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/views", "createView", func(s *Server) handler { return s.createView }},
	{"GET", "/v1/{prefix}/namespaces/{namespace}/views/{view}", "loadView", func(s *Server) handler { return s.loadView }},
	{"POST", "/v1/{prefix}/namespaces/{namespace}/views/{view}", "replaceView", func(s *Server) handler { return s.replaceView }},
	{"HEAD", "/v1/{prefix}/namespaces/{namespace}/views/{view}", "viewExists", func(s *Server) handler { return s.viewExists }},
	{"DELETE", "/v1/{prefix}/namespaces/{namespace}/views/{view}", "dropView", func(s *Server) handler { return s.dropView }},
}

// configResponse is the answer of GET /v1/config.
type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// config answers GET /v1/config?warehouse=NAME: the prefix of the
// catalog NAME (the default catalog when none is named) and the
// endpoints served.
func (s *Server) config(r *http.Request) (any, error) {
	name := r.URL.Query().Get("warehouse")
	if name == "" {
		name = s.opts.DefaultCatalog
	}
	if _, err := s.mountNamed(r, name); err != nil {
		return nil, err
	}
	eps := make([]string, len(endpoints))
	for i, e := range endpoints {
		eps[i] = e.method + " " + e.path
	}
	return configResponse{
		Defaults:  map[string]string{},
		Overrides: map[string]string{"prefix": name},
		Endpoints: eps,
	}, nil
}

// mount is the mounted catalog the request's prefix names.
func (s *Server) mount(r *http.Request) (*catalog.Mount, error) {
	return s.mountNamed(r, r.PathValue("prefix"))
}

// mountNamed is the mounted catalog called name, if the caller may see
// it; one it may not see is not found, as in listings.
func (s *Server) mountNamed(r *http.Request, name string) (*catalog.Mount, error) {
	mt, err := s.opts.Mounts.Get(name)
	if err != nil || !s.opts.Policy.CanSee(r.Context(), authz.Object{name}) {
		return nil, fmt.Errorf("%w: %q (warehouse names a mounted catalog)", ErrCatalogNotFound, name)
	}
	return mt, nil
}

// tokenResponse is the OAuth2 token endpoint's answer.
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
}

// OAuth2 grant and token types the token endpoint takes.
const (
	grantClientCredentials = "client_credentials"
	grantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess        = "urn:ietf:params:oauth:token-type:access_token"
)

// tokens answers POST /v1/oauth/tokens (OAuth2, form-encoded): a client
// credentials grant whose client id and secret are an icefloe user's
// name and password, or a token exchange of a bearer token icefloe
// accepts, each answered with icefloe's own bearer token. Errors are
// OAuth2's (RFC 6749 §5.2), not the catalog's.
func (s *Server) tokens(w http.ResponseWriter, r *http.Request) {
	oauthErr := func(code int, kind, desc string) {
		writeJSON(w, code, map[string]string{"error": kind, "error_description": desc})
	}
	a := s.opts.Auth
	if a == nil {
		oauthErr(http.StatusBadRequest, "invalid_request", "authentication is off on this server: connect without a credential or token")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthErr(http.StatusBadRequest, "invalid_request", "the request is not a form")
		return
	}
	var (
		token   string
		expires time.Time
		err     error
	)
	rpc := "REST POST /v1/oauth/tokens"
	switch grant := r.PostForm.Get("grant_type"); grant {
	case grantClientCredentials:
		id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		if u, p, ok := r.BasicAuth(); ok && id == "" {
			id, secret = u, p
		}
		if id == "" {
			oauthErr(http.StatusBadRequest, "invalid_request", "client_id and client_secret are an icefloe user's name and password")
			return
		}
		_, token, expires, err = a.Login(r.Context(), id, secret, r.RemoteAddr, rpc)
	case grantTokenExchange:
		subject := r.PostForm.Get("subject_token")
		if subject == "" {
			oauthErr(http.StatusBadRequest, "invalid_request", "subject_token is required")
			return
		}
		_, token, expires, err = a.Exchange(r.Context(), subject, r.RemoteAddr, rpc)
	default:
		oauthErr(http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q: want %s or %s", grant, grantClientCredentials, grantTokenExchange))
		return
	}
	if err != nil {
		if code, _ := errorResponse(err); code == http.StatusUnauthorized {
			oauthErr(http.StatusUnauthorized, "invalid_client", err.Error())
			return
		}
		writeError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: token, TokenType: "bearer",
		ExpiresIn: int64(time.Until(expires).Seconds()), IssuedTokenType: tokenTypeAccess})
}

// principalName is the caller's name for messages.
func principalName(r *http.Request) string {
	if n := auth.Name(r.Context()); n != "" {
		return n
	}
	return "an anonymous caller"
}

// oneLevel is the schema a namespace path segment names: icefloe's
// catalogs hold one-level namespaces.
func oneLevel(seg string) (string, error) {
	ns := namespaceOf(seg)
	if len(ns) != 1 || ns[0] == "" || strings.Contains(ns[0], ".") {
		return "", badRequest("namespace %q: icefloe's catalogs hold one-level namespaces without dots", strings.Join(ns, "."))
	}
	return ns[0], nil
}
