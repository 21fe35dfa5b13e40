package catalog

import (
	"testing"

	"github.com/icefloe/icefloe/catalog/tablecrypt"
)

// TestEncryptionSecretsRedacted: the table key that travels in storage
// properties and the static KMS's keys never print.
func TestEncryptionSecretsRedacted(t *testing.T) {
	props := map[string]string{tablecrypt.TableKeyProp: "dGFibGUta2V5", tablecrypt.StaticKeyPrefix + "k1": "a2Vr", "kms-type": "static"}
	out := Redacted(props)
	for k := range props {
		if k != "kms-type" && out[k] != "<redacted>" {
			t.Errorf("%s printed as %q", k, out[k])
		}
	}
}
