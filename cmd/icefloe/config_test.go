package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "icefloe.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigCheckRedactsAndExpands(t *testing.T) {
	t.Setenv("LAKE_SECRET", "very-secret")
	t.Setenv("PG_PW", "pg-secret")
	p := writeConfig(t, `
listen: 127.0.0.1:0
ticket_key: key-secret
metadata_cache_bytes: 1048576
data_cache_bytes: 0
catalogs:
  - name: lake
    type: rest
    properties:
      uri: http://127.0.0.1:8181
      credential: client:${LAKE_SECRET}
  - name: pg
    type: sql
    properties:
      uri: postgres://iceberg:${PG_PW}@127.0.0.1:5432/iceberg
      sql.dialect: postgres
      s3.secret-access-key: s3-secret
  - name: pgkv
    type: sql
    properties:
      uri: "host=h user=u password=kv-secret dbname=d"
      sql.dialect: postgres
  - name: rest2
    type: rest
    properties:
      uri: https://cat.example/api?token=query-secret
      header.X-Api-Key: header-secret
  - name: glue
    type: glue
    properties:
      glue.region: eu-west-1
`)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"config", "check", p}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, secret := range []string{"very-secret", "pg-secret", "key-secret", "s3-secret", "kv-secret", "query-secret", "header-secret"} {
		if strings.Contains(text, secret) {
			t.Errorf("config check prints %q:\n%s", secret, text)
		}
	}
	for _, want := range []string{"name: lake", "type: rest", "uri: http://127.0.0.1:8181", "glue.region: eu-west-1", "metadata_cache_bytes: 1048576", "data_cache_bytes: 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("config check lacks %q:\n%s", want, text)
		}
	}
}

func TestConfigValidateNamesEveryKey(t *testing.T) {
	p := writeConfig(t, `
workers: -1
data_cache_bytes: -5
result_cache_bytes: -1
shuffle_partitions: -2
catalogs:
  - name: local
    type: rest
  - name: a
    type: nope
  - name: a
    type: sql
    properties: {uri: "x", sql.dialect: postgres}
`)
	_, err := loadConfig(p)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"workers: must be >= 0",
		"data_cache_bytes: must be >= 0",
		"result_cache_bytes: must be >= 0",
		"shuffle_partitions: must be >= 0",
		`catalogs[0].name: "local" is the embedded catalog's name`,
		"catalogs[0].properties.uri: required",
		`catalogs[1].type: "nope"`,
		`catalogs[2].name: "a" already names catalogs[1]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestConfigUnknownKeyAndUnsetVariable(t *testing.T) {
	if _, err := loadConfig(writeConfig(t, "catalogs:\n  - name: x\n    type: glue\n    propertes: {}\n")); err == nil || !strings.Contains(err.Error(), "propertes") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := loadConfig(writeConfig(t, "ticket_key: ${ICEFLOE_SURELY_UNSET_VAR}\n")); err == nil || !strings.Contains(err.Error(), "ICEFLOE_SURELY_UNSET_VAR") {
		t.Errorf("unset variable: %v", err)
	}
}

// TestSQLHelpHidesToken: icefloe sql -h names $ICEFLOE_TOKEN but never
// prints its value.
func TestSQLHelpHidesToken(t *testing.T) {
	t.Setenv("ICEFLOE_TOKEN", "token-secret-value")
	var out, errOut bytes.Buffer
	_ = run(context.Background(), []string{"sql", "-h"}, strings.NewReader(""), &out, &errOut)
	help := out.String() + errOut.String()
	if strings.Contains(help, "token-secret-value") || !strings.Contains(help, "ICEFLOE_TOKEN") {
		t.Fatalf("help:\n%s", help)
	}
	o, _, err := parseSQLArgs([]string{"SELECT 1"}, nil, &errOut)
	if err != nil || o.token != "token-secret-value" {
		t.Fatalf("the token from the environment is not used: %q %v", o.token, err)
	}
}

// TestResultCacheBytes: unset is the default, 0 turns the cache off, a
// size bounds it.
func TestResultCacheBytes(t *testing.T) {
	for text, want := range map[string]int64{"": 0, "result_cache_bytes: 0\n": -1, "result_cache_bytes: 1048576\n": 1 << 20} {
		c, err := loadConfig(writeConfig(t, "listen: 127.0.0.1:0\n"+text))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.resultCacheBytes(); got != want {
			t.Errorf("%q: result cache bytes %d, want %d", text, got, want)
		}
	}
}
