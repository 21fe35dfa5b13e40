package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/wire"
)

func TestConfigAuthValidateAndRedact(t *testing.T) {
	p := writeConfig(t, `
ticket_ttl: -1m
auth:
  users:
    - name: "a:b"
      password_hash: "$2a$04$0123456789012345678901uVGXTq7K1aL5mCSGhxsI7h5q6b1hZ3m"
    - name: ana
      password_hash: plain-text-password
      roles: [nobody]
  roles:
    - name: r
      grants:
        - privileges: [FLY]
          on: local.s
  jwt:
    jwks_url: http://idp.example.com/keys?secret=jwks-secret
tls:
  dev: true
  cert_file: x.pem
`)
	_, err := loadConfig(p)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"ticket_ttl: must be >= 0",
		"may not contain ':'",
		`user "ana": password_hash is not a bcrypt hash`,
		`user "ana" has role "nobody"`,
		`unknown privilege "FLY"`,
		"jwks_url must be https",
		"issuer is required",
		"give dev or cert_file and key_file",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "plain-text-password") || strings.Contains(err.Error(), "jwks-secret") {
		t.Errorf("a validation error shows a secret: %v", err)
	}

	hash := "$2a$04$0123456789012345678901uVGXTq7K1aL5mCSGhxsI7h5q6b1hZ3m"
	cfg := Config{Auth: &AuthConfig{Users: []UserConfig{{Name: "ana", PasswordHash: hash}},
		JWT: &JWTConfig{JWKSURL: "https://u:pw@idp/keys?token=tok-secret", Issuer: "i", Audience: "a"}}}
	out := cfg.String()
	for _, secret := range []string{hash, "tok-secret", "u:pw"} {
		if strings.Contains(out, secret) {
			t.Errorf("String shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "password_hash: <redacted>") || cfg.Auth.Users[0].PasswordHash != hash {
		t.Errorf("redaction changed the config or missed the hash:\n%s", out)
	}
}

func TestSecurityNeedsAuthOffLoopback(t *testing.T) {
	key, _ := wire.RandomKey()
	for listen, wantErr := range map[string]bool{"127.0.0.1:0": false, "localhost:0": false, "[::1]:0": false, "0.0.0.0:0": true, ":0": true, "10.1.2.3:0": true} {
		r := newRoleFlags("serve", nil)
		*r.listen = listen
		*r.dataDir = t.TempDir()
		_, err := r.security(key, zap.NewNop(), false, nil)
		if (err != nil) != wantErr || (err != nil && !strings.Contains(err.Error(), "--insecure-no-auth")) {
			t.Errorf("listen %s: %v", listen, err)
		}
		*r.insecure = true
		if _, err := r.security(key, zap.NewNop(), false, nil); err != nil {
			t.Errorf("listen %s with --insecure-no-auth: %v", listen, err)
		}
	}
	// --tls alone makes the development CA in the data dir.
	r := newRoleFlags("serve", nil)
	*r.dataDir = t.TempDir()
	sec, err := r.security(key, zap.NewNop(), true, []string{"10.0.0.7"})
	if err != nil || sec.TLS == nil || sec.ClientTLS == nil || sec.Scheme() != "grpc+tls://" {
		t.Fatalf("dev TLS: %+v, %v", sec, err)
	}
	if _, err := filepath.Glob(filepath.Join(*r.dataDir, "tls", "ca.pem")); err != nil {
		t.Fatal(err)
	}
}

func TestSQLCredentials(t *testing.T) {
	t.Setenv(TokenEnv, "")
	t.Setenv(UserEnv, "")
	t.Setenv(PasswordEnv, "")
	asked := ""
	prompt := func(msg string) (string, error) { asked = msg; return "typed", nil }
	o := sqlFlags{user: "ana"}
	if err := o.credentials(prompt); err != nil || o.password != "typed" || !strings.Contains(asked, "ana") {
		t.Fatalf("prompt: %v %q %q", err, o.password, asked)
	}
	t.Setenv(PasswordEnv, "from-env")
	o = sqlFlags{user: "ana"}
	if err := o.credentials(prompt); err != nil || o.password != "from-env" {
		t.Fatalf("env password: %v %q", err, o.password)
	}
	o = sqlFlags{user: "ana"}
	t.Setenv(PasswordEnv, "")
	if err := o.credentials(func(string) (string, error) { return "", errors.New("no terminal") }); err == nil || !strings.Contains(err.Error(), PasswordEnv) {
		t.Fatalf("no terminal: %v", err)
	}
	t.Setenv(TokenEnv, "tok")
	o = sqlFlags{user: "ana", password: "x"}
	if err := o.credentials(prompt); err != nil || o.token != "" {
		t.Fatalf("--user must win over $%s: %v, token %q", TokenEnv, err, o.token)
	}
	o = sqlFlags{}
	if err := o.credentials(prompt); err != nil || o.token != "tok" || o.user != "" {
		t.Fatalf("$%s: %v %+v", TokenEnv, err, o)
	}
	o = sqlFlags{user: "ana", token: "t"}
	if err := o.credentials(prompt); err == nil {
		t.Fatal("both --user and --token")
	}
}
