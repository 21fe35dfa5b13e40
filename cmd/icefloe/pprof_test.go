package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestPprofServesOnLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv(PprofEnv, addr)
	if err := startPprof(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET heap: %d %.200s", resp.StatusCode, body)
	}
}

func TestPprofRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "example.com:6060", "nonsense"} {
		t.Setenv(PprofEnv, addr)
		if err := startPprof(); err == nil {
			t.Errorf("%s=%q: no error", PprofEnv, addr)
		}
	}
	t.Setenv(PprofEnv, "")
	if err := startPprof(); err != nil {
		t.Errorf("unset: %v", err)
	}
}
