package tablecrypt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/encryption"
	iceio "github.com/apache/iceberg-go/io"
)

func testFS(t *testing.T) (*FS, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "t")
	key := make([]byte, 32)
	rand.Read(key)
	return NewFS(iceio.LocalFS{}, "file://"+root, key), root
}

func write(t *testing.T, f *FS, name string, p []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := f.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven writes cross block boundaries.
	for len(p) > 0 {
		n := min(len(p), 333331)
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	f, root := testFS(t)
	for _, n := range []int{0, 1, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 5} {
		data := bytes.Repeat([]byte("icefloe secret row "), n/19+1)[:n]
		name := filepath.Join(root, "data", "f.parquet")
		write(t, f, name, data)
		raw, _ := os.ReadFile(name)
		if n > 0 && bytes.Contains(raw, []byte("secret row")) {
			t.Fatal("plaintext in the encrypted file")
		}
		file, err := f.Open("file://" + name)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := file.Stat()
		if st.Size() != int64(n) {
			t.Fatalf("size %d, want %d", st.Size(), n)
		}
		got, err := io.ReadAll(file)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: read %d, %v", n, len(got), err)
		}
		if n > 10 {
			buf := make([]byte, 7)
			off := int64(n) - 9
			if _, err := file.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[off:off+7]) {
				t.Fatalf("ReadAt %d: %q %v", off, buf, err)
			}
			if pos, _ := file.Seek(-3, io.SeekEnd); pos != int64(n)-3 {
				t.Fatalf("seek %d", pos)
			}
		}
		file.Close()
	}
}

func TestTamperingDetected(t *testing.T) {
	f, root := testFS(t)
	a, b := filepath.Join(root, "data", "a.parquet"), filepath.Join(root, "data", "b.parquet")
	data := make([]byte, 2*blockSize+10)
	rand.Read(data)
	write(t, f, a, data)
	write(t, f, b, data)
	read := func(name string) error {
		file, err := f.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		_, err = io.ReadAll(file)
		return err
	}
	raw, _ := os.ReadFile(a)
	cases := map[string][]byte{
		"flipped bit":    append(bytes.Clone(raw[:100]), append([]byte{raw[100] ^ 1}, raw[101:]...)...),
		"last block cut": raw[:headerSize+2*(blockSize+overhead)],
		"blocks swapped": append(append(bytes.Clone(raw[:headerSize]), raw[headerSize+blockSize+overhead:headerSize+2*(blockSize+overhead)]...), append(raw[headerSize:headerSize+blockSize+overhead], raw[headerSize+2*(blockSize+overhead):]...)...),
		"not encrypted":  []byte("PAR1 plain parquet PAR1"),
	}
	for name, content := range cases {
		os.WriteFile(a, content, 0o644)
		if err := read(a); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v, want ErrDamaged", name, err)
		}
	}
	// A file moved to another path has another key.
	other, _ := os.ReadFile(b)
	os.WriteFile(a, other, 0o644)
	if err := read(a); !errors.Is(err, ErrDamaged) {
		t.Errorf("file under another name: %v", err)
	}
	if _, err := f.Open("/etc/passwd"); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("outside the location: %v", err)
	}
	// Metadata JSON stays readable by the catalog and other engines.
	meta := filepath.Join(root, "metadata", "00001-x.metadata.json")
	os.MkdirAll(filepath.Dir(meta), 0o755)
	if err := f.WriteFile(meta, []byte(`{"format-version":2}`)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(meta); string(raw) != `{"format-version":2}` {
		t.Fatalf("metadata JSON written as %q", raw)
	}
}

func TestStaticKMS(t *testing.T) {
	ctx := context.Background()
	k1 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	kms, err := LoadKMS(map[string]string{"kms-type": StaticKMS, StaticKeyPrefix + "k1": k1})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := NewTableKey(ctx, kms, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if key, err := TableKey(ctx, kms, "k1", wrapped); err != nil || len(key) != 32 {
		t.Fatalf("unwrap: %v", err)
	}
	other, _ := LoadKMS(map[string]string{"kms-type": StaticKMS, StaticKeyPrefix + "k1": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))})
	for _, c := range []struct {
		kms encryption.KeyManagementClient
		id  string
	}{{other, "k1"}, {kms, "k2"}} {
		_, err := TableKey(ctx, c.kms, c.id, wrapped)
		if !errors.Is(err, ErrKey) || strings.Contains(err.Error(), k1) {
			t.Errorf("key %s: %v", c.id, err)
		}
	}
	if kms, err := LoadKMS(nil); kms != nil || err != nil {
		t.Fatalf("no kms-type: %v %v", kms, err)
	}
	if _, err := LoadKMS(map[string]string{"kms-type": StaticKMS, StaticKeyPrefix + "k": "short"}); err == nil {
		t.Fatal("a bad static key was accepted")
	}
	if _, err := TableKey(ctx, nil, "k1", wrapped); !errors.Is(err, ErrNoKMS) {
		t.Fatalf("no KMS: %v", err)
	}
}

func TestKeysRedacted(t *testing.T) {
	f, _ := testFS(t)
	if s := f.String(); strings.Contains(s, string(f.key)) || !strings.Contains(s, "redacted") {
		t.Fatalf("String() = %q", s)
	}
}
