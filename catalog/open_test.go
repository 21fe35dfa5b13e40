package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iceconfig "github.com/apache/iceberg-go/config"
)

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cases := []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{"k.name: required", "k.type: required"}},
		{Config{Name: "a.b", Type: "hive"}, []string{"k.name: \"a.b\" may not contain", `k.type: "hive": want one of rest, glue, sql`}},
		{Config{Name: "r", Type: TypeREST}, []string{"k.properties.uri: required for a rest catalog"}},
		{Config{Name: "s", Type: TypeSQL, Properties: map[string]string{"sql.dialect": "oracle"}},
			[]string{"k.properties.uri: required", `k.properties.sql.dialect: "oracle"`}},
		{Config{Name: "g", Type: TypeGlue}, nil},
	}
	for _, c := range cases {
		err := c.cfg.Validate("k")
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%v: %v", c.cfg, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: no error, want %q", c.cfg, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.cfg, err, w)
			}
		}
	}
}

func TestRedacted(t *testing.T) {
	props := map[string]string{
		"credential":              "id:secret1",
		"s3.secret-access-key":    "secret2",
		"s3.access-key-id":        "AKIA",
		"token":                   "secret3",
		"uri":                     "postgres://u:secret4@h:5432/db",
		"warehouse":               "s3://b/w",
		"header.X-Api-Key":        "secret5",
		"header.Authorization":    "Bearer secret6",
		"rest.uri":                "https://cat.example/api?token=secret7&region=eu",
		"dsn":                     "host=h port=5432 user=u password=secret8 dbname=d",
		"quoted":                  "host=h password='se cret9' dbname=d",
		"adls.sas":                "sv=2021&sig=secret10",
		"blob":                    "https://acct.blob.core.windows.net/c?sv=2021&sig=secret11",
		"odd":                     "postgres://u:p@ss@secret12@h/db",
		"gcs.oauth2.token":        "secret13",
		"adls.connection-string":  "AccountKey=secret14",
		"client.private-key-file": "secret15",
	}
	got := Redacted(props)
	for k, v := range got {
		if strings.Contains(v, "secret") || v == "AKIA" {
			t.Errorf("%s=%q not redacted", k, v)
		}
	}
	if got["warehouse"] != "s3://b/w" || !strings.HasPrefix(got["uri"], "postgres://u:") ||
		!strings.Contains(got["rest.uri"], "region=eu") || !strings.Contains(got["dsn"], "dbname=d") {
		t.Errorf("over-redacted: %v", got)
	}
	secrets := Secrets(props)
	for k, v := range props {
		if strings.Contains(v, "secret") && Scrub(v, secrets) == v {
			t.Errorf("Secrets misses the secret of %s", k)
		}
	}
	err := ScrubError(fmt.Errorf("dial %s: %w", props["rest.uri"], ErrUnavailable), secrets)
	if strings.Contains(err.Error(), "secret7") || !errors.Is(err, ErrUnavailable) {
		t.Errorf("ScrubError: %v", err)
	}
}

// A catalog named in ~/.iceberg-go.yaml must not change a configured one.
func TestOpenIgnoresHomeConfig(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "{}", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	iceconfig.EnvConfig.Catalogs = map[string]iceconfig.CatalogConfig{
		"home": {CatalogType: "rest", URI: srv.URL, Warehouse: "hijacked"},
	}
	iceconfig.EnvConfig.DefaultCatalog = "home"
	isolateOnce = sync.Once{}
	// A glue catalog named like the home entry stays a glue catalog.
	cat, _, err := Open(context.Background(), Config{Name: "home", Type: TypeGlue, Properties: map[string]string{
		"glue.region": "us-east-1", "glue.access-key-id": "k", "glue.secret-access-key": "s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cat.CatalogType() != "glue" {
		t.Fatalf("catalog type %s, want glue", cat.CatalogType())
	}
	if hits.Load() != 0 {
		t.Fatal("the home file's REST catalog was contacted")
	}
	if iceconfig.EnvConfig.Catalogs != nil {
		t.Fatal("home catalogs still loaded")
	}
}

func TestOpenUnreachable(t *testing.T) {
	l := httptest.NewServer(http.NotFoundHandler())
	url := l.URL
	l.Close()
	_, _, err := Open(context.Background(), Config{Name: "down", Type: TypeREST, Properties: map[string]string{"uri": url}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `"down"`) {
		t.Fatalf("got %v, want ErrUnavailable naming the catalog", err)
	}
}

// tokenServer issues tokens living ttl and accepts requests carrying a live
// one; reject makes it refuse every bearer token once.
type tokenServer struct {
	*httptest.Server
	issued, refused atomic.Int32
	reject          atomic.Bool
	ttl             int
	valid           map[string]bool
}

func newTokenServer(t *testing.T, ttl int) *tokenServer {
	ts := &tokenServer{ttl: ttl}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/oauth/tokens") {
			r.ParseForm()
			if r.Form.Get("client_secret") != "s3cr3t" {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":"invalid_client"}`)
				return
			}
			n := ts.issued.Add(1)
			if ts.ttl > 0 {
				fmt.Fprintf(w, `{"access_token":"tok%d","token_type":"Bearer","expires_in":%d}`, n, ts.ttl)
			} else {
				fmt.Fprintf(w, `{"access_token":"tok%d","token_type":"Bearer"}`, n)
			}
			return
		}
		if ts.reject.CompareAndSwap(true, false) {
			ts.refused.Add(1)
			w.WriteHeader(419)
			return
		}
		fmt.Fprint(w, r.Header.Get("Authorization"))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("body"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 256)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}

func TestOAuthTransportRefreshesBeforeExpiry(t *testing.T) {
	ts := newTokenServer(t, 60)
	tr := NewOAuthTransport(OAuthConfig{TokenURL: ts.URL + "/v1/oauth/tokens", Credential: "id:s3cr3t"}, nil)
	now := time.Now()
	tr.now = func() time.Time { return now }
	c := &http.Client{Transport: tr}
	if _, body := get(t, c, ts.URL+"/v1/x"); body != "Bearer tok1" {
		t.Fatalf("first: %q", body)
	}
	now = now.Add(20 * time.Second)
	if _, body := get(t, c, ts.URL+"/v1/x"); body != "Bearer tok1" {
		t.Fatalf("still fresh: %q", body)
	}
	// 31 s before expiry is within the 30 s margin: refreshed first.
	now = now.Add(31 * time.Second)
	if _, body := get(t, c, ts.URL+"/v1/x"); body != "Bearer tok2" {
		t.Fatalf("near expiry: %q", body)
	}
	if tr.Fetches() != 2 {
		t.Fatalf("fetches %d", tr.Fetches())
	}
}

func TestOAuthTransportRetriesOnceAfter419(t *testing.T) {
	ts := newTokenServer(t, 0) // no expires_in: only a refusal refreshes
	tr := NewOAuthTransport(OAuthConfig{TokenURL: ts.URL + "/v1/oauth/tokens", Credential: "id:s3cr3t"}, nil)
	c := &http.Client{Transport: tr}
	get(t, c, ts.URL+"/v1/x")
	ts.reject.Store(true)
	code, body := get(t, c, ts.URL+"/v1/x")
	if code != http.StatusOK || body != "Bearer tok2" || ts.refused.Load() != 1 {
		t.Fatalf("after 419: %d %q refused=%d", code, body, ts.refused.Load())
	}
}

func TestOAuthTransportRefusedCredential(t *testing.T) {
	ts := newTokenServer(t, 60)
	tr := NewOAuthTransport(OAuthConfig{TokenURL: ts.URL + "/v1/oauth/tokens", Credential: "id:wrong-secret"}, nil)
	_, err := (&http.Client{Transport: tr}).Get(ts.URL + "/v1/x")
	if !errors.Is(err, ErrUnauthenticated) || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("got %v", err)
	}
	if s := fmt.Sprint(tr.cfg); strings.Contains(s, "wrong-secret") {
		t.Fatalf("String leaks: %s", s)
	}
}
