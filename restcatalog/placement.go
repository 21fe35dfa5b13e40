package restcatalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// Where a client may place files is decided as in SQL, by the same code
// (docs/security.md, "Every table owns its folder"): every property that
// places files must be under the catalog's allowed locations
// (catalog.Mount.CheckPlacement); a table made without a location gets a
// folder of its own (catalog.Mount.TableLocation); a location, or a
// property placing files outside the table's location, is one the client
// chose (catalog.ClientPlaces): it needs the LOCATION privilege and must
// be free of every other table (catalog.Mounts.CheckFree), checked before
// the table is made and again once it is. A table's location cannot
// change.

// proposals remembers the locations staged creates proposed, so the
// commit that creates the table can tell a location icefloe chose from
// one the client chose: bounded in number and age (a staged create not
// committed within proposalTTL commits as if its client chose the
// location).
type proposals = expirable.LRU[string, struct{}]

const (
	maxProposals = 10000
	proposalTTL  = 24 * time.Hour
)

func newProposals() *proposals {
	return expirable.NewLRU[string, struct{}](maxProposals, nil, proposalTTL)
}

func proposalKey(ref catalog.TableRef, loc string) string {
	return ref.Catalog + "\x00" + ref.Schema + "\x00" + ref.Table + "\x00" + strings.TrimSuffix(loc, "/")
}

// placement is where a new table goes: its location (chosen by the
// client or by icefloe; "" lets the catalog choose) and the places the
// client chose.
type placement struct {
	loc     string
	claimed []string
}

// placeTable checks where the new table ref of mt goes: at loc (chosen
// by the client when chosen; else icefloe's own folder for it, or the
// catalog's choice when loc is "") with props.
func (s *Server) placeTable(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, loc string, chosen bool, props iceberg.Properties) (placement, error) {
	checked := props
	if chosen {
		checked = withKey(props, catalog.LocationKey, loc)
	}
	if err := mt.CheckPlacement(checked); err != nil {
		return placement{}, err
	}
	p := placement{loc: loc, claimed: catalog.ClientPlaces(loc, chosen, props)}
	return p, s.claim(ctx, authz.TableObject(ref), p.claimed)
}

// claim checks that the caller may choose the places claimed of obj
// (LOCATION) and that they are free of every table but except.
func (s *Server) claim(ctx context.Context, obj authz.Object, claimed []string, except ...catalog.TableRef) error {
	if len(claimed) == 0 {
		return nil
	}
	if err := s.opts.Policy.Check(ctx, authz.Location, obj); err != nil {
		return fmt.Errorf("%w (to choose where its files go)", err)
	}
	return s.opts.Mounts.CheckFree(ctx, claimed, except...)
}

// settle checks, once the table ref is made, that the places its client
// chose are still free of every other table, and otherwise drops it and
// refuses.
func (s *Server) settle(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, p placement) error {
	if len(p.claimed) == 0 {
		return nil
	}
	err := s.opts.Mounts.CheckFree(ctx, p.claimed, ref)
	if err == nil {
		return nil
	}
	_ = mt.Internal().DropTable(context.WithoutCancel(ctx), ref.Ident())
	return fmt.Errorf("%w (taken by another meanwhile; nothing was made)", err)
}

// placeSchema checks the properties a create or update of schema name of
// mt sets, as CREATE SCHEMA does: a schema's folder is where its new
// tables go, so choosing it needs LOCATION and a place free of every
// table (no schema folder or warehouse either).
func (s *Server) placeSchema(ctx context.Context, mt *catalog.Mount, name string, props iceberg.Properties) error {
	if err := mt.CheckPlacement(props); err != nil {
		return err
	}
	return s.claim(ctx, authz.SchemaObject(mt.Name, name), catalog.PlacesOf("", props)[1:])
}

// newLocation is where a table ref of mt made without a location goes:
// a folder of its own (catalog.Mount.TableLocation). "" when the schema's
// folder cannot be told; need says so then (a staged create must say
// where the table goes before it is made).
func newLocation(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, need bool) (string, error) {
	if loc := mt.TableLocation(ctx, ref); loc != "" || !need {
		return loc, nil
	}
	return "", fmt.Errorf("%w: a staged create in catalog %s, whose folder for schema %s cannot be told, needs a location", ErrUnsupported, mt.Name, ref.Schema)
}

// placesOf are where the files of a table at loc with props may lie:
// its location and the value of each property placing files that is a
// location.
func placesOf(loc string, props iceberg.Properties) (catalog.Locations, error) {
	var extra []string
	for _, p := range catalog.PlacesOf(loc, props)[1:] {
		if _, err := catalog.NewLocations("", []string{p}); err == nil {
			extra = append(extra, p)
		}
	}
	return catalog.NewLocations(loc, extra)
}
