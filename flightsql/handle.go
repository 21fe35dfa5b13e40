package flightsql

import (
	"encoding/json"
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

// seal seals v as the SQL of a ticket with the given query id.
func seal(key *wire.Key, queryID string, v any, ttl time.Duration) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("flightsql: encode handle: %w", err)
	}
	return key.Seal(&wire.Ticket{QueryID: queryID, ExpiresAt: time.Now().Add(ttl), SQL: string(body)})
}

// unseal opens a handle sealed by seal with the same query id into v. Every
// failure is ErrHandle, wrapping the wire error when there is one.
func unseal(key *wire.Key, queryID string, sealed []byte, v any) error {
	t, err := key.Open(sealed, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHandle, err)
	}
	if t.QueryID != queryID {
		return ErrHandle
	}
	if err := json.Unmarshal([]byte(t.SQL), v); err != nil {
		return ErrHandle
	}
	return nil
}
