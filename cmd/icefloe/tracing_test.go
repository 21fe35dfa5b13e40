package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTracingConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := loadConfig(write("tracing:\n  endpoint: collector:4317\n  sample_ratio: 0.25\n  ca_file: ca.pem\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Tracing.options("icefloe-worker"); o.Endpoint != "collector:4317" || o.SampleRatio != 0.25 || o.CAFile != "ca.pem" || o.Insecure || o.Service != "icefloe-worker" {
		t.Fatalf("options %+v", o)
	}
	if o := (Config{}).Tracing.options("icefloe"); o.Enabled() {
		t.Fatalf("no tracing section turned tracing on: %+v", o)
	}
	_, err = loadConfig(write("tracing:\n  endpoint: collector:4317\n  sample_ratio: 2\n  insecure: true\n  ca_file: ca.pem\n"))
	want := "config: tracing: sample_ratio: must be in [0, 1], got 2\nconfig: tracing: ca_file: set with insecure, which sends in plaintext: give one of them"
	if err == nil || err.Error() != want {
		t.Fatalf("loadConfig: %v, want %q", err, want)
	}
	_, err = loadConfig(write("tracing:\n  endpoint: http://collector:4317\n"))
	if want := `config: tracing.endpoint: "http://collector:4317": give host:port, without a scheme`; err == nil || err.Error() != want {
		t.Fatalf("loadConfig: %v, want %q", err, want)
	}
	c, err = loadConfig(write("tracing:\n  endpoint: collector:4317\n"))
	if err != nil || c.effective().Tracing.SampleRatio != 1 {
		t.Fatalf("effective sample ratio of %+v: %v", c.Tracing, err)
	}
}
