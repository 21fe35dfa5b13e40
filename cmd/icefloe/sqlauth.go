package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/term"
	"google.golang.org/grpc/metadata"
)

// Environment variables `icefloe sql` reads credentials from. Their values
// are never printed, not even as a flag's default in -h.
const (
	TokenEnv    = "ICEFLOE_TOKEN"
	UserEnv     = "ICEFLOE_USER"
	PasswordEnv = "ICEFLOE_PASSWORD"
)

// addAuthFlags registers the credential flags of `icefloe sql`.
func addAuthFlags(fs *flag.FlagSet, o *sqlFlags) {
	fs.StringVar(&o.token, "token", "", "bearer token sent to the coordinator and workers (default $"+TokenEnv+")")
	fs.StringVar(&o.user, "user", "", "log in as this user (Flight SQL basic auth; default $"+UserEnv+")")
	fs.StringVar(&o.password, "password", "", "the user's password (default $"+PasswordEnv+", else asked for on the terminal)")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM file of the CAs that sign the servers' certificates (grpc+tls), instead of the system's")
}

// credentials fills the credentials not given as flags from the
// environment, and asks for the password on the terminal when a user has
// none. prompt reads a password without echo.
func (o *sqlFlags) credentials(prompt func(string) (string, error)) error {
	if o.user != "" && o.token != "" {
		return errors.New("give --user or --token, not both")
	}
	// A flag wins over the environment; a token over a user.
	if o.user == "" && o.token == "" {
		o.token = os.Getenv(TokenEnv)
	}
	if o.user == "" && o.token == "" {
		o.user = os.Getenv(UserEnv)
	}
	if o.user != "" && o.password == "" {
		o.password = os.Getenv(PasswordEnv)
	}
	if o.user != "" && o.password == "" {
		pw, err := prompt(fmt.Sprintf("Password for %s: ", o.user))
		if err != nil {
			return fmt.Errorf("--user %s needs a password: give --password, set %s or run on a terminal (%v)", o.user, PasswordEnv, err)
		}
		o.password = pw
	}
	return nil
}

// isTerminal tells whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalPrompt asks for a password on the terminal (stdin when it is
// one, else /dev/tty), without echo.
func terminalPrompt(stderr io.Writer) func(string) (string, error) {
	return func(msg string) (string, error) {
		tty := os.Stdin
		if !term.IsTerminal(int(tty.Fd())) {
			f, err := os.Open("/dev/tty")
			if err != nil {
				return "", errors.New("no terminal")
			}
			defer f.Close()
			tty = f
		}
		if !term.IsTerminal(int(tty.Fd())) {
			return "", errors.New("no terminal")
		}
		fmt.Fprint(stderr, msg)
		pw, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(stderr)
		return string(pw), err
	}
}

// bearer is the authorization every call of a client carries, set once
// the client logged in.
type bearer struct{ v atomic.Pointer[string] }

func (b *bearer) set(token string) { v := "Bearer " + token; b.v.Store(&v) }

func (b *bearer) authorization(context.Context) (string, error) {
	if v := b.v.Load(); v != nil {
		return *v, nil
	}
	return "", nil
}

// login runs Flight SQL basic auth (a Handshake with the user and
// password) and makes every later call, at the coordinator and at the
// workers, carry the bearer token the coordinator answered.
func (c *sqlClient) login(ctx context.Context, o sqlFlags) error {
	if o.user == "" {
		return nil
	}
	authed, err := c.cl.Client.AuthenticateBasicToken(ctx, o.user, o.password)
	if err != nil {
		return fmt.Errorf("log in as %s: %w", o.user, rpcErr(err))
	}
	md, _ := metadata.FromOutgoingContext(authed)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			c.auth.set(tok)
			return nil
		}
	}
	return fmt.Errorf("log in as %s: the server answered no bearer token", o.user)
}
