package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// SealValue seals the JSON of v as a ticket of the given kind (its
// QueryID) that expires after ttl: the one way icefloe seals values that
// are not fragments (statement handles, membership messages).
func (k *Key) SealValue(kind string, v any, ttl time.Duration) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", kind, err)
	}
	return k.Seal(&Ticket{QueryID: kind, ExpiresAt: time.Now().Add(ttl), SQL: string(body)})
}

// OpenValue opens a value sealed by SealValue with the same kind into v.
// Errors are those of Open, or ErrMalformed for another kind or a body
// that does not decode into v.
func (k *Key) OpenValue(kind string, sealed []byte, v any) error {
	t, err := k.Open(sealed, time.Now())
	if err != nil {
		return err
	}
	if t.QueryID != kind {
		return fmt.Errorf("%w: not a %s", ErrMalformed, kind)
	}
	if err := json.Unmarshal([]byte(t.SQL), v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, kind, err)
	}
	return nil
}
