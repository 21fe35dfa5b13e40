package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/tlsconf"
	"github.com/icefloe/icefloe/wire"
)

// secureEnv is an in-process cluster with authentication, grants, TLS on
// every listener and an audit file, as `serve --config` builds it.
type secureEnv struct {
	s      *cluster.Standalone
	auth   *auth.Authenticator
	caPEM  string
	client flightclient.Options // TLS to the cluster, no credentials
	audit  string
	idp    *ecdsa.PrivateKey
}

// Users of secureEnv and their passwords.
var securePasswords = map[string]string{"root": "root-pw", "alice": "alice-pw", "bob": "bob-pw"}

const (
	idpIssuer   = "https://idp.test"
	idpAudience = "icefloe"
)

// secureRoles: alice analyses sales and writes refunds and sandbox;
// bob and the external JWT role reader read the demo schema.
var secureRoles = []authz.Role{
	{Name: "analyst", Grants: []authz.Grant{
		{Privileges: []authz.Privilege{authz.Select}, On: "local.sales"},
		{Privileges: []authz.Privilege{authz.Insert}, On: "local.sales.refunds"},
		{Privileges: []authz.Privilege{authz.All}, On: "local.sandbox"},
	}},
	{Name: "reader", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local.default"}}},
}

// startSecure starts a secured cluster of 2 workers over the demo
// tables; opts change its options.
func startSecure(t testing.TB, opts ...func(*cluster.StandaloneOptions)) *secureEnv {
	t.Helper()
	dir := t.TempDir()
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	files, err := tlsconf.Dev(filepath.Join(dir, "tls"), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srvTLS, err := tlsconf.Server(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := tlsconf.Client(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	idp, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &idp.PublicKey, KeyID: "idp-1", Algorithm: "ES256", Use: "sig"}}})
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, set, 0o600); err != nil {
		t.Fatal(err)
	}
	roles := map[string][]string{"root": {authz.AdminRole}, "alice": {"analyst"}, "bob": {"reader"}}
	var users []auth.User
	for name, pw := range securePasswords {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, auth.User{Name: name, PasswordHash: string(h), Roles: roles[name]})
	}
	auditFile := filepath.Join(dir, "audit.jsonl")
	alog, err := audit.Open(audit.Options{File: auditFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	a, err := auth.New(auth.Options{Key: key, Users: users, OnLogin: alog.Login,
		JWKS: &auth.JWKSOptions{File: jwksFile, Issuer: idpIssuer, Audience: idpAudience}})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.NewPolicy(secureRoles)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	so := cluster.StandaloneOptions{
		Listen:       "127.0.0.1:0",
		WorkerHost:   "127.0.0.1",
		Workers:      2,
		DataDir:      dir,
		Demo:         true,
		Key:          key,
		WorkerEngine: engine.Options{Threads: 2, MemoryLimit: "1GB"},
		Security:     cluster.Security{Auth: a, Policy: policy, TLS: srvTLS, ClientTLS: cliTLS, Audit: alog},
	}
	so.ResultCacheBytes = resultCacheBytes(false)
	for _, o := range opts {
		o(&so)
	}
	s, err := cluster.StartStandalone(ctx, so)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	return &secureEnv{s: s, auth: a, caPEM: string(ca), client: flightclient.Options{TLS: cliTLS}, audit: auditFile, idp: idp}
}

// open opens an ADBC connection over TLS with the given extra options.
func (e *secureEnv) open(t testing.TB, opts map[string]string) (adbc.Connection, error) {
	t.Helper()
	o := map[string]string{
		adbc.OptionKeyURI:              "grpc+tls://" + e.s.Addr(),
		adbcflight.OptionSSLRootCerts:  e.caPEM,
		adbcflight.OptionTimeoutQuery:  "60",
		adbcflight.OptionTimeoutUpdate: "60",
	}
	for k, v := range opts {
		o[k] = v
	}
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn, nil
}

// login opens a connection as a configured user.
func (e *secureEnv) login(t testing.TB, user string) adbc.Connection {
	t.Helper()
	c, err := e.open(t, map[string]string{adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: securePasswords[user]})
	if err != nil {
		t.Fatalf("log in as %s: %v", user, err)
	}
	return c
}

// withToken opens a connection that sends a bearer token.
func (e *secureEnv) withToken(t testing.TB, token string) (adbc.Connection, error) {
	return e.open(t, map[string]string{adbcflight.OptionAuthorizationHeader: "Bearer " + token})
}

// token issues a token for a user, valid for ttl.
func (e *secureEnv) token(t testing.TB, user string, ttl time.Duration) string {
	t.Helper()
	p, err := e.auth.Password(user, securePasswords[user])
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := e.auth.Issue(p, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwt signs an external JWT for subject with roles, as the IdP would.
func (e *secureEnv) jwt(t testing.TB, subject string, roles []string, exp time.Duration) string {
	return e.jwtClaims(t, subject, exp, map[string]any{"roles": roles})
}

// jwtClaims signs an external JWT for subject with more claims.
func (e *secureEnv) jwtClaims(t testing.TB, subject string, exp time.Duration, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: e.idp}, (&jose.SignerOptions{}).WithHeader("kid", "idp-1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: idpIssuer, Audience: jwt.Audience{idpAudience}, Subject: subject,
		Expiry: jwt.NewNumericDate(time.Now().Add(exp))}).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// tamper changes one character of a signed token's payload: its
// signature no longer matches.
func tamper(tok string) string {
	parts := strings.SplitN(tok, ".", 3)
	b := []byte(parts[1])
	if b[3] == 'A' {
		b[3] = 'B'
	} else {
		b[3] = 'A'
	}
	parts[1] = string(b)
	return strings.Join(parts, ".")
}

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// BenchmarkSecurityOverhead runs the same small distributed query on a
// plain cluster and on one with TLS, authentication, grants and an audit
// file, in one run: compare the two (benchstat), never a time.
func BenchmarkSecurityOverhead(b *testing.B) {
	const q = "SELECT status, count(*) FROM orders WHERE id < 5000 GROUP BY status"
	plain := StartCluster(b, Workers(2), Demo())
	secure := startSecure(b)
	for _, c := range []struct {
		name string
		cnxn adbc.Connection
	}{{"plain", adbcConn(b, plain.Addr())}, {"tls+auth+audit", secure.login(b, "bob")}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				mustQuery(b, c.cnxn, q)
			}
		})
	}
}
