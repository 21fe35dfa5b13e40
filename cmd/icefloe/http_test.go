package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/cluster"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHTTPListenerServesMetricsAndProfiles(t *testing.T) {
	addr := freeAddr(t)
	t.Setenv(PprofEnv, addr)
	r := newRoleFlags("worker", io.Discard)
	srv, err := r.startHTTP(newMetricsRegistry(), cluster.Security{}, nil)
	if err != nil || srv == nil {
		t.Fatalf("start: %v", err)
	}
	defer srv.Close()
	if code, body := get(t, "http://"+addr+"/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Fatalf("GET heap: %d %.200s", code, body)
	}
	if code, body := get(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("GET metrics: %d %.200s", code, body)
	}
}

func TestHTTPListenerWithoutProfiles(t *testing.T) {
	t.Setenv(PprofEnv, "")
	r := newRoleFlags("worker", io.Discard)
	*r.httpAddr = freeAddr(t)
	srv, err := r.startHTTP(newMetricsRegistry(), cluster.Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if code, _ := get(t, "http://"+srv.Addr()+"/debug/pprof/heap"); code != http.StatusNotFound {
		t.Fatalf("profiles served without %s: %d", PprofEnv, code)
	}
	if code, body := get(t, "http://"+srv.Addr()+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("GET healthz: %d %q", code, body)
	}
}

func TestPprofRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "example.com:6060", "nonsense"} {
		t.Setenv(PprofEnv, addr)
		r := newRoleFlags("worker", io.Discard)
		if _, err := r.startHTTP(newMetricsRegistry(), cluster.Security{}, nil); err == nil {
			t.Errorf("%s=%q: no error", PprofEnv, addr)
		}
	}
	t.Setenv(PprofEnv, "127.0.0.1:0")
	r := newRoleFlags("worker", io.Discard)
	*r.httpAddr = "0.0.0.0:0"
	if _, err := r.startHTTP(newMetricsRegistry(), cluster.Security{}, nil); err == nil {
		t.Error("profiles on a non-loopback --http-addr: no error")
	}
}
