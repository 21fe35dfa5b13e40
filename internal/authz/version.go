package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/icefloe/icefloe/internal/auth"
)

// GrantsVersion names what ctx's principal may do under p: equal for two
// calls exactly when the principal holds the same grants (the same roles
// with the same grants, or superuser in both, or none). Caches of answers
// that depend on what the caller may read (the planner's plan cache) put
// it in their keys, so a principal whose roles change (a new token with
// other claims) or a policy whose grants change (a new Policy) misses
// them. A nil policy allows everything: its version is "all".
func (p *Policy) GrantsVersion(ctx context.Context) string {
	if p == nil {
		return "all"
	}
	pr := auth.FromContext(ctx)
	switch {
	case pr == nil:
		return "none"
	case superuser(pr):
		return "superuser"
	}
	h := sha256.New()
	roles := slices.Clone(pr.Roles)
	slices.Sort(roles)
	for _, role := range slices.Compact(roles) {
		gs, ok := p.roles[role]
		fmt.Fprintf(h, "role %q %t\n", role, ok)
		for _, g := range gs {
			privs := slices.Sorted(maps.Keys(g.privs))
			fmt.Fprintf(h, "  %q on %q\n", privs, g.pattern)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
