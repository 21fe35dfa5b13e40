package planner

import (
	"context"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// Authorize returns ErrDenied (authz.ErrDenied), naming the privilege and
// the object, unless the caller holds every one of privs on obj under the
// planner's policy. Statements check what they change with it.
func (p *Planner) Authorize(ctx context.Context, obj authz.Object, privs ...authz.Privilege) error {
	for _, priv := range privs {
		if err := p.opts.Policy.Check(ctx, priv, obj); err != nil {
			return err
		}
	}
	return nil
}

// GrantsVersion names the grants ctx's statement is planned under
// (authz.Policy.GrantsVersion of its principal: name, roles with their
// grants, row filters and masks, attributes). A cache of answers holds it
// in its key, so a change of grants, filters, masks or a user's
// attributes misses, and two principals never share an entry.
func (p *Planner) GrantsVersion(ctx context.Context) string {
	return p.opts.Policy.GrantsVersion(auth.FromContext(ctx))
}
