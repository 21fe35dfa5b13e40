//go:build catalogs

package catalogs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// startCluster starts a coordinator and two workers with cats mounted.
func startCluster(t testing.TB, cats ...catalog.Config) *cluster.Standalone {
	t.Helper()
	return startClusterKey(t, nil, 0, cats...)
}

// startClusterKey is startCluster with a known ticket key (nil: random)
// and ticket lifetime (0: the default).
func startClusterKey(t testing.TB, key *wire.Key, ticketTTL time.Duration, cats ...catalog.Config) *cluster.Standalone {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen:       "127.0.0.1:0",
		WorkerHost:   "127.0.0.1",
		Workers:      2,
		DataDir:      t.TempDir(),
		WorkerEngine: engine.Options{Threads: 1, MemoryLimit: "512MB"},
		Catalogs:     cats,
		Key:          key,
		TicketTTL:    ticketTTL,
		// Without the result cache: these tests open the workers'
		// tickets, which a cacheable query's coordinator endpoint hides.
		ResultCacheBytes: -1,
	})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	return s
}

func connect(t testing.TB, addr string) adbc.Connection {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// query returns the rows of q, each as its cells joined by " | ".
func query(t testing.TB, cnxn adbc.Connection, q string) ([]string, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			cells := make([]string, rec.NumCols())
			for c := range cells {
				col := rec.Column(c)
				if col.IsNull(r) {
					cells[c] = "NULL"
				} else {
					cells[c] = col.ValueStr(r)
				}
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	return rows, rdr.Err()
}

func mustQuery(t testing.TB, cnxn adbc.Connection, q string) []string {
	t.Helper()
	rows, err := query(t, cnxn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func run(t testing.TB, cnxn adbc.Connection, q string) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecuteUpdate(context.Background()); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantRows(t testing.TB, cnxn adbc.Connection, q string, want ...string) {
	t.Helper()
	got := mustQuery(t, cnxn, q)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", q, got, want)
	}
}

// gateway is an OAuth2 front of a REST catalog: it issues client-credentials
// tokens that live for ttl (with expires_in), checks every other request's
// bearer token (401 when unknown or expired) and proxies it to the catalog.
type gateway struct {
	srv    *httptest.Server
	ttl    time.Duration
	id     string
	secret string

	mu      sync.Mutex
	tokens  map[string]time.Time
	issued  int
	refused int
	// vendTTL > 0 makes LoadTable answers vend S3 credentials that expire
	// after it; vends counts them.
	vendTTL time.Duration
	vends   int
}

func startGateway(t testing.TB, backend, id, secret string, ttl time.Duration) *gateway {
	t.Helper()
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{ttl: ttl, id: id, secret: secret, tokens: map[string]time.Time{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = g.vend
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		t.Logf("gateway: %v", err)
		w.WriteHeader(http.StatusBadGateway)
	}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/oauth/tokens") {
			g.token(w, r)
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		g.mu.Lock()
		exp, ok := g.tokens[tok]
		valid := ok && time.Now().Before(exp)
		if !valid {
			g.refused++
		}
		g.mu.Unlock()
		if !valid {
			http.Error(w, `{"error":{"message":"token expired or unknown","type":"NotAuthorizedException","code":401}}`, http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		r.Header.Del("Accept-Encoding") // vend rewrites plain JSON
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gateway) token(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	secret := g.secret
	g.mu.Unlock()
	if err := r.ParseForm(); err != nil || r.Form.Get("client_id") != g.id || r.Form.Get("client_secret") != secret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"bad client credentials"}`)
		return
	}
	var b [12]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	g.mu.Lock()
	g.tokens[tok] = time.Now().Add(g.ttl)
	g.issued++
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, tok, int(g.ttl.Seconds()))
}

// vend adds vended S3 credentials to table answers when vendTTL is set.
func (g *gateway) vend(resp *http.Response) error {
	g.mu.Lock()
	ttl := g.vendTTL
	g.mu.Unlock()
	if ttl == 0 || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, "/tables/") {
		return nil
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("gateway: decode %s: %w", resp.Request.URL.Path, err)
	}
	resp.Body.Close()
	g.mu.Lock()
	g.vends++
	n := g.vends
	g.mu.Unlock()
	cfg, _ := body["config"].(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["s3.access-key-id"] = fmt.Sprintf("vended-key-%d", n)
	cfg["s3.secret-access-key"] = fmt.Sprintf("vended-secret-%d", n)
	cfg["s3.session-token"] = fmt.Sprintf("vended-token-%d", n)
	cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(time.Now().Add(ttl).UnixMilli(), 10)
	body["config"] = cfg
	out, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// revoke forgets every token, as a server restart or key rotation would.
func (g *gateway) revoke() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens = map[string]time.Time{}
}

func (g *gateway) counts() (issued, refused int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.issued, g.refused
}
