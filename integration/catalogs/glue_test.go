//go:build catalogs

package catalogs

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/icefloe/icefloe/catalog"
)

// TestGlueS3 runs the round trip on AWS Glue with tables on S3, both
// served by moto on one port (path-style S3 through s3.endpoint). moto
// does not enforce Glue's VersionId locking, so no conflict test here.
func TestGlueS3(t *testing.T) {
	uri := startMoto(t, "warehouse")
	cfg := catalog.Config{Name: "glue", Type: "glue", Properties: map[string]string{
		"glue.endpoint":          uri,
		"glue.region":            "us-east-1",
		"glue.access-key-id":     "testing",
		"glue.secret-access-key": "testing",
		"warehouse":              "s3://warehouse/wh",
		"s3.endpoint":            uri,
		"s3.region":              "us-east-1",
		"s3.access-key-id":       "testing",
		"s3.secret-access-key":   "testing",
	}}
	s := startCluster(t, cfg)
	cnxn := connect(t, s.Addr())
	// Mounted catalogs are listed by GetCatalogs.
	rdr, err := cnxn.GetObjects(context.Background(), adbc.ObjectDepthCatalogs, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cats []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			cats = append(cats, col.ValueStr(i))
		}
	}
	rdr.Release()
	if strings.Join(cats, ",") != "glue,local" {
		t.Fatalf("GetCatalogs: %q, want glue and local", cats)
	}
	roundTrip(t, cnxn, cfg, "db1")
	// The data really is on S3.
	if rows := mustQuery(t, cnxn, `SELECT count(*) FROM glue.db1."t$files" WHERE file_path LIKE 's3://warehouse/wh/%'`); rows[0] != "2" {
		t.Fatalf("files on s3: %q", rows)
	}
}
