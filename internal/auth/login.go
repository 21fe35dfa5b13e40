package auth

import (
	"context"
	"errors"
	"time"
)

// Login checks a user's password as a Basic login of a call is checked,
// reporting it the same way (OnLogin), and issues the user's bearer
// token: what an OAuth2 client-credentials request (the Iceberg REST
// catalog's token endpoint) asks. client is the caller's address and rpc
// names the request, for the report.
func (a *Authenticator) Login(ctx context.Context, user, password, client, rpc string) (p *Principal, token string, expires time.Time, err error) {
	ev := LoginEvent{User: user, Method: MethodPassword, Client: client, RPC: rpc}
	defer func() {
		ev.Err = err
		a.report(ctx, ev)
	}()
	if p, err = a.Password(user, password); err != nil {
		return nil, "", time.Time{}, err
	}
	token, expires, err = a.Issue(p, 0)
	return p, token, expires, err
}

// Exchange verifies a bearer token (icefloe's own or an external JWT)
// and issues a fresh icefloe token for its principal (OAuth2 token
// exchange, which REST catalog clients use to refresh their token). A
// failure is reported as a failed authentication; a cluster token is
// never exchanged, nor a token of a session older than MaxSession.
func (a *Authenticator) Exchange(ctx context.Context, subject, client, rpc string) (p *Principal, token string, expires time.Time, err error) {
	defer func() {
		if err != nil {
			a.report(ctx, LoginEvent{Method: MethodToken, Client: client, RPC: rpc, Err: err})
		}
	}()
	if p, err = a.Verify(ctx, subject); err != nil {
		return nil, "", time.Time{}, err
	}
	if p.Cluster() {
		return nil, "", time.Time{}, errors.Join(ErrBadToken, errors.New("the cluster token is not exchanged"))
	}
	if p.Method == MethodToken && !p.LoggedIn.IsZero() && time.Since(p.LoggedIn) > MaxSession {
		return nil, "", time.Time{}, ErrExpired
	}
	token, expires, err = a.Issue(p, 0)
	return p, token, expires, err
}
