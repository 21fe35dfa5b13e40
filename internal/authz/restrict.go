package authz

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/icefloe/icefloe/internal/auth"
)

// Row filters and column masks. A SELECT grant may restrict what it
// gives: Where keeps only the rows its predicate holds for, Masks replace
// columns' values by expressions. Both are SQL expressions over the
// table's columns and the caller (current_user,
// current_user_attribute('name')); the planner checks them with DuckDB's
// parser and binds them over the table where it reads it
// (planner/restrict.go).
//
// A principal's grants combine as a union: a table is unrestricted when
// any SELECT grant covering it has neither a filter nor a mask; otherwise
// each covering grant is an Arm, a row is visible when some arm's filter
// holds for it, and a column's value is that of the first such arm, arms
// that leave the column unmasked first (the most the grants give).

// Mask replaces a column's value with an expression (over the table's
// columns, current_user and current_user_attribute) for the readers of a
// grant.
type Mask struct {
	Column string
	Expr   string
}

// Arm is one restricted SELECT grant on a table: its filter ("" for every
// row) and its masks by lower-cased column name.
type Arm struct {
	Where string
	Masks map[string]string
}

// Restriction is what a principal's SELECT grants on one table let it
// read, when they do not let it read everything: the arms of its grants,
// in the order of its roles and their grants.
type Restriction struct {
	Arms []Arm
}

// Masked tells whether some arm masks the column (lower-cased name).
func (r *Restriction) Masked(col string) bool {
	for _, a := range r.Arms {
		if _, ok := a.Masks[col]; ok {
			return true
		}
	}
	return false
}

// Filtered tells whether some arm filters rows.
func (r *Restriction) Filtered() bool {
	for _, a := range r.Arms {
		if a.Where == "" {
			return false
		}
	}
	return true
}

// String says what kind of restriction it is, without its expressions.
func (r *Restriction) String() string {
	masks := false
	for _, a := range r.Arms {
		masks = masks || len(a.Masks) > 0
	}
	switch {
	case r.Filtered() && masks:
		return "a row filter and column masks"
	case r.Filtered():
		return "a row filter"
	default:
		return "column masks"
	}
}

// compileRestriction checks a grant's filter and masks as far as they
// can be checked without a table: only on SELECT alone, masks on distinct
// columns, nothing empty. DuckDB's parser checks the expressions where
// the planner binds them.
func compileRestriction(g Grant, privs map[Privilege]bool) (string, map[string]string, error) {
	where := strings.TrimSpace(g.Where)
	if where == "" && g.Where != "" {
		return "", nil, fmt.Errorf("on %q: empty where", g.On)
	}
	if where == "" && len(g.Masks) == 0 {
		return "", nil, nil
	}
	if len(privs) != 1 || !privs[Select] {
		return "", nil, fmt.Errorf("on %q: where and masks restrict a grant of SELECT alone (grant the other privileges apart)", g.On)
	}
	var masks map[string]string
	for _, m := range g.Masks {
		col := strings.ToLower(strings.TrimSpace(m.Column))
		switch {
		case col == "":
			return "", nil, fmt.Errorf("on %q: a mask names no column", g.On)
		case strings.TrimSpace(m.Expr) == "":
			return "", nil, fmt.Errorf("on %q: the mask of column %s has no expression", g.On, m.Column)
		case masks[col] != "":
			return "", nil, fmt.Errorf("on %q: column %s masked twice", g.On, m.Column)
		}
		if masks == nil {
			masks = map[string]string{}
		}
		masks[col] = strings.TrimSpace(m.Expr)
	}
	return where, masks, nil
}

// Restriction returns what pr's SELECT grants on the table obj let it
// read, or nil when they let it read every row and column (or give no
// SELECT at all: Check refuses that). Superusers are never restricted.
func (p *Policy) Restriction(pr *auth.Principal, obj Object) *Restriction {
	if p == nil || pr == nil || superuser(pr) {
		return nil
	}
	var arms []Arm
	for _, role := range pr.Roles {
		for _, g := range p.roles[role] {
			if !g.privs[Select] || len(g.pattern) > len(obj) || !matches(g.pattern, obj, len(g.pattern)) {
				continue
			}
			if g.where == "" && len(g.masks) == 0 {
				return nil
			}
			arms = append(arms, Arm{Where: g.where, Masks: g.masks})
		}
	}
	if len(arms) == 0 {
		return nil
	}
	return &Restriction{Arms: arms}
}

// RestrictedGrant is one grant with a row filter or column masks, as
// compiled (masks by lower-cased column), for checking its expressions.
type RestrictedGrant struct {
	Role, On, Where string
	Masks           map[string]string
}

// RestrictedGrants lists the grants with a row filter or column masks, by
// role name and in grant order.
func (p *Policy) RestrictedGrants() []RestrictedGrant {
	if p == nil {
		return nil
	}
	var out []RestrictedGrant
	for _, name := range slices.Sorted(maps.Keys(p.roles)) {
		for _, g := range p.roles[name] {
			if g.where != "" || len(g.masks) > 0 {
				out = append(out, RestrictedGrant{Role: name, On: strings.Join(g.pattern, "."), Where: g.where, Masks: g.masks})
			}
		}
	}
	return out
}

// Version names the policy's content: two policies with the same roles,
// grants, filters and masks have the same version, any change gives
// another. Caches of answers that depend on grants hold it in their keys.
func (p *Policy) Version() string {
	if p == nil {
		return "none"
	}
	h := sha256.New()
	put := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	for _, name := range slices.Sorted(maps.Keys(p.roles)) {
		put("role")
		put(name)
		for _, g := range p.roles[name] {
			put("grant")
			put(strings.Join(g.pattern, "."))
			for _, pr := range slices.Sorted(maps.Keys(g.privs)) {
				put(string(pr))
			}
			put("where")
			put(g.where)
			for _, col := range slices.Sorted(maps.Keys(g.masks)) {
				put(col)
				put(g.masks[col])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
