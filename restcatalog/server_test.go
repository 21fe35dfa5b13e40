package restcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/wire"
)

// fixture is a REST catalog server over an embedded catalog (local),
// with users who log in with Basic credentials: root (admin) and one user
// per role of roles, named as the role, whose password is its name.
type fixture struct {
	t      *testing.T
	url    string
	mounts *catalog.Mounts
	mt     *catalog.Mount
	opts   Options
}

// testRoles are the roles of the fixture's users: creator may make and
// change tables of schema s but choose no location; placer may; viewer
// may read them.
var testRoles = []authz.Role{
	{Name: "creator", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.All}, On: "local.s"}}},
	{Name: "placer", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.All, authz.Location}, On: "local.s"}}},
	{Name: "viewer", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local.s"}}},
}

func newFixture(t *testing.T, with ...func(*Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	cat, props, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := catalog.NewMounts()
	t.Cleanup(func() { m.Close() })
	if err := m.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	policy, err := authz.NewPolicy(testRoles)
	if err != nil {
		t.Fatal(err)
	}
	m.SetGuard((&authz.Guard{Policy: policy}).Wrap)
	key, err := wire.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var users []auth.User
	for _, u := range []struct{ name, role string }{{"root", authz.AdminRole}, {"creator", "creator"}, {"placer", "placer"}, {"viewer", "viewer"}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.name), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, auth.User{Name: u.name, PasswordHash: string(h), Roles: []string{u.role}})
	}
	a, err := auth.New(auth.Options{Key: key, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Mounts: m, DefaultCatalog: catalog.LocalCatalogName, Auth: a, Policy: policy}
	for _, w := range with {
		w(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	mt, err := m.Get(catalog.LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, url: srv.URL, mounts: m, mt: mt, opts: o}
	if err := mt.Internal().CreateNamespace(ctx, table.Identifier{"s"}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// client is iceberg-go's REST client as user.
func (f *fixture) client(user string) *rest.Catalog {
	f.t.Helper()
	cat, err := icecat.Load(context.Background(), "ice", iceberg.Properties{
		"type": "rest", "uri": f.url, "warehouse": catalog.LocalCatalogName,
		"header.Authorization": basic(user),
	})
	if err != nil {
		f.t.Fatalf("open the REST catalog as %s: %v", user, err)
	}
	return cat.(*rest.Catalog)
}

func basic(user string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, user)
	return req.Header.Get("Authorization")
}

// call sends a request as user with body (JSON; nil for none) and
// returns the status and the answer decoded.
func (f *fixture) call(user, method, path string, body any) (int, map[string]any) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", basic(user))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			f.t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, out
}

// want checks a call's status and, for an error, that its message holds
// every one of words.
func (f *fixture) want(what string, code int, ans map[string]any, wantCode int, words ...string) {
	f.t.Helper()
	msg := ""
	if e, ok := ans["error"].(map[string]any); ok {
		msg, _ = e["message"].(string)
	}
	if code != wantCode {
		f.t.Fatalf("%s: status %d (%s), want %d", what, code, msg, wantCode)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			f.t.Fatalf("%s: message %q does not say %q", what, msg, w)
		}
	}
}

var testSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})

// schemaJSON is testSchema as a request body holds it.
func schemaJSON(t *testing.T) any {
	b, err := json.Marshal(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// create makes table s.name as root and returns its location.
func (f *fixture) create(name string) string {
	f.t.Helper()
	tbl, err := f.client("root").CreateTable(context.Background(), table.Identifier{"s", name}, testSchema)
	if err != nil {
		f.t.Fatalf("create s.%s: %v", name, err)
	}
	return tbl.Location()
}

// load loads s.name from the catalog itself.
func (f *fixture) load(name string) *table.Table {
	f.t.Helper()
	p, err := f.mounts.LoadTable(context.Background(), catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: "s", Table: name})
	if err != nil {
		f.t.Fatalf("load s.%s: %v", name, err)
	}
	return p.Table
}
