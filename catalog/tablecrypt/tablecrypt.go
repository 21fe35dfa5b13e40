package tablecrypt

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/encryption"
)

// Table and storage properties.
const (
	// KeyIDProp is Iceberg's table property naming the KMS key that wraps
	// the table's key.
	KeyIDProp = "encryption.key-id"
	// WrappedKeyProp holds the table key wrapped by the KMS (base64).
	WrappedKeyProp = "icefloe.encryption.wrapped-key"
	// TableKeyProp is the storage property that carries the plain table
	// key (base64) to the workers inside sealed tickets. Its name marks it
	// secret for catalog.Redacted.
	TableKeyProp = "icefloe.encryption.table-key-secret"
	// StaticKMS is the KMS type (catalog property kms-type) whose keys
	// are catalog properties StaticKeyPrefix+<key id> = base64 of 16, 24
	// or 32 bytes: for tests and single-operator setups. A cloud KMS is
	// plugged the same way, by registering a factory with
	// encryption.RegisterKMS and naming it in kms-type.
	StaticKMS       = "static"
	StaticKeyPrefix = "kms.static.secret."
)

// Errors of this package.
var (
	// ErrNoKMS: the table is encrypted but its catalog has no KMS.
	ErrNoKMS = errors.New("tablecrypt: no KMS configured")
	// ErrKey: the KMS could not produce the table key (unknown key id,
	// wrong key, KMS unreachable).
	ErrKey = errors.New("tablecrypt: table key unavailable")
	// ErrDamaged: an encrypted file failed authentication or is malformed.
	ErrDamaged = errors.New("tablecrypt: encrypted file damaged or not the table's")
)

func init() {
	encryption.RegisterKMS(StaticKMS, func(props map[string]string) (encryption.KeyManagementClient, error) {
		c := encryption.NewInMemoryKeyManagementClient()
		for k, v := range props {
			id, ok := strings.CutPrefix(k, StaticKeyPrefix)
			if !ok {
				continue
			}
			key, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("tablecrypt: static KMS key %q is not base64", id)
			}
			if err := c.AddKey(id, key); err != nil {
				return nil, fmt.Errorf("tablecrypt: static KMS key %q: want 16, 24 or 32 bytes", id)
			}
		}
		return c, nil
	})
}

// LoadKMS returns the KMS catalog properties configure (kms-type), or nil
// when they configure none.
func LoadKMS(props map[string]string) (encryption.KeyManagementClient, error) {
	if props[encryption.KMSTypeKey] == "" {
		return nil, nil
	}
	kms, err := encryption.LoadKeyManagementClient(props)
	if err != nil {
		return nil, fmt.Errorf("tablecrypt: kms-type %q: %w", props[encryption.KMSTypeKey], err)
	}
	return kms, nil
}

// NewTableKey makes a table key and returns it wrapped by kms under keyID,
// base64-encoded for WrappedKeyProp.
func NewTableKey(ctx context.Context, kms encryption.KeyManagementClient, keyID string) (string, error) {
	if kms == nil {
		return "", ErrNoKMS
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	wrapped, err := kms.WrapKey(ctx, keyID, key)
	if err != nil {
		return "", fmt.Errorf("%w: wrap with key %q: %v", ErrKey, keyID, kmsReason(err))
	}
	return base64.StdEncoding.EncodeToString(wrapped), nil
}

// TableKey unwraps a table's key with kms.
func TableKey(ctx context.Context, kms encryption.KeyManagementClient, keyID, wrapped string) ([]byte, error) {
	if kms == nil {
		return nil, ErrNoKMS
	}
	blob, err := base64.StdEncoding.DecodeString(wrapped)
	if err != nil || wrapped == "" {
		return nil, fmt.Errorf("%w: the table's %s is missing or not base64", ErrKey, WrappedKeyProp)
	}
	key, err := kms.UnwrapKey(ctx, keyID, blob)
	if err != nil {
		return nil, fmt.Errorf("%w: unwrap with key %q: %v", ErrKey, keyID, kmsReason(err))
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: unwrapped key has %d bytes", ErrKey, len(key))
	}
	return key, nil
}

// kmsReason names a KMS failure without detail about key material.
func kmsReason(err error) string {
	switch {
	case errors.Is(err, encryption.ErrUnknownKeyID):
		return "the KMS does not know this key id"
	case errors.Is(err, encryption.ErrAuthenticationFailed), errors.Is(err, encryption.ErrCiphertextTooShort):
		return "the KMS key does not open the table's wrapped key"
	}
	return "the KMS refused"
}

// EncodeKey and DecodeKey convert a table key to and from TableKeyProp.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

func DecodeKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%w: malformed %s", ErrKey, TableKeyProp)
	}
	return key, nil
}

// fileKey derives the key of the file at rel (its path below the table
// location).
func fileKey(tableKey []byte, rel string) ([]byte, error) {
	return hkdf.Key(sha256.New, tableKey, nil, "icefloe AGS1 file key\x00"+rel, 32)
}
