package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
)

// vaultCatalog is a SQL catalog on SQLite in dir whose KMS is the static
// one, holding kmsKeys (key id → base64 key); no kms-type when nil.
func vaultCatalog(dir string, kmsKeys map[string]string) catalog.Config {
	props := map[string]string{
		"uri":         "file:" + filepath.Join(dir, "vault.db"),
		"sql.dialect": "sqlite",
		"warehouse":   "file://" + filepath.Join(dir, "vault"),
	}
	if kmsKeys != nil {
		props["kms-type"] = tablecrypt.StaticKMS
		for id, k := range kmsKeys {
			props[tablecrypt.StaticKeyPrefix+id] = k
		}
	}
	return catalog.Config{Name: "vault", Type: catalog.TypeSQL, Properties: props}
}

// TestEncryptedTable: a table created with encryption.key-id is written
// (INSERT … VALUES on the coordinator, INSERT … SELECT, UPDATE and
// compaction on the workers, a merge-on-read DELETE) and read back as
// DuckDB reads the same rows; none of its files but the metadata JSON is
// readable as Parquet or Avro or shows a row or the key; tickets carry no
// key in clear; without the KMS key, or without a KMS, the table does not
// open and the error says why.
func TestEncryptedTable(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	key := base64.StdEncoding.EncodeToString(raw)
	s := StartCluster(t, Workers(2), Catalogs(vaultCatalog(dir, map[string]string{"k1": key})))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE SCHEMA vault.sales`)
	execUpdate(t, cnxn, `CREATE TABLE vault.sales.secret (id BIGINT NOT NULL, p INTEGER, s VARCHAR) PARTITIONED BY (p)
		WITH ('format-version' = '2', 'encryption.key-id' = 'k1', 'write.delete.mode' = 'merge-on-read')`)
	_, err := tryUpdate(t, cnxn, `CREATE TABLE vault.sales.nokey (id BIGINT) WITH ('encryption.key-id' = 'k9')`)
	wantStatus(t, err, adbc.StatusInvalidArgument)
	_, err = tryUpdate(t, cnxn, `CREATE TABLE plain (id BIGINT) WITH ('encryption.key-id' = 'k1')`)
	wantStatus(t, err, adbc.StatusInvalidArgument)

	ref := newRefTable(t, s)
	ref.exec(t, `CREATE TABLE secret (id BIGINT NOT NULL, p INTEGER, s VARCHAR)`)
	var vals []string
	for i := 1; i <= 30; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'topsecret-%d')", i, i%3, i))
	}
	for _, st := range []string{
		`INSERT INTO %s VALUES ` + strings.Join(vals, ", "),
		`INSERT INTO %s SELECT id + 100, p, s || '-copy' FROM %s WHERE id % 2 = 0`,
		`UPDATE %s SET s = 'topsecret-updated' WHERE id % 5 = 0`,
		`DELETE FROM %s WHERE id IN (7, 8, 107)`,
	} {
		want := ref.exec(t, strings.ReplaceAll(st, "%s", "secret"))
		if n := execUpdate(t, cnxn, strings.ReplaceAll(st, "%s", "vault.sales.secret")); n != want {
			t.Fatalf("%s: %d rows, DuckDB %d", st, n, want)
		}
	}
	mustQuery(t, cnxn, `CALL vault.system.rewrite_data_files(table => 'sales.secret', options => map('rewrite-all', 'true'))`)
	// Two position delete files in partition 1, merged into one (which
	// the walk below finds encrypted too).
	for _, st := range []string{`DELETE FROM %s WHERE id = 4`, `DELETE FROM %s WHERE id = 10`} {
		ref.exec(t, fmt.Sprintf(st, "secret"))
		execUpdate(t, cnxn, fmt.Sprintf(st, "vault.sales.secret"))
	}
	if res := mustQuery(t, cnxn, `CALL vault.system.rewrite_position_delete_files(table => 'sales.secret', options => map('min-input-files', '2'))`); !strings.HasPrefix(res.rows[0], "2 | 1 |") {
		t.Fatalf("rewrite_position_delete_files: %q", res.rows)
	}
	for _, q := range []string{`SELECT * FROM %s`, `SELECT p, count(*), max(s) FROM %s GROUP BY p`, `SELECT count(DISTINCT s) FROM %s`} {
		wantRows(t, cnxn, fmt.Sprintf(q, "vault.sales.secret"), ref.query(t, fmt.Sprintf(q, "secret"))...)
	}

	// The files: only metadata JSON in the clear.
	files := 0
	err = filepath.WalkDir(filepath.Join(dir, "vault"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".metadata.json") {
			if bytes.Contains(b, []byte(key)) || !bytes.Contains(b, []byte(tablecrypt.WrappedKeyProp)) {
				t.Errorf("%s: the metadata holds the key, or not the wrapped key", p)
			}
			return nil
		}
		files++
		switch {
		case !bytes.HasPrefix(b, []byte("AGS1")):
			t.Errorf("%s is not encrypted (starts %q)", p, b[:min(4, len(b))])
		case bytes.Contains(b, []byte("topsecret")), bytes.Contains(b, []byte("PAR1")), bytes.Contains(b, []byte("Obj\x01")):
			t.Errorf("%s shows plaintext", p)
		case bytes.Contains(b, raw):
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Fatalf("only %d encrypted files", files)
	}
	_, eps := partitions(t, cnxn, `SELECT * FROM vault.sales.secret`)
	for _, ep := range eps {
		tk := ep.Ticket.Ticket
		if bytes.Contains(tk, raw) || bytes.Contains(tk, []byte(key)) || bytes.Contains(tk, []byte("topsecret")) {
			t.Fatal("a ticket shows the table key")
		}
	}

	// The same catalog without the key, and without a KMS.
	for _, c := range []struct {
		keys map[string]string
		says string
	}{
		{map[string]string{"k2": key}, "does not know this key id"},
		{map[string]string{"k1": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))}, "does not open the table's wrapped key"},
		{nil, "no KMS configured"},
	} {
		other := StartCluster(t, Workers(1), Catalogs(vaultCatalog(dir, c.keys)))
		_, err := query(t, adbcConn(t, other.Addr()), `SELECT count(*) FROM vault.sales.secret`)
		var ae adbc.Error
		if !errors.As(err, &ae) || codes.Code(ae.VendorCode) != codes.FailedPrecondition {
			t.Fatalf("without the key: %v, want FAILED_PRECONDITION", err)
		}
		if msg := err.Error(); !strings.Contains(msg, `encrypted with KMS key "k1"`) || !strings.Contains(msg, c.says) || strings.Contains(msg, key) {
			t.Fatalf("without the key: %v, want it to say %q", err, c.says)
		}
	}
}
