package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// ticketExpiry is when a plan's tickets expire: at end (now + TicketTTL),
// or earlier when storage credentials vended with an input expire sooner,
// so no endpoint outlives the credentials sealed in its ticket.
func ticketExpiry(end time.Time, inputs []*input) time.Time {
	for _, in := range inputs {
		if exp := in.pinned.CredentialsExpire; !exp.IsZero() && exp.Before(end) {
			end = exp
		}
	}
	return end
}

// Renew answers RenewFlightEndpoint: it opens a ticket this cluster sealed
// (and that has not expired), loads each scanned table from its catalog
// again to get freshly vended storage credentials, and reseals the ticket
// with them and a new expiry: now + TicketTTL, or the new credentials'
// expiry when sooner. The pinned metadata locations do not change, so the
// query still reads the same table versions. Child fragments are renewed
// the same way. Only the principal the ticket was planned for may renew
// it, and not once a table it reads was dropped (or dropped and made
// again under its name: the UUID differs).
func (p *Planner) Renew(ctx context.Context, sealed []byte) ([]byte, time.Time, error) {
	t, err := p.opts.Key.Open(sealed, time.Now())
	if err != nil {
		return nil, time.Time{}, err
	}
	if t.Principal != auth.Name(ctx) {
		return nil, time.Time{}, fmt.Errorf("%w: this ticket was planned for another principal", ErrDenied)
	}
	expires := time.Now().Add(p.opts.TicketTTL)
	for i := range t.Scans {
		sc := &t.Scans[i]
		ref, err := parseScanTable(sc.Table)
		if err != nil {
			return nil, time.Time{}, err
		}
		if err := p.Authorize(ctx, authz.TableObject(ref), authz.Select); err != nil {
			return nil, time.Time{}, err
		}
		pinned, err := p.opts.Mounts.LoadTable(ctx, ref)
		if err != nil {
			if errors.Is(err, catalog.ErrTableNotFound) || errors.Is(err, catalog.ErrCatalogNotFound) {
				return nil, time.Time{}, fmt.Errorf("%w: renew: %w", ErrNotFound, err)
			}
			return nil, time.Time{}, fmt.Errorf("renew: %w", err)
		}
		if sc.TableUUID != "" && pinned.Table.Metadata().TableUUID().String() != sc.TableUUID {
			return nil, time.Time{}, fmt.Errorf("%w: renew: table %s was dropped since the query was planned", ErrNotFound, ref)
		}
		sc.Props = pinned.StorageProps
		if exp := pinned.CredentialsExpire; !exp.IsZero() && exp.Before(expires) {
			expires = exp
		}
	}
	for i := range t.Children {
		child, exp, err := p.Renew(ctx, t.Children[i].Ticket)
		if err != nil {
			return nil, time.Time{}, err
		}
		t.Children[i].Ticket = child
		if exp.Before(expires) {
			expires = exp
		}
	}
	t.ExpiresAt = expires
	// Sealed again with the stamp it was planned with (its principal,
	// the statement's deadline and trace, its issue time).
	out, err := p.seal(stamp{principal: t.Principal, deadline: admit.Deadline{At: t.Deadline, Timeout: t.Timeout}, trace: t.Trace}, t)
	if err != nil {
		return nil, time.Time{}, err
	}
	return out, expires, nil
}

// parseScanTable reads a scan's catalog.schema.table display name back;
// a metadata table's name gives its base table.
func parseScanTable(name string) (catalog.TableRef, error) {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) != 3 {
		return catalog.TableRef{}, fmt.Errorf("%w: renew: scan table %q is not catalog.schema.table", ErrInvalid, name)
	}
	base, _ := catalog.SplitMetaTable(parts[2])
	return catalog.TableRef{Catalog: parts[0], Schema: parts[1], Table: base}, nil
}
