package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/internal/auth"
)

// runPasswd is `icefloe passwd`: it reads a password (twice, without echo,
// on a terminal; one line otherwise) and prints its bcrypt hash for a
// user's password_hash.
func runPasswd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cost := fs.Int("cost", bcrypt.DefaultCost, fmt.Sprintf("bcrypt cost, %d to %d", bcrypt.MinCost, bcrypt.MaxCost))
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: icefloe passwd [--cost N] < password\n\nPrints the bcrypt hash of a password, for password_hash in the auth.users of the config.\nOn a terminal it asks twice without echo; otherwise it reads one line.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New("passwd takes no arguments: the password is read, never given on the command line")
	}
	var pw string
	if prompt := terminalPrompt(stderr); isTerminal(stdin) {
		first, err := prompt("Password: ")
		if err != nil {
			return err
		}
		again, err := prompt("Again: ")
		if err != nil {
			return err
		}
		if first != again {
			return errors.New("the passwords differ")
		}
		pw = first
	} else {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("read the password: %w", err)
		}
		pw = strings.TrimRight(line, "\r\n")
	}
	if pw == "" {
		return errors.New("empty password")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		return fmt.Errorf("hash: %w", err)
	}
	fmt.Fprintln(stdout, string(hash))
	return nil
}

// runToken is `icefloe token`: an operator with the config (and so the
// cluster key) issues a bearer token for a configured user, e.g. for a
// service that cannot do basic auth.
func runToken(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the cluster's YAML config (ticket_key and auth.users)")
	user := fs.String("user", "", "the configured user the token is for")
	ttl := fs.Duration("ttl", 0, "lifetime (default auth.token_ttl, else "+auth.DefaultTokenTTL.String()+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	if cfg.Auth == nil {
		return errors.New("token: the config has no auth section")
	}
	r := &roleFlags{cfg: cfg}
	key, err := r.key(true)
	if err != nil {
		return err
	}
	a, err := auth.New(auth.Options{Key: key, Users: cfg.Auth.users(), TokenTTL: cfg.Auth.TokenTTL})
	if err != nil {
		return err
	}
	var p *auth.Principal
	for _, u := range cfg.Auth.Users {
		if u.Name == *user {
			p = &auth.Principal{Name: u.Name, Roles: u.Roles, Method: auth.MethodToken}
		}
	}
	if p == nil {
		return fmt.Errorf("token: no user %q in auth.users", *user)
	}
	tok, exp, err := a.Issue(p, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	fmt.Fprintf(stderr, "token for %s, valid until %s\n", p.Name, exp.UTC().Format(time.RFC3339))
	return nil
}
