package flightsql

import (
	"fmt"
	"time"

	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// Query ids that mark the tickets the coordinator seals for itself, so one
// kind is never accepted as another (nor a worker ticket as either).
const (
	preparedQueryID = "icefloe.flightsql.prepared"
	countQueryID    = "icefloe.flightsql.update-count"
)

// preparedHandle is what a prepared-statement handle carries: the statement
// and the session defaults it was prepared under. It travels sealed, as the
// SQL of a wire.Ticket, so the coordinator keeps no state per statement.
type preparedHandle struct {
	SQL     string `json:"sql"`
	Catalog string `json:"c"`
	Schema  string `json:"s"`
	Update  bool   `json:"u,omitempty"`
	// WAPBranch is the session's write-audit-publish branch.
	WAPBranch string `json:"w,omitempty"`
	// Params are the bound parameter rows, an Arrow IPC stream (params.go).
	Params []byte `json:"p,omitempty"`
}

func (h preparedHandle) session() planner.Session {
	return planner.Session{Catalog: h.Catalog, Schema: h.Schema, WAPBranch: h.WAPBranch}
}

// updateCount is what an update-count ticket carries.
type updateCount struct {
	Rows int64 `json:"rows"`
}

// seal seals v as a value of the given kind.
func seal(key *wire.Key, queryID string, v any, ttl time.Duration) ([]byte, error) {
	return key.SealValue(queryID, v, ttl)
}

// unseal opens a handle sealed by seal with the same kind into v. Every
// failure is ErrHandle, wrapping the wire error when there is one.
func unseal(key *wire.Key, queryID string, sealed []byte, v any) error {
	if err := key.OpenValue(queryID, sealed, v); err != nil {
		return fmt.Errorf("%w: %w", ErrHandle, err)
	}
	return nil
}
