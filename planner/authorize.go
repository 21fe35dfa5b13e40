package planner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"

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

// GrantsVersion names the grants ctx's statement is planned under: the
// policy's version (authz.Policy.Version) and what of the principal its
// row filters and masks read (name, roles, attributes). A cache of
// answers holds it in its key, so a change of grants, filters, masks or
// a user's attributes misses, and two principals never share an entry.
func (p *Planner) GrantsVersion(ctx context.Context) string {
	h := sha256.New()
	put := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	put(p.opts.Policy.Version())
	if pr := auth.FromContext(ctx); pr != nil {
		put(pr.Name)
		roles := slices.Sorted(slices.Values(pr.Roles))
		put(strconv.Itoa(len(roles)))
		for _, r := range roles {
			put(r)
		}
		for _, k := range slices.Sorted(maps.Keys(pr.Attributes)) {
			put(k)
			put(pr.Attributes[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
