package integration

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	_ "github.com/apache/iceberg-go/catalog/rest"
)

// TestRESTCatalogConformance runs iceberg-go's catalog conformance suite
// (catalog/catalogtest: tables and namespaces, their properties, the
// errors of missing and existing ones) through iceberg-go's REST client
// against the coordinator's REST catalog.
func TestRESTCatalogConformance(t *testing.T) {
	s := StartCluster(t, Workers(1), RESTCatalog())
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog: func(t *testing.T) icecat.Catalog {
			cat, err := icecat.Load(context.Background(), "ice", iceberg.Properties{
				"type": "rest", "uri": s.Coordinator.RESTURL(), "warehouse": "local",
			})
			if err != nil {
				t.Fatalf("open the REST catalog: %v", err)
			}
			t.Cleanup(func() {
				if c, ok := cat.(icecat.Closer); ok {
					c.Close()
				}
			})
			return cat
		},
	})
}
