package wire

import "time"

// ActionRevokeTables is the Flight action by which the coordinator tells
// a worker that tables were dropped; its body is a JSON Revocation.
const ActionRevokeTables = "icefloe.revoke-tables"

// Revocation lists dropped tables by Iceberg UUID: a worker refuses scans
// of them until Until, by when every ticket planned before the drop has
// expired.
type Revocation struct {
	TableUUIDs []string  `json:"tables"`
	Until      time.Time `json:"until"`
}
