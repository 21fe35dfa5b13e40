package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func testTicket() *Ticket {
	return &Ticket{
		QueryID:   "q1",
		ExpiresAt: time.Now().Add(time.Hour),
		SQL:       "SELECT * FROM t0",
		Scans: []Scan{{
			View: "t0", Table: "local.default.t", MetadataLocation: "file:///w/t/metadata/00001.json",
			Columns: []string{"id"}, Tasks: []Task{{SpecID: 0, Data: []byte{1, 2, 3}}},
			Props: map[string]string{"s3.secret-access-key": "hunter2"},
		}},
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	k, err := RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	in := testTicket()
	sealed, err := k.Seal(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) || bytes.Contains(sealed, []byte("SELECT")) {
		t.Fatal("sealed ticket shows its contents")
	}
	out, err := k.Open(sealed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if out.SQL != in.SQL || out.Scans[0].Props["s3.secret-access-key"] != "hunter2" || !bytes.Equal(out.Scans[0].Tasks[0].Data, []byte{1, 2, 3}) {
		t.Fatalf("round trip lost data: %+v", out)
	}
	if out.Version != FormatVersion {
		t.Fatalf("version %d", out.Version)
	}
}

func TestOpenRefuses(t *testing.T) {
	k, _ := RandomKey()
	other, _ := RandomKey()
	sealed, err := k.Seal(testTicket())
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)/2] ^= 1
	wrongVersion := bytes.Clone(sealed)
	wrongVersion[3] = FormatVersion + 1
	expired := testTicket()
	expired.ExpiresAt = time.Now().Add(-time.Second)
	expiredSealed, err := k.Seal(expired)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		key    *Key
		sealed []byte
		want   error
	}{
		{"tampered", k, tampered, ErrUnsealed},
		{"foreign key", other, sealed, ErrUnsealed},
		{"expired", k, expiredSealed, ErrExpired},
		{"version", k, wrongVersion, ErrVersion},
		{"garbage", k, []byte("hello"), ErrMalformed},
		{"empty", k, nil, ErrMalformed},
		{"truncated", k, sealed[:10], ErrMalformed},
	}
	for _, c := range cases {
		_, err := c.key.Open(c.sealed, time.Now())
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := k.Seal(&Ticket{SQL: "x"}); err == nil {
		t.Error("sealed a ticket without expiry")
	}
}

func TestSecretsRedacted(t *testing.T) {
	k, _ := KeyFromPassphrase("correct horse battery staple")
	for _, s := range []string{k.String(), fmt.Sprintf("%v %+v %#v", k, k, k), testTicket().String(), testTicket().Scans[0].String()} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "horse") {
			t.Errorf("secret in %q", s)
		}
	}
	if _, err := KeyFromPassphrase(""); err == nil {
		t.Error("empty passphrase accepted")
	}
}

func FuzzOpen(f *testing.F) {
	k, _ := KeyFromPassphrase("fuzz")
	sealed, _ := k.Seal(testTicket())
	f.Add(sealed)
	f.Add([]byte("IFT\x02"))
	f.Add([]byte{})
	f.Add(append([]byte("IFT\x02"), make([]byte, 40)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := k.Open(data, time.Now())
		if err == nil && tk == nil {
			t.Fatal("nil ticket without error")
		}
	})
}

// sealPlain seals arbitrary plaintext, so fuzzing reaches the decoder
// behind the seal.
func sealPlain(k *Key, plain []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	out := append(bytes.Clone(header), nonce...)
	return k.aead.Seal(out, nonce, plain, header)
}

func FuzzOpenPlaintext(f *testing.F) {
	k, _ := KeyFromPassphrase("fuzz")
	f.Add([]byte{})
	f.Add([]byte("not deflate"))
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, plain []byte) {
		tk, err := k.Open(sealPlain(k, plain), time.Now())
		if err == nil && tk == nil {
			t.Fatal("nil ticket without error")
		}
	})
}

func TestDerive(t *testing.T) {
	a, _ := KeyFromPassphrase("one")
	b, _ := KeyFromPassphrase("one")
	c, _ := KeyFromPassphrase("two")
	x, err := a.Derive("tokens", 32)
	if err != nil || len(x) != 32 {
		t.Fatalf("derive: %d bytes, %v", len(x), err)
	}
	y, _ := b.Derive("tokens", 32)
	z, _ := a.Derive("cluster", 32)
	w, _ := c.Derive("tokens", 32)
	if !bytes.Equal(x, y) {
		t.Error("the same key and purpose derived different bytes")
	}
	if bytes.Equal(x, z) || bytes.Equal(x, w) {
		t.Error("another purpose or key derived the same bytes")
	}
}
