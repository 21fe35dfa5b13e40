package authz

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
)

// Privilege is one right on a catalog object.
type Privilege string

// The privileges.
const (
	Select Privilege = "SELECT"
	Insert Privilege = "INSERT"
	Update Privilege = "UPDATE"
	Delete Privilege = "DELETE"
	Create Privilege = "CREATE"
	Drop   Privilege = "DROP"
	Alter  Privilege = "ALTER"
	// Location is choosing where a table's or schema's files go: a
	// location, write.data.path and the like (catalog.PlacesFiles) in
	// CREATE, CTAS, ALTER … SET TBLPROPERTIES and CREATE SCHEMA. It is
	// not part of ALL: a grant names it.
	Location Privilege = "LOCATION"
	// All stands for every privilege in Privileges.
	All Privilege = "ALL"
)

// Privileges are the privileges ALL grants, in a stable order.
var Privileges = []Privilege{Select, Insert, Update, Delete, Create, Drop, Alter}

// named are the privileges a grant must name: ALL does not hold them.
var named = []Privilege{Location}

// AdminRole is the built-in role that holds every privilege on everything.
const AdminRole = "admin"

// ErrDenied: the principal lacks the privilege (PermissionDenied). The
// message names the privilege and the object.
var ErrDenied = errors.New("permission denied")

// Object is a catalog (one part), a schema (two) or a table (three).
type Object []string

// TableObject is the object of a table.
func TableObject(ref catalog.TableRef) Object { return Object{ref.Catalog, ref.Schema, ref.Table} }

// SchemaObject is the object of a schema.
func SchemaObject(cat, schema string) Object { return Object{cat, schema} }

// String names the object as SQL does (catalog.schema.table) with its kind.
func (o Object) String() string {
	kinds := []string{"catalog", "schema", "table"}
	kind := "object"
	if n := len(o); n >= 1 && n <= 3 {
		kind = kinds[n-1]
	}
	return kind + " " + strings.Join(o, ".")
}

// Grant gives privileges on the objects a pattern names: catalog,
// catalog.schema or catalog.schema.table, each part a name or a glob
// (`*`, `?`, `[…]`). A grant on a catalog or schema covers everything in
// it.
type Grant struct {
	Privileges []Privilege
	On         string
	// Where, on a grant of SELECT alone, restricts the rows it gives to
	// those the predicate holds for (restrict.go).
	Where string
	// Masks, on a grant of SELECT alone, replace columns' values.
	Masks []Mask
}

// Role is a named set of grants.
type Role struct {
	Name   string
	Grants []Grant
}

type grant struct {
	privs   map[Privilege]bool
	pattern []string
	where   string
	masks   map[string]string
}

// Policy is the roles of a cluster. It is immutable and safe for
// concurrent use.
type Policy struct {
	roles map[string][]grant
}

// NewPolicy compiles roles, reporting every problem at once.
func NewPolicy(roles []Role) (*Policy, error) {
	p := &Policy{roles: map[string][]grant{}}
	var errs []error
	for i, r := range roles {
		switch {
		case r.Name == "":
			errs = append(errs, fmt.Errorf("roles[%d]: empty name", i))
			continue
		case r.Name == AdminRole:
			errs = append(errs, fmt.Errorf("role %s is built in (it holds every privilege) and takes no grants", AdminRole))
			continue
		case p.roles[r.Name] != nil:
			errs = append(errs, fmt.Errorf("role %s defined twice", r.Name))
			continue
		}
		gs := []grant{}
		for j, g := range r.Grants {
			cg, err := compile(g)
			if err != nil {
				errs = append(errs, fmt.Errorf("role %s: grants[%d]: %w", r.Name, j, err))
				continue
			}
			gs = append(gs, cg)
		}
		p.roles[r.Name] = gs
	}
	return p, errors.Join(errs...)
}

func compile(g Grant) (grant, error) {
	parts := strings.Split(g.On, ".")
	if g.On == "" || len(parts) > 3 || slices.Contains(parts, "") {
		return grant{}, fmt.Errorf("on %q: want catalog, catalog.schema or catalog.schema.table", g.On)
	}
	for _, part := range parts {
		if _, err := path.Match(part, ""); err != nil {
			return grant{}, fmt.Errorf("on %q: bad pattern %q", g.On, part)
		}
	}
	if len(g.Privileges) == 0 {
		return grant{}, fmt.Errorf("on %q: no privileges", g.On)
	}
	privs := map[Privilege]bool{}
	for _, pr := range g.Privileges {
		pr = Privilege(strings.ToUpper(string(pr)))
		switch {
		case pr == All:
			for _, x := range Privileges {
				privs[x] = true
			}
		case slices.Contains(Privileges, pr), slices.Contains(named, pr):
			privs[pr] = true
		default:
			return grant{}, fmt.Errorf("on %q: unknown privilege %q (want %s, %s or ALL)", g.On, pr, joinPrivs(Privileges), joinPrivs(named))
		}
	}
	where, masks, err := compileRestriction(g, privs)
	if err != nil {
		return grant{}, err
	}
	return grant{privs: privs, pattern: parts, where: where, masks: masks}, nil
}

func joinPrivs(ps []Privilege) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// HasRole tells whether the policy defines the role (admin is built in).
func (p *Policy) HasRole(name string) bool {
	_, ok := p.roles[name]
	return ok || name == AdminRole
}

// matches tells whether the first n parts of pattern and obj match.
func matches(pattern []string, obj Object, n int) bool {
	for i := 0; i < n; i++ {
		if ok, _ := path.Match(pattern[i], obj[i]); !ok {
			return false
		}
	}
	return true
}

// superuser: icefloe's own calls and the admin role.
func superuser(pr *auth.Principal) bool { return pr.Cluster() || pr.HasRole(AdminRole) }

// Allowed tells whether pr holds priv on obj: through a grant on obj or
// on a catalog or schema that holds it.
func (p *Policy) Allowed(pr *auth.Principal, priv Privilege, obj Object) bool {
	return p.anyGrant(pr, func(g grant) bool {
		return g.privs[priv] && len(g.pattern) <= len(obj) && matches(g.pattern, obj, len(g.pattern))
	})
}

// Visible tells whether pr may see obj in listings: some grant covers it
// or something inside it.
func (p *Policy) Visible(pr *auth.Principal, obj Object) bool {
	return p.anyGrant(pr, func(g grant) bool {
		return matches(g.pattern, obj, min(len(g.pattern), len(obj)))
	})
}

// anyGrant tells whether a grant of pr's roles satisfies ok; superusers
// satisfy everything, no principal nothing.
func (p *Policy) anyGrant(pr *auth.Principal, ok func(grant) bool) bool {
	if pr == nil {
		return false
	}
	if superuser(pr) {
		return true
	}
	for _, role := range pr.Roles {
		if slices.ContainsFunc(p.roles[role], ok) {
			return true
		}
	}
	return false
}

// Check returns nil when ctx's principal holds priv on obj, and an
// ErrDenied naming both otherwise. A nil policy allows everything
// (authentication is off).
func (p *Policy) Check(ctx context.Context, priv Privilege, obj Object) error {
	if p == nil {
		return nil
	}
	pr := auth.FromContext(ctx)
	if p.Allowed(pr, priv, obj) {
		return nil
	}
	who := "an anonymous caller"
	if pr != nil {
		who = pr.Name
	}
	return fmt.Errorf("%w: %s has no %s privilege on %s", ErrDenied, who, priv, obj)
}

// CanSee is Visible for ctx's principal; a nil policy shows everything.
func (p *Policy) CanSee(ctx context.Context, obj Object) bool {
	return p == nil || p.Visible(auth.FromContext(ctx), obj)
}

// Admin tells whether ctx's principal may see and act on every
// principal's statements (the admin role, the cluster); a nil policy says
// yes (authentication is off).
func (p *Policy) Admin(ctx context.Context) bool {
	if p == nil {
		return true
	}
	pr := auth.FromContext(ctx)
	return pr != nil && superuser(pr)
}

// GrantsVersion names what pr may read, for caches of answers: a digest
// of its name, whether it is a superuser, and each of its roles with
// that role's grants in this policy. Any change to them — a role given
// or taken, a grant added to a role — changes the version, so an answer
// kept under one version is never served under another. The name is part
// of it because what a principal is allowed may depend on who it is
// (row filters naming the user or reading its attributes), not only on
// its roles. Under a nil policy (authentication off) it still differs
// by principal: answers are never shared across principals.
func (p *Policy) GrantsVersion(pr *auth.Principal) string {
	h := sha256.New()
	part := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	part(strconv.FormatBool(p == nil))
	if pr == nil {
		part("anonymous")
	} else {
		part(pr.Name)
		part(strconv.FormatBool(superuser(pr)))
		roles := slices.Clone(pr.Roles)
		slices.Sort(roles)
		for _, r := range slices.Compact(roles) {
			part(r)
			if p == nil {
				continue
			}
			for _, g := range p.roles[r] {
				// Every field of the compiled grant, whatever it grows
				// (fmt prints maps sorted by key).
				part(fmt.Sprintf("%+v", g))
			}
		}
		// Row filters and masks read the principal's attributes.
		for _, k := range slices.Sorted(maps.Keys(pr.Attributes)) {
			part(k)
			part(pr.Attributes[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
