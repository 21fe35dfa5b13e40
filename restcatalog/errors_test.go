package restcatalog

import (
	"fmt"
	"net/http"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// TestErrorResponses: the errors of the packages below answer with the
// specification's status codes and types, which clients map to their
// exceptions (pyiceberg and Java by code and type).
func TestErrorResponses(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		typ  string
	}{
		{auth.ErrBadPassword, http.StatusUnauthorized, "NotAuthorizedException"},
		{fmt.Errorf("x: %w", authz.ErrDenied), http.StatusForbidden, "ForbiddenException"},
		{catalog.ErrLocation, http.StatusForbidden, "ForbiddenException"},
		{fmt.Errorf("x: %w", catalog.ErrTaken), http.StatusForbidden, "ForbiddenException"},
		{fmt.Errorf("%w: t", catalog.ErrTableNotFound), http.StatusNotFound, "NoSuchTableException"},
		{icecat.ErrNoSuchNamespace, http.StatusNotFound, "NoSuchNamespaceException"},
		{icecat.ErrNoSuchView, http.StatusNotFound, "NoSuchViewException"},
		{icecat.ErrTableAlreadyExists, http.StatusConflict, "AlreadyExistsException"},
		{icecat.ErrNamespaceNotEmpty, http.StatusConflict, "NamespaceNotEmptyException"},
		{commit.ErrConflict, http.StatusConflict, "CommitFailedException"},
		{ErrCommitFailed, http.StatusConflict, "CommitFailedException"},
		{commit.ErrUnknown, http.StatusInternalServerError, "CommitStateUnknownException"},
		{ErrUnsupported, http.StatusNotAcceptable, "UnsupportedOperationException"},
		{badRequest("x"), http.StatusBadRequest, "BadRequestException"},
		{ErrBusy, http.StatusServiceUnavailable, "ServiceUnavailableException"},
		{fmt.Errorf("something else"), http.StatusInternalServerError, "InternalServerError"},
	} {
		code, m := errorResponse(c.err)
		if code != c.code || m.Type != c.typ || m.Code != c.code {
			t.Errorf("%v: got %d %s, want %d %s", c.err, code, m.Type, c.code, c.typ)
		}
	}
}
