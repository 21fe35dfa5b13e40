package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/tlsconf"
	"github.com/icefloe/icefloe/wire"
)

// insecureUsage describes --insecure-no-auth.
const insecureUsage = "serve a non-loopback address without authentication (anyone who can reach it may read, write and drop every table)"

// redactedValue replaces a secret in printed configs.
const redactedValue = "<redacted>"

func (a *AuthConfig) users() []auth.User {
	out := make([]auth.User, len(a.Users))
	for i, u := range a.Users {
		out[i] = auth.User{Name: u.Name, PasswordHash: u.PasswordHash, Roles: u.Roles, Attributes: u.Attributes}
	}
	return out
}

func (a *AuthConfig) policy() (*authz.Policy, error) {
	roles := make([]authz.Role, len(a.Roles))
	for i, r := range a.Roles {
		roles[i] = authz.Role{Name: r.Name}
		for _, g := range r.Grants {
			privs := make([]authz.Privilege, len(g.Privileges))
			for j, p := range g.Privileges {
				privs[j] = authz.Privilege(p)
			}
			masks := make([]authz.Mask, len(g.Masks))
			for j, m := range g.Masks {
				masks[j] = authz.Mask{Column: m.Column, Expr: m.Expr}
			}
			roles[i].Grants = append(roles[i].Grants, authz.Grant{Privileges: privs, On: g.On, Where: g.Where, Masks: masks})
		}
	}
	return authz.NewPolicy(roles)
}

func (a *AuthConfig) jwks() *auth.JWKSOptions {
	if a.JWT == nil {
		return nil
	}
	j := a.JWT
	return &auth.JWKSOptions{File: j.JWKSFile, URL: j.JWKSURL, Issuer: j.Issuer, Audience: j.Audience,
		PrincipalClaim: j.PrincipalClaim, RolesClaim: j.RolesClaim, AttributeClaims: j.AttributeClaims, DefaultRoles: j.DefaultRoles}
}

// validate reports every problem of the auth section, naming its keys.
func (a *AuthConfig) validate() error {
	if a == nil {
		return nil
	}
	var errs []error
	if len(a.Users) == 0 && a.JWT == nil {
		errs = append(errs, errors.New("config: auth: no users and no jwt: nobody could log in"))
	}
	if a.TokenTTL < 0 {
		errs = append(errs, fmt.Errorf("config: auth.token_ttl: must be >= 0, got %s", a.TokenTTL))
	}
	if err := auth.ValidateUsers(a.users()); err != nil {
		errs = append(errs, fmt.Errorf("config: auth.users: %w", err))
	}
	policy, err := a.policy()
	if err != nil {
		errs = append(errs, fmt.Errorf("config: auth.roles: %w", err))
	}
	for _, u := range a.Users {
		for _, r := range u.Roles {
			if !policy.HasRole(r) {
				errs = append(errs, fmt.Errorf("config: auth.users: user %q has role %q, which auth.roles does not define", u.Name, r))
			}
		}
	}
	if j := a.jwks(); j != nil {
		if err := j.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("config: auth.jwt: %w", err))
		}
		for _, r := range j.DefaultRoles {
			if !policy.HasRole(r) {
				errs = append(errs, fmt.Errorf("config: auth.jwt.default_roles: role %q is not defined in auth.roles", r))
			}
		}
	}
	return errors.Join(errs...)
}

// redacted is a copy to print: password hashes are secrets too (they can
// be attacked offline), and a JWKS URL may carry a credential.
func (a *AuthConfig) redacted() *AuthConfig {
	if a == nil {
		return nil
	}
	r := *a
	r.Users = make([]UserConfig, len(a.Users))
	for i, u := range a.Users {
		if u.PasswordHash != "" {
			u.PasswordHash = redactedValue
		}
		r.Users[i] = u
	}
	if a.JWT != nil {
		j := *a.JWT
		if j.JWKSURL != "" {
			j.JWKSURL = auth.RedactURL(j.JWKSURL)
		}
		r.JWT = &j
	}
	return &r
}

func (t *TLSConfig) validate() error {
	switch {
	case t == nil:
		return nil
	case t.Dev && (t.CertFile != "" || t.KeyFile != ""):
		return errors.New("config: tls: dev makes its own certificate: give dev or cert_file and key_file, not both")
	case t.Dev:
		return nil
	}
	if err := (tlsconf.Options{CertFile: t.CertFile, KeyFile: t.KeyFile}).Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// isLoopback tells whether a listen host only accepts connections from
// this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkUsage describes --check of coordinator and worker.
const checkUsage = "parse the command line and config, run the start-up checks (ticket key, auth:, the listeners allowed without auth) and exit without starting"

// preflight runs the checks of security that decide whether the role
// may start — auth: builds, or each listener without it is allowed —
// without opening anything (no audit file, no listener).
func (r *roleFlags) preflight(key *wire.Key, log *zap.Logger) error {
	if a := r.cfg.Auth; a != nil {
		if _, err := a.policy(); err != nil {
			return err
		}
		_, err := auth.New(auth.Options{Key: key, Users: a.users(), TokenTTL: a.TokenTTL, JWKS: a.jwks(), Logger: log})
		return err
	}
	return r.openListeners(log)
}

// openListeners checks the listeners of a role without authentication:
// the Flight listener, the HTTP listener (whose status page lists
// and cancels every statement) and the REST catalog's each need a loopback address, or
// --insecure-no-auth, which logs a warning for each that has none.
func (r *roleFlags) openListeners(log *zap.Logger) error {
	httpAddr, _, err := r.httpListen()
	if err != nil {
		return err
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", *r.listen}, {"--http-addr", httpAddr}, {"--rest-addr", *r.restAddr}} {
		if l.addr == "" {
			continue
		}
		host, _, err := splitHost(l.addr)
		if err != nil {
			return err
		}
		if isLoopback(host) {
			continue
		}
		if !*r.insecure {
			return fmt.Errorf("%s %s is not a loopback address and authentication is off: configure auth: in the config file (see docs/security.md), or pass --insecure-no-auth to let anyone who can reach it in", l.flag, l.addr)
		}
		log.Warn("authentication is off on a non-loopback address: anyone who can reach it may read, write and drop every table", zap.String(l.flag[2:], l.addr))
	}
	return nil
}

// security builds what secures a role from the config and flags: the
// authenticator and policy of auth:, and TLS from tls: or devTLS (serve
// --tls), whose files go to the data dir for hosts. Without auth, a
// listener on a non-loopback host needs --insecure-no-auth.
func (r *roleFlags) security(key *wire.Key, log *zap.Logger, devTLS bool, hosts []string) (cluster.Security, error) {
	var sec cluster.Security
	host, _, err := splitHost(*r.listen)
	if err != nil {
		return sec, err
	}
	if a := r.cfg.Audit; a != nil {
		if sec.Audit, err = audit.Open(audit.Options{File: a.File, RedactLiterals: a.RedactLiterals, Logger: log}); err != nil {
			return sec, err
		}
	}
	if a := r.cfg.Auth; a != nil {
		if sec.Policy, err = a.policy(); err != nil {
			return sec, err
		}
		opts := auth.Options{Key: key, Users: a.users(), TokenTTL: a.TokenTTL, JWKS: a.jwks(), Logger: log}
		if sec.Audit != nil {
			opts.OnLogin = sec.Audit.Login
		}
		if sec.Auth, err = auth.New(opts); err != nil {
			return sec, err
		}
	} else if err := r.openListeners(log); err != nil {
		return sec, err
	}
	t := r.cfg.TLS
	if t == nil && !devTLS {
		return sec, nil
	}
	var files tlsconf.Options
	if devTLS || t.Dev {
		all := append([]string{"127.0.0.1", "::1", "localhost"}, hosts...)
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			all = append(all, host)
		}
		slices.Sort(all)
		dir := filepath.Join(*r.dataDir, "tls")
		if files, err = tlsconf.Dev(dir, slices.Compact(all)); err != nil {
			return sec, err
		}
		log.Info("TLS with a development CA: clients trust it with its certificate", zap.String("ca_file", files.CAFile))
	} else {
		files = tlsconf.Options{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile}
	}
	if sec.TLS, err = tlsconf.Server(files, log); err != nil {
		return sec, err
	}
	if sec.ClientTLS, err = tlsconf.Client(files.CAFile); err != nil {
		return sec, err
	}
	return sec, nil
}
