package catalog

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/smithy-go"
)

// Errors a catalog call is classified into; the message names the catalog,
// never its credentials.
var (
	// ErrUnavailable: the catalog (or its token endpoint) could not be
	// reached, or answered that it is unavailable.
	ErrUnavailable = errors.New("catalog: catalog unreachable")
	// ErrUnauthenticated: the catalog refused the configured credentials.
	ErrUnauthenticated = errors.New("catalog: catalog refused the credentials")
)

// classified is an error already tagged with its catalog.
type classified struct {
	kind    error
	catalog string
	err     error
}

func (e *classified) Error() string {
	return fmt.Sprintf("%s (catalog %q): %v", e.kind.Error(), e.catalog, e.err)
}

func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

// classify tags err from a call to catalog name with ErrUnavailable or
// ErrUnauthenticated when it is one of those; other errors come back as
// they are.
func classify(name string, err error) error {
	if err == nil {
		return nil
	}
	var c *classified
	if errors.As(err, &c) {
		return err
	}
	switch {
	case errors.Is(err, ErrUnauthenticated),
		errors.Is(err, rest.ErrUnauthorized),
		errors.Is(err, rest.ErrAuthorizationExpired),
		errors.Is(err, rest.ErrOAuthError):
		return &classified{kind: ErrUnauthenticated, catalog: name, err: err}
	case errors.Is(err, ErrUnavailable),
		errors.Is(err, rest.ErrServiceUnavailable),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return &classified{kind: ErrUnavailable, catalog: name, err: err}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException",
			"InvalidClientTokenId", "SignatureDoesNotMatch", "AccessDeniedException", "ExpiredToken":
			return &classified{kind: ErrUnauthenticated, catalog: name, err: err}
		case "ServiceUnavailableException", "ThrottlingException", "InternalServiceException":
			return &classified{kind: ErrUnavailable, catalog: name, err: err}
		}
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return &classified{kind: ErrUnavailable, catalog: name, err: err}
	}
	// PostgreSQL: password authentication failed (SQLSTATE 28P01/28000).
	if msg := err.Error(); strings.Contains(msg, "SQLSTATE=28P01") || strings.Contains(msg, "SQLSTATE=28000") ||
		strings.Contains(msg, "password authentication failed") {
		return &classified{kind: ErrUnauthenticated, catalog: name, err: err}
	}
	return err
}
