package statement

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/planner"
)

// Encrypted tables (catalog/tablecrypt): CREATE TABLE … WITH
// ('encryption.key-id' = 'k') gets a fresh table key wrapped by the
// catalog's KMS; catalog.Mounts.LoadTable unwraps it whenever the table
// is read or written.

// encryptionProps completes a new table's properties: with
// encryption.key-id set, the table key the catalog's KMS wraps under it.
func encryptionProps(ctx context.Context, mt *catalog.Mount, props iceberg.Properties) error {
	if _, ok := props[tablecrypt.WrappedKeyProp]; ok {
		return fmt.Errorf("%w: %s is set by icefloe, not by CREATE TABLE", planner.ErrInvalid, tablecrypt.WrappedKeyProp)
	}
	keyID := props[tablecrypt.KeyIDProp]
	if keyID == "" {
		return nil
	}
	if mt.KMS == nil {
		return fmt.Errorf("%w: %s %q: catalog %s has no KMS (set kms-type in its properties)", planner.ErrInvalid, tablecrypt.KeyIDProp, keyID, mt.Name)
	}
	wrapped, err := tablecrypt.NewTableKey(ctx, mt.KMS, keyID)
	if err != nil {
		return fmt.Errorf("%w: %s %q: %v", planner.ErrInvalid, tablecrypt.KeyIDProp, keyID, err)
	}
	props[tablecrypt.WrappedKeyProp] = wrapped
	return nil
}
