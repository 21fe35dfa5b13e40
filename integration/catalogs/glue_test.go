//go:build catalogs

package catalogs

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	iceio "github.com/apache/iceberg-go/io"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/orphans"
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
	// iceberg-go's Glue catalog keeps no views.
	_, err = query(t, cnxn, "CREATE VIEW glue.db1.v AS SELECT 1 AS x")
	wantCode(t, err, codes.Unimplemented, "glue", "")
	// The data really is on S3.
	if rows := mustQuery(t, cnxn, `SELECT count(*) FROM glue.db1."t$files" WHERE file_path LIKE 's3://warehouse/wh/%'`); rows[0] != "2" {
		t.Fatalf("files on s3: %q", rows)
	}
}

// TestS3CancelledWrite: an INSERT cancelled by its client while its
// workers write to S3 commits nothing and leaves no object of the
// statement under the table: workers and coordinator list the table's
// location through its S3 IO and delete every file carrying the
// statement's UUID, also the ones no fragment got to report.
func TestS3CancelledWrite(t *testing.T) {
	uri := startMoto(t, "warehouse")
	cfg := catalog.Config{Name: "glue", Type: "glue", Properties: map[string]string{
		"glue.endpoint": uri, "glue.region": "us-east-1",
		"glue.access-key-id": "testing", "glue.secret-access-key": "testing",
		"warehouse":   "s3://warehouse/wh",
		"s3.endpoint": uri, "s3.region": "us-east-1",
		"s3.access-key-id": "testing", "s3.secret-access-key": "testing",
	}}
	s := startCluster(t, cfg)
	cnxn := connect(t, s.Addr())
	run(t, cnxn, "CREATE SCHEMA glue.db2")
	run(t, cnxn, `CREATE TABLE glue.db2.big (id BIGINT, pad VARCHAR) WITH ('write.target-file-size-bytes' = '131072')`)
	run(t, cnxn, `INSERT INTO glue.db2.big VALUES (1, 'kept')`)
	run(t, cnxn, `CREATE TABLE local.default.n10 (i BIGINT)`)
	run(t, cnxn, `INSERT INTO local.default.n10 VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)`)
	ref := catalog.TableRef{Catalog: "glue", Schema: "db2", Table: "big"}
	objects := func() []string {
		t.Helper()
		p, err := s.Mounts.LoadTable(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		fsys, err := p.Table.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		err = fsys.(iceio.ListableIO).WalkDir(p.Table.Location()+"/data", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	before := objects()
	if len(before) != 1 {
		t.Fatalf("objects before: %q", before)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`INSERT INTO glue.db2.big SELECT a.i * 100000 + b.i * 10000 + c.i * 1000 + d.i * 100 + e.i * 10 + f.i,
			md5(CAST(a.i + b.i * 7 + c.i * 13 + d.i * 17 + e.i * 19 + f.i AS VARCHAR)) || md5(CAST(f.i AS VARCHAR))
			FROM local.default.n10 a, local.default.n10 b, local.default.n10 c, local.default.n10 d, local.default.n10 e, local.default.n10 f`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := stmt.ExecuteUpdate(ctx)
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for len(objects()) <= len(before) {
		select {
		case err := <-done:
			t.Fatalf("the INSERT ended before it was cancelled (err %v): make it bigger", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the INSERT wrote no object in 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled INSERT succeeded")
		}
		t.Logf("statement failed as it should: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the INSERT did not end after it was cancelled")
	}
	// The cancellation reaches the coordinator and the workers
	// asynchronously; their clean-up is done when no object is left.
	for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait) && len(objects()) != len(before); {
		time.Sleep(100 * time.Millisecond)
	}
	if after := objects(); !slices.Equal(after, before) {
		t.Fatalf("objects left behind on S3: %d, want %d (%q…)", len(after), len(before), after[:min(len(after), 3)])
	}
	p, err := s.Mounts.LoadTable(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Table.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the failed INSERT, want 1", n)
	}
	// The sweep itself on S3: files of one write, in partition
	// directories and not, go; another write's file stays.
	fsys, err := p.Table.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	loc := p.Table.Location() + "/data/"
	for _, name := range []string{"00000-0-aaaaaaaa-bbbb-cccc-dddd-000001000000-00001.parquet",
		"k=1/00001-1-aaaaaaaa-bbbb-cccc-dddd-000002000000-00001.parquet",
		"00000-0-99999999-bbbb-cccc-dddd-000001000000-00001.parquet"} {
		if err := fsys.(iceio.WriteFileIO).WriteFile(loc+name, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := orphans.Remove(context.Background(), fsys, p.Table.Location(), "aaaaaaaa-bbbb-cccc-dddd-"); n != 2 || err != nil {
		t.Fatalf("sweep on S3 removed %d, %v", n, err)
	}
	if after := objects(); len(after) != len(before)+1 || !slices.Contains(after, loc+"00000-0-99999999-bbbb-cccc-dddd-000001000000-00001.parquet") {
		t.Fatalf("after the sweep: %q", after)
	}
}
