package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// mountTmpfs mounts a tmpfs of size at dir for the test, unmounted at its
// end; it fails the test, saying why, where mounting is not allowed.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("a full disk is made with a small tmpfs, which needs root (CAP_SYS_ADMIN): mount at %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// TestFullDisk: with the warehouse on a small tmpfs, a write that fills
// it fails with RESOURCE_EXHAUSTED saying there is no space, commits
// nothing (the table at its snapshot, its rows unchanged), leaves no file
// the table does not list, and reads keep working; with the spill folder
// on another, a query that must spill past it fails the same way and the
// next one answers.
func TestFullDisk(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	mountTmpfs(t, filepath.Join(dir, "warehouse"), "24m")
	mountTmpfs(t, filepath.Join(dir, "spill"), "16m")
	cfg := filepath.Join(t.TempDir(), "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("memory_limit: 64MB\nthreads: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startProc(t, bin, nil, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", dir, "--workers", "1")
	cnxn := adbcConn(t, s.addr())
	seedTable(t, cnxn, "src", 1000)
	execUpdate(t, cnxn, `CREATE TABLE t (id BIGINT, s VARCHAR)`)
	execUpdate(t, cnxn, `INSERT INTO t SELECT id, md5(CAST(id AS VARCHAR)) FROM src`)
	snaps := mustQuery(t, cnxn, `SELECT count(*) FROM "t$snapshots"`).rows[0]
	strays := func() []string {
		files, err := filepath.Glob(filepath.Join(tableFolder(t, dir, "t"), "data", "*"))
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, p := range mustQuery(t, cnxn, `SELECT file_path FROM "t$files"`).rows {
			listed[strings.TrimPrefix(p, "file://")] = true
		}
		var out []string
		for _, f := range files {
			if !listed[f] {
				out = append(out, f)
			}
		}
		return out
	}
	// About 40 MB of random hex: more than the warehouse holds.
	fill := `INSERT INTO t SELECT a.id * 1000 + b.id, md5(random()::VARCHAR) || md5(random()::VARCHAR) FROM src a, src b`
	_, err := tryUpdate(t, cnxn, fill)
	if grpcCode(err) != codes.ResourceExhausted || !strings.Contains(strings.ToLower(err.Error()), "no space left on device") {
		t.Fatalf("a write that fills the warehouse: %v, want RESOURCE_EXHAUSTED saying no space is left", err)
	}
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "1000 | 499500")
	wantRows(t, cnxn, `SELECT count(*) FROM "t$snapshots"`, snaps)
	if left := strays(); len(left) > 0 {
		t.Fatalf("files of the failed write left in the table's folder: %v", left)
	}
	// A CTAS that fills it leaves no table, no staging folder.
	folders := schemaFolders(t, dir)
	_, err = tryUpdate(t, cnxn, `CREATE TABLE big AS SELECT a.id * 1000 + b.id AS id, md5(random()::VARCHAR) || md5(random()::VARCHAR) AS s FROM src a, src b`)
	if grpcCode(err) != codes.ResourceExhausted {
		t.Fatalf("a CTAS that fills the warehouse: %v, want RESOURCE_EXHAUSTED", err)
	}
	var ae adbc.Error
	if _, err := query(t, cnxn, `SELECT count(*) FROM big`); !errors.As(err, &ae) || ae.Code != adbc.StatusNotFound {
		t.Fatalf("the failed CTAS's table: %v, want none", err)
	}
	if left := strayStagingFiles(t, dir, folders); len(left) > 0 {
		t.Fatalf("files of the failed CTAS left: %v", left)
	}
	// A sort of about 150 MB, past the workers' 64 MB memory limit: it
	// must spill, past the spill folder's 16 MB.
	_, err = query(t, cnxn, `SELECT a.id, b.id, k, md5(CAST(a.id * b.id + k AS VARCHAR)) AS h FROM src a, src b, (VALUES (1), (2), (3)) v(k) ORDER BY h`)
	if grpcCode(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "max_temp_directory_size") && !strings.Contains(strings.ToLower(err.Error()), "no space left") {
		t.Fatalf("a sort past the spill folder: %v, want RESOURCE_EXHAUSTED saying the spill disk is full", err)
	}
	t.Logf("the sort past the spill folder: %v", err)
	// Reads and small writes keep working.
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "1000 | 499500")
	execUpdate(t, cnxn, `INSERT INTO t VALUES (-1, 'after')`)
	wantRows(t, cnxn, `SELECT count(*) FROM t`, "1001")
	t.Logf("full warehouse and spill folder: errors as wanted, %s snapshots before, nothing committed", snaps)

	// A disk with not one byte free: a compaction, and an INSERT, fail
	// with RESOURCE_EXHAUSTED saying so (not with a writer that is closed,
	// which iceberg-go answers once its file writer failed), and commit
	// nothing.
	// The compaction rewrites a few MB: its file writer fails on a page
	// it writes out, while batches are still coming.
	for k := range 2 {
		execUpdate(t, cnxn, fmt.Sprintf(`INSERT INTO t SELECT 1000000 + a.id * 1000 + b.id, md5(CAST(a.id * b.id + %d AS VARCHAR)) FROM src a, src b WHERE a.id < 100`, k))
	}
	rows := mustQuery(t, cnxn, `SELECT count(*), sum(id) FROM t`).rows[0]
	snaps = mustQuery(t, cnxn, `SELECT count(*) FROM "t$snapshots"`).rows[0]
	filler := filepath.Join(dir, "warehouse", "filler")
	fillDisk(t, filler)
	for _, q := range []string{
		`CALL system.rewrite_data_files(table => 't', options => map('min-input-files', '2'))`,
		`INSERT INTO t SELECT a.id * 1000 + b.id, md5(CAST(a.id + b.id AS VARCHAR)) FROM src a, src b WHERE a.id < 100`,
	} {
		_, err := query(t, cnxn, q)
		if grpcCode(err) != codes.ResourceExhausted || !strings.Contains(strings.ToLower(err.Error()), "no space left on device") {
			t.Fatalf("%s on a full disk: %v, want RESOURCE_EXHAUSTED saying no space is left", q, err)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, rows)
	wantRows(t, cnxn, `SELECT count(*) FROM "t$snapshots"`, snaps)
	if left := strays(); len(left) > 0 {
		t.Fatalf("files of the writes on a full disk left in the table's folder: %v", left)
	}
}

// fillDisk writes path until its file system has not one byte left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4096, 1} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
	}
	if _, err := f.Write([]byte{0}); err == nil {
		t.Fatal("the disk took another byte")
	}
}
