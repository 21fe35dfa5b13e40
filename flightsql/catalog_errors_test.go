package flightsql

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
)

// Catalog failures keep their code through ToStatus and name the catalog.
func TestToStatusCatalogErrors(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	_, _, err := catalog.Open(context.Background(), catalog.Config{Name: "lake", Type: catalog.TypeREST, Properties: map[string]string{"uri": url}})
	st := status.Convert(ToStatus(err))
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "lake") {
		t.Errorf("unreachable: %v", st)
	}

	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"invalid_client"}`))
	}))
	defer tokens.Close()
	_, _, err = catalog.Open(context.Background(), catalog.Config{Name: "lake", Type: catalog.TypeREST, Properties: map[string]string{
		"uri": tokens.URL, "credential": "id:the-secret",
	}})
	st = status.Convert(ToStatus(err))
	if st.Code() != codes.Unauthenticated || !strings.Contains(st.Message(), "lake") || strings.Contains(st.Message(), "the-secret") {
		t.Errorf("refused: %v", st)
	}
}
