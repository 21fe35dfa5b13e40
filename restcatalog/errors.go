package restcatalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// Errors of this package; errorResponse maps them, and the errors of the
// packages below, to the REST specification's error types.
var (
	// ErrBadRequest: a request the specification does not allow, or one
	// icefloe cannot read (400).
	ErrBadRequest = errors.New("restcatalog: bad request")
	// ErrUnsupported: a request icefloe does not serve (406).
	ErrUnsupported = errors.New("restcatalog: not supported")
	// ErrCommitFailed: a requirement of a commit does not hold against
	// the table's current metadata; nothing was committed (409).
	ErrCommitFailed = errors.New("restcatalog: commit failed")
	// ErrCatalogNotFound: the prefix or warehouse names no catalog the
	// caller may see (404).
	ErrCatalogNotFound = errors.New("restcatalog: no such catalog")
	// ErrBusy: too many requests are in flight (503).
	ErrBusy = errors.New("restcatalog: too many requests in flight")
)

// errorModel is the body of every error answer (the specification's
// ErrorModel inside IcebergErrorResponse).
type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// errorKinds maps errors to status codes and exception types, first match
// first: the one table of this boundary.
var errorKinds = []struct {
	errs []error
	code int
	typ  string
}{
	{[]error{auth.ErrNoCredentials, auth.ErrBadPassword, auth.ErrBadToken, auth.ErrExpired}, http.StatusUnauthorized, "NotAuthorizedException"},
	{[]error{authz.ErrDenied, catalog.ErrLocation, catalog.ErrTaken}, http.StatusForbidden, "ForbiddenException"},
	{[]error{ErrCatalogNotFound}, http.StatusNotFound, "NoSuchWarehouseException"},
	{[]error{icecat.ErrNoSuchView}, http.StatusNotFound, "NoSuchViewException"},
	{[]error{icecat.ErrNoSuchTable, catalog.ErrTableNotFound}, http.StatusNotFound, "NoSuchTableException"},
	{[]error{icecat.ErrNoSuchNamespace, catalog.ErrSchemaNotFound}, http.StatusNotFound, "NoSuchNamespaceException"},
	{[]error{icecat.ErrNamespaceNotEmpty}, http.StatusConflict, "NamespaceNotEmptyException"},
	{[]error{icecat.ErrNamespaceAlreadyExists, icecat.ErrTableAlreadyExists, icecat.ErrViewAlreadyExists}, http.StatusConflict, "AlreadyExistsException"},
	{[]error{ErrCommitFailed, commit.ErrConflict, table.ErrCommitFailed, table.ErrCommitDiverged, commit.ErrAlreadyCommitted}, http.StatusConflict, "CommitFailedException"},
	{[]error{commit.ErrUnknown}, http.StatusInternalServerError, "CommitStateUnknownException"},
	{[]error{ErrUnsupported, catalog.ErrViewsUnsupported, catalog.ErrEncrypted}, http.StatusNotAcceptable, "UnsupportedOperationException"},
	{[]error{ErrBadRequest, icecat.ErrInvalidIdentifier, view.ErrInvalidViewMetadata, catalog.ErrNotApplied}, http.StatusBadRequest, "BadRequestException"},
	{[]error{ErrBusy, catalog.ErrUnavailable, catalog.ErrIncomplete}, http.StatusServiceUnavailable, "ServiceUnavailableException"},
}

// errorResponse is the status and body answering err. Messages are
// scrubbed of the catalogs' secrets (catalog.ScrubText).
func errorResponse(err error) (int, errorModel) {
	for _, k := range errorKinds {
		for _, e := range k.errs {
			if errors.Is(err, e) {
				return k.code, errorModel{Message: catalog.ScrubText(err.Error()), Type: k.typ, Code: k.code}
			}
		}
	}
	return http.StatusInternalServerError, errorModel{Message: catalog.ScrubText(err.Error()), Type: "InternalServerError", Code: http.StatusInternalServerError}
}

// writeError answers err.
func writeError(w http.ResponseWriter, err error) {
	code, m := errorResponse(err)
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="icefloe"`)
	}
	writeJSON(w, code, struct {
		Error errorModel `json:"error"`
	}{m})
}

// writeJSON answers v as JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, fmt.Appendf(nil, `{"error":{"message":"encode the answer","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// badRequest is an ErrBadRequest saying what is wrong.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
