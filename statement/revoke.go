package statement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/icefloe/icefloe/wire"
)

// revokeTimeout bounds telling one worker about a drop.
const revokeTimeout = 5 * time.Second

// TablesDropped tells every live worker that the tables with these
// Iceberg UUIDs were dropped, so they refuse the scans of tickets planned
// before: the rows of a dropped table stop being served at once, not when
// its last ticket expires. A worker that cannot be told (down, or
// unreachable) refuses tickets planned before it starts again, or serves
// them until they expire (TicketTTL) if it never stopped. Errors name the
// workers that were not told; the drop itself stands.
func (e *Executor) TablesDropped(ctx context.Context, uuids ...string) error {
	if len(uuids) == 0 {
		return nil
	}
	body, err := json.Marshal(wire.Revocation{TableUUIDs: uuids, Until: time.Now().Add(e.opts.TicketTTL + 2*time.Minute)})
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, w := range e.opts.Workers.Live() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.revokeAt(ctx, w.Location, body); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("worker %s: %w", w.Location, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Executor) revokeAt(ctx context.Context, loc string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	_, err := e.opts.Flight.Action(ctx, loc, wire.ActionRevokeTables, body)
	return err
}
