package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/wire"
)

func hash(t testing.TB, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// aliceHash is alice's password hash in every config of a test: the
// processes of a cluster share one config.
var aliceHash = sync.OnceValue(func() string {
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	return string(h)
})

func newAuth(t testing.TB, key *wire.Key, jwks *JWKSOptions) *Authenticator {
	t.Helper()
	return newAuthUsers(t, key, jwks, User{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"analyst"}})
}

func newAuthUsers(t testing.TB, key *wire.Key, jwks *JWKSOptions, users ...User) *Authenticator {
	t.Helper()
	a, err := New(Options{Key: key, JWKS: jwks, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTokensFollowTheUserEntry: a token is good only while the config
// of the process verifying it has the user's entry as it was at issue,
// so a coordinator restarted with a changed config, and each worker
// given it, refuse the tokens of a removed user, of a user whose roles
// changed (a demoted admin) and of a user whose password changed.
func TestTokensFollowTheUserEntry(t *testing.T) {
	ctx := context.Background()
	key, _ := wire.RandomKey()
	entry := User{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"admin", "analyst"}}
	a := newAuthUsers(t, key, nil, entry)
	p, err := a.Password("alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	tok := issue(a, p, time.Hour)
	bob := User{Name: "bob", PasswordHash: aliceHash(), Roles: []string{"analyst"}}
	for what, c := range map[string]struct {
		users []User
		ok    bool
	}{
		"unchanged":             {[]User{entry, bob}, true},
		"roles listed in order": {[]User{{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"analyst", "admin", "analyst"}}}, true},
		"removed":               {[]User{bob}, false},
		"demoted":               {[]User{{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"analyst"}}}, false},
		"role added":            {[]User{{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"admin", "analyst", "ops"}}}, false},
		"new password":          {[]User{{Name: "alice", PasswordHash: hash(t, "n3w"), Roles: entry.Roles}}, false},
	} {
		got, err := newAuthUsers(t, key, nil, c.users...).Verify(ctx, tok)
		switch {
		case c.ok && (err != nil || got.Name != "alice" || !got.HasRole("admin")):
			t.Errorf("%s: %v %v, want accepted with admin", what, got, err)
		case !c.ok && (!errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "log in again")):
			t.Errorf("%s: %v %v, want refused (log in again)", what, got, err)
		}
	}
	// A refresh needs a token that verifies: the demoted admin's old
	// token is refused, not renewed.
	demoted := newAuthUsers(t, key, nil, User{Name: "alice", PasswordHash: aliceHash(), Roles: []string{"analyst"}})
	half := issue(a, p, time.Minute)
	if q, err := demoted.Verify(ctx, half); err == nil {
		t.Fatalf("the demoted admin's token verifies: %v (refresh %q)", q, demoted.Refresh(q))
	}
	// The version is a MAC: the token shows no part of the password hash.
	claims, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if strings.Contains(string(claims), aliceHash()[7:20]) {
		t.Fatalf("the token shows the password hash: %s", claims)
	}
	if _, _, err := a.Issue(&Principal{Name: "mallory", Method: MethodToken}, 0); err == nil {
		t.Fatal("issued a token for a user the config does not have")
	}
}

// TestForwardedExternalPrincipal: the token the coordinator forwards for
// the principal of an external JWT carries the JWT's roles, expires with
// the JWT at the latest, is verified without a config entry and is never
// renewed.
func TestForwardedExternalPrincipal(t *testing.T) {
	key, _ := wire.RandomKey()
	a := newAuth(t, key, nil)
	exp := time.Now().Add(2 * time.Minute).Truncate(time.Second)
	carol := &Principal{Name: "carol", Roles: []string{"reader"}, Method: MethodJWT, Expires: exp}
	v, err := a.Forward(NewContext(context.Background(), carol), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newAuth(t, key, nil).Verify(context.Background(), strings.TrimPrefix(v, "Bearer "))
	if err != nil || got.Name != "carol" || got.Method != MethodJWT || !got.HasRole("reader") || got.Expires.After(exp) {
		t.Fatalf("forwarded JWT principal: %v (expires %s) %v", got, got.Expires, err)
	}
	if r := a.Refresh(got); r != "" {
		t.Fatal("a forwarded external principal's token was renewed")
	}
}

func TestPasswordAndTokens(t *testing.T) {
	key, _ := wire.RandomKey()
	a := newAuth(t, key, nil)
	if _, err := a.Password("alice", "wrong"); !errors.Is(err, ErrBadPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := a.Password("bob", "s3cret"); !errors.Is(err, ErrBadPassword) {
		t.Fatalf("unknown user: %v", err)
	}
	p, err := a.Password("alice", "s3cret")
	if err != nil || p.Name != "alice" || !p.HasRole("analyst") {
		t.Fatalf("login: %v %v", p, err)
	}
	tok, _, err := a.Issue(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Verify(context.Background(), tok)
	if err != nil || got.Name != "alice" || got.Method != MethodToken || !got.HasRole("analyst") || got.Cluster() {
		t.Fatalf("verify: %v %v", got, err)
	}
	// Another process with the same cluster key verifies it (a worker).
	if _, err := newAuth(t, key, nil).Verify(context.Background(), tok); err != nil {
		t.Fatalf("same key elsewhere: %v", err)
	}
	other, _ := wire.RandomKey()
	if _, err := newAuth(t, other, nil).Verify(context.Background(), tok); !errors.Is(err, ErrBadToken) {
		t.Fatalf("other cluster: %v", err)
	}
	old, _, _ := a.Issue(p, -2*Leeway)
	if _, err := a.Verify(context.Background(), old); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	parts := strings.Split(tok, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := strings.Replace(string(claims), `"alice"`, `"admin"`, 1)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]
	if _, err := a.Verify(context.Background(), tampered); !errors.Is(err, ErrBadToken) {
		t.Fatalf("tampered: %v", err)
	}
	cl, err := a.ClusterToken()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Verify(context.Background(), cl); err != nil || !got.Cluster() {
		t.Fatalf("cluster token: %v %v", got, err)
	}
	if strings.Contains(a.String(), string(key.String())) || strings.Contains(a.String(), "s3cret") {
		t.Error("String shows a secret")
	}
}

func TestValidate(t *testing.T) {
	key, _ := wire.RandomKey()
	err := Options{Key: key, Users: []User{
		{Name: "a:b", PasswordHash: hash(t, "x")},
		{Name: "c", PasswordHash: "plain"},
		{Name: ClusterName, PasswordHash: hash(t, "x")},
	}, JWKS: &JWKSOptions{URL: "http://idp.example.com/keys"}}.Validate()
	for _, want := range []string{"may not contain ':'", "not a bcrypt hash", "icefloe's own", "must be https", "issuer is required", "audience is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}

// idp is an external issuer: an EC key in a JWKS and a way to sign.
type idp struct {
	key *ecdsa.PrivateKey
	set []byte
}

func newIDP(t *testing.T) *idp {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	return &idp{key: k, set: set}
}

func (i *idp) sign(t *testing.T, c jwt.Claims, extra map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestExternalJWT(t *testing.T) {
	i := newIDP(t)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, i.set, 0o600); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write(i.set)
	}))
	defer web.Close()
	key, _ := wire.RandomKey()
	good := jwt.Claims{Issuer: "https://idp", Audience: jwt.Audience{"icefloe"}, Subject: "carol", Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	for name, o := range map[string]JWKSOptions{
		"file": {File: file, Issuer: "https://idp", Audience: "icefloe", RolesClaim: "realm.roles", DefaultRoles: []string{"reader"}},
		"url":  {URL: web.URL, Issuer: "https://idp", Audience: "icefloe", RolesClaim: "realm.roles", DefaultRoles: []string{"reader"}},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAuth(t, key, &o)
			tok := i.sign(t, good, map[string]any{"realm": map[string]any{"roles": []string{"analyst"}}})
			p, err := a.Verify(context.Background(), tok)
			if err != nil || p.Name != "carol" || p.Method != MethodJWT || !p.HasRole("analyst") || !p.HasRole("reader") {
				t.Fatalf("verify: %v %v", p, err)
			}
			wrongIss := good
			wrongIss.Issuer = "https://evil"
			wrongAud := good
			wrongAud.Audience = jwt.Audience{"other"}
			expired := good
			expired.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour))
			noExp := good
			noExp.Expiry = nil
			for what, c := range map[string]jwt.Claims{"issuer": wrongIss, "audience": wrongAud, "expired": expired, "no exp": noExp} {
				if _, err := a.Verify(context.Background(), i.sign(t, c, nil)); err == nil {
					t.Errorf("%s: accepted", what)
				}
			}
			parts := strings.Split(tok, ".")
			sig := []byte(parts[2])
			if sig[10] == 'A' {
				sig[10] = 'B'
			} else {
				sig[10] = 'A'
			}
			parts[2] = string(sig)
			if _, err := a.Verify(context.Background(), strings.Join(parts, ".")); !errors.Is(err, ErrBadToken) {
				t.Errorf("tampered signature: %v", err)
			}
			// A token of another issuer key: unknown to the set.
			other := newIDP(t)
			if _, err := a.Verify(context.Background(), other.sign(t, good, nil)); !errors.Is(err, ErrBadToken) {
				t.Errorf("other key: %v", err)
			}
		})
	}
	if hits.Load() == 0 {
		t.Error("the JWKS URL was never fetched")
	}
}

// startServer serves Flight (BaseFlightServer: Handshake succeeds, every
// other method is Unimplemented) and health behind the interceptors.
func startServer(t *testing.T, a *Authenticator) *grpc.ClientConn {
	t.Helper()
	g := grpc.NewServer(a.ServerOptions()...)
	flight.RegisterFlightServiceServer(g, &flight.BaseFlightServer{})
	healthpb.RegisterHealthServer(g, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestInterceptors(t *testing.T) {
	key, _ := wire.RandomKey()
	var events []LoginEvent
	a, err := New(Options{Key: key, Users: []User{{Name: "alice", PasswordHash: hash(t, "s3cret")}},
		OnLogin: func(_ context.Context, e LoginEvent) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	conn := startServer(t, a)
	fc := flight.NewFlightServiceClient(conn)
	ctx := context.Background()
	code := func(ctx context.Context) codes.Code {
		// ListActions is a server stream: the error arrives with Recv.
		s, err := fc.ListActions(ctx, &flight.Empty{})
		if err == nil {
			_, err = s.Recv()
		}
		st, _ := status.FromError(err)
		return st.Code()
	}
	// Unary and streaming calls alike need credentials; health does not.
	if c := code(ctx); c != codes.Unauthenticated {
		t.Fatalf("no credentials: %s", c)
	}
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health: %v", err)
	}
	basic := func(user, pw string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.RawStdEncoding.EncodeToString([]byte(user+":"+pw)))
	}
	hs, err := fc.Handshake(basic("alice", "wrong"))
	if err == nil {
		_, err = hs.Recv()
	}
	if st, _ := status.FromError(err); st.Code() != codes.Unauthenticated || strings.Contains(st.Message(), "wrong\"") {
		t.Fatalf("wrong password: %v", err)
	}
	hs, err = fc.Handshake(basic("alice", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := hs.Header()
	if err != nil {
		t.Fatal(err)
	}
	bearer := hdr.Get("authorization")
	if len(bearer) != 1 || !strings.HasPrefix(bearer[0], "Bearer ") {
		t.Fatalf("handshake answered %v, want a bearer token", bearer)
	}
	withToken := metadata.AppendToOutgoingContext(ctx, "authorization", bearer[0])
	if c := code(withToken); c != codes.Unimplemented {
		t.Fatalf("with the token: %s, want past authentication (Unimplemented)", c)
	}
	if c := code(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer None")); c != codes.Unauthenticated {
		t.Fatalf("Bearer None: %s", c)
	}
	// A token past half its lifetime comes back renewed in the answer's
	// header; a fresh one does not.
	p, _ := a.Password("alice", "s3cret")
	old := *p
	old.LoggedIn = time.Now().Add(-MaxSession - time.Minute)
	oldTok, _, _ := a.Issue(&old, time.Minute)
	for tok, renewed := range map[string]bool{issue(a, p, time.Minute): true, issue(a, p, DefaultTokenTTL): false, oldTok: false} {
		var hdr metadata.MD
		s, err := fc.ListActions(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok), &flight.Empty{}, grpc.Header(&hdr))
		if err == nil {
			_, _ = s.Recv()
			hdr, _ = s.Header()
		}
		got := hdr.Get("authorization")
		if renewed != (len(got) == 1 && got[0] != "Bearer "+tok) {
			t.Fatalf("answered %v, want renewed %t", got, renewed)
		}
		if renewed {
			if q, err := a.Verify(ctx, strings.TrimPrefix(got[0], "Bearer ")); err != nil || q.Name != "alice" || time.Until(q.Expires) < DefaultTokenTTL/2 {
				t.Fatalf("renewed token: %v %v", q, err)
			}
		}
	}
	for _, e := range events {
		if strings.Contains(e.User+" "+errText(e.Err), "s3cret") {
			t.Errorf("a login event shows the password: %+v", e)
		}
	}
	if len(events) < 3 {
		t.Errorf("login events %d, want the failures and the login", len(events))
	}
}

func issue(a *Authenticator, p *Principal, ttl time.Duration) string {
	tok, _, _ := a.Issue(p, ttl)
	return tok
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
