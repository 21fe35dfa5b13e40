package wire

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// writers recycles flate writers: making one allocates its ~1 MB of
// state, more than compressing a small ticket costs.
var writers sync.Pool

// KeySize is the size of a cluster key in bytes.
const KeySize = 32

// maxTicketSize bounds what Open decompresses, so a hostile ticket cannot
// exhaust memory.
const maxTicketSize = 256 << 20

// header starts every sealed ticket: magic and format version.
var header = []byte{'I', 'F', 'T', FormatVersion}

// Errors returned by Open. They say nothing about the key.
var (
	ErrMalformed = errors.New("wire: malformed ticket")
	ErrVersion   = errors.New("wire: unsupported ticket version")
	ErrUnsealed  = errors.New("wire: ticket not valid for this cluster")
	ErrExpired   = errors.New("wire: ticket expired")
)

// Key is the cluster key that seals and opens tickets. Its String and
// GoString never show the key.
type Key struct {
	aead   cipher.AEAD
	secret []byte
}

// NewKey returns a key from 32 bytes of secret material.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) != KeySize {
		return nil, fmt.Errorf("wire: cluster key must be %d bytes, got %d", KeySize, len(secret))
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("wire: cluster key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("wire: cluster key: %w", err)
	}
	return &Key{aead: aead, secret: bytes.Clone(secret)}, nil
}

// Derive returns n bytes of key material for purpose, derived from the
// cluster key with HKDF-SHA256, so other secrets of the cluster (the
// signing key of its tokens) need no key of their own and reveal nothing
// about the ticket key. Different purposes give unrelated keys.
func (k *Key) Derive(purpose string, n int) ([]byte, error) {
	out, err := hkdf.Key(sha256.New, k.secret, nil, "icefloe "+purpose, n)
	if err != nil {
		return nil, fmt.Errorf("wire: derive key: %w", err)
	}
	return out, nil
}

// KeyFromPassphrase derives a key from a passphrase of any length with
// SHA-256, for keys given in config or the environment.
func KeyFromPassphrase(pass string) (*Key, error) {
	if pass == "" {
		return nil, errors.New("wire: empty cluster key")
	}
	sum := sha256.Sum256([]byte(pass))
	return NewKey(sum[:])
}

// RandomKey returns a fresh random key, for a single-process cluster.
func RandomKey() (*Key, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("wire: random key: %w", err)
	}
	return NewKey(secret)
}

func (k *Key) String() string   { return "wire.Key(redacted)" }
func (k *Key) GoString() string { return k.String() }

// Seal encodes, compresses and seals t. It sets t.Version. A ticket must
// have an expiry.
func (k *Key) Seal(t *Ticket) ([]byte, error) {
	if t.ExpiresAt.IsZero() {
		return nil, errors.New("wire: ticket without expiry")
	}
	t.Version = FormatVersion
	var plain bytes.Buffer
	zw, _ := writers.Get().(*flate.Writer)
	if zw == nil {
		var err error
		if zw, err = flate.NewWriter(&plain, flate.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&plain)
	}
	defer writers.Put(zw)
	if err := json.NewEncoder(zw).Encode(t); err != nil {
		return nil, fmt.Errorf("wire: encode ticket: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("wire: nonce: %w", err)
	}
	out := make([]byte, 0, len(header)+len(nonce)+plain.Len()+k.aead.Overhead())
	out = append(out, header...)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plain.Bytes(), header), nil
}

// Open checks, unseals and decodes a ticket sealed by Seal, and refuses it
// if it has expired at now. Errors are ErrMalformed, ErrVersion, ErrUnsealed
// or ErrExpired and carry no detail about the key.
func (k *Key) Open(sealed []byte, now time.Time) (*Ticket, error) {
	if len(sealed) < len(header) || !bytes.Equal(sealed[:3], header[:3]) {
		return nil, ErrMalformed
	}
	if sealed[3] != FormatVersion {
		return nil, ErrVersion
	}
	rest := sealed[len(header):]
	ns := k.aead.NonceSize()
	if len(rest) < ns+k.aead.Overhead() {
		return nil, ErrMalformed
	}
	plain, err := k.aead.Open(nil, rest[:ns], rest[ns:], sealed[:len(header)])
	if err != nil {
		return nil, ErrUnsealed
	}
	zr := flate.NewReader(bytes.NewReader(plain))
	defer zr.Close()
	data, err := io.ReadAll(io.LimitReader(zr, maxTicketSize+1))
	if err != nil || len(data) > maxTicketSize {
		return nil, ErrMalformed
	}
	var t Ticket
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, ErrMalformed
	}
	if t.Version != FormatVersion {
		return nil, ErrVersion
	}
	if t.ExpiresAt.IsZero() || !now.Before(t.ExpiresAt) {
		return nil, ErrExpired
	}
	return &t, nil
}
