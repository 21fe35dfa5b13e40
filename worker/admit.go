package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/wire"
)

// Who may run a ticket, and which tables it may still read.
//
// A ticket is a capability: whoever holds it may have its fragment run.
// So a worker also checks, before any work, that
//   - with authentication on, the caller is the principal the ticket was
//     planned for (or the cluster itself, pulling a child fragment or
//     running a write fragment);
//   - no table it scans was dropped: the coordinator tells every worker
//     the UUID of each table it drops (wire.ActionRevokeTables), and the worker
//     refuses scans of it for as long as any ticket planned before the
//     drop can live;
//   - the ticket was planned after the worker started, since a worker
//     that was down when a table was dropped never heard of it.

// startLeeway is the clock skew allowed between the coordinator that
// planned a ticket and a worker that started after it was planned.
const startLeeway = auth.Leeway

var (
	// errNotYours: the caller is not the ticket's principal (PermissionDenied).
	errNotYours = errors.New("this ticket was planned for another principal; plan the query yourself")
	// errUnbound: authentication is on but the ticket names no principal
	// (PermissionDenied).
	errUnbound = errors.New("this ticket was planned without authentication")
	// errPlannedBefore: the ticket is older than the worker (Unavailable,
	// so clients try the endpoint's next location).
	errPlannedBefore = errors.New("this ticket was planned before the worker started; use another location or plan the query again")
	// errDropped: a scanned table was dropped (NotFound).
	errDropped = errors.New("table was dropped")
	// errClusterOnly: a cluster action from a client (PermissionDenied).
	errClusterOnly = errors.New("only the cluster may send this action")
)

// revocations are the dropped tables a worker refuses to scan.
type revocations struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (r *revocations) add(v wire.Revocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.until == nil {
		r.until = map[string]time.Time{}
	}
	now := time.Now()
	for id, until := range r.until {
		if now.After(until) {
			delete(r.until, id)
		}
	}
	for _, id := range v.TableUUIDs {
		if id != "" && v.Until.After(r.until[id]) {
			r.until[id] = v.Until
		}
	}
}

func (r *revocations) dropped(id string) bool {
	if id == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.until[id]
	return ok && time.Now().Before(until)
}

// admit checks, before any work, that the caller may run t (see above).
func (s *Server) admit(ctx context.Context, t *wire.Ticket) error {
	if s.opts.Authenticated {
		p := auth.FromContext(ctx)
		switch {
		case p == nil:
			return fmt.Errorf("%w: %w", errUnauthenticated, auth.ErrNoCredentials)
		case p.Cluster():
		case t.Principal == "":
			return errUnbound
		case p.Name != t.Principal:
			return errNotYours
		}
	}
	if !t.IssuedAt.IsZero() && t.IssuedAt.Add(startLeeway).Before(s.started) {
		return errPlannedBefore
	}
	for _, sc := range t.Scans {
		if s.revoked.dropped(sc.TableUUID) {
			return fmt.Errorf("%w: %s", errDropped, sc.Table)
		}
	}
	return nil
}

// errUnauthenticated: a call that reached the worker without a principal
// while authentication is on (Unauthenticated).
var errUnauthenticated = errors.New("unauthenticated")

// revoke handles wire.ActionRevokeTables; only the cluster may send it
// when authentication is on.
func (s *Server) revoke(ctx context.Context, body []byte) error {
	if s.opts.Authenticated && !auth.FromContext(ctx).Cluster() {
		return errClusterOnly
	}
	var v wire.Revocation
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%w: revocation: %v", wire.ErrMalformed, err)
	}
	s.revoked.add(v)
	s.log.Info("worker: tables dropped, their tickets refused", zap.Int("tables", len(v.TableUUIDs)), zap.Time("until", v.Until))
	return nil
}
