// Package auth authenticates the callers of icefloe's Flight services, on
// the coordinator and on every worker alike.
//
// A caller is a Principal: a user from the config file who logged in with
// a password (Flight SQL basic auth: a Handshake, or any call, carrying
// `authorization: Basic …`), the holder of a bearer token icefloe issued
// for such a login (signed with a key derived from the cluster key,
// expiring, naming the principal and its roles), the holder of an external
// JWT that a configured JWKS verifies (issuer and audience checked), or
// icefloe itself calling between its own processes with a cluster token.
// Workers verify every kind of token locally: they share the cluster key
// and the JWKS, never calling the coordinator.
//
// Authenticator.ServerOptions installs the check on every RPC of a gRPC
// server, unary and streaming; the standard health service stays open for
// probes. The interceptors are the authentication boundary and answer
// Unauthenticated themselves, with a message that names the problem and
// never the secret.
//
// Tokens are JWTs made and checked with github.com/go-jose/go-jose/v4,
// chosen because one well-kept library covers both the JWT claims
// (issuer, audience, expiry with leeway) and JWKS key sets, and it was
// already in the module graph; passwords are bcrypt hashes
// (golang.org/x/crypto/bcrypt).
package auth
