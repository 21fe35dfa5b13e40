package restcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// commitTableBody is the specification's CommitTableRequest.
type commitTableBody struct {
	Identifier   *identifier        `json:"identifier,omitempty"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`
}

type commitTableResponse struct {
	MetadataLocation string         `json:"metadata-location"`
	Metadata         table.Metadata `json:"metadata"`
}

// change is one table's commit of a request.
type change struct {
	mt   *catalog.Mount
	ref  catalog.TableRef
	reqs []table.Requirement
	upds []table.Update
}

func (c change) create() bool {
	for _, r := range c.reqs {
		if r.GetType() == "assert-create" {
			return true
		}
	}
	return false
}

func (s *Server) updateTable(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "table")
	if err != nil {
		return nil, err
	}
	var body commitTableBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	c := change{mt: mt, ref: ref, reqs: body.Requirements, upds: body.Updates}
	ctx := commit.WithStatement(r.Context())
	if c.create() {
		return s.commitCreate(ctx, c)
	}
	meta, loc, err := s.commit(ctx, c)
	if err != nil {
		return nil, err
	}
	audit.From(ctx).Wrote(ref.String(), snapshotOf(meta))
	return commitTableResponse{MetadataLocation: loc, Metadata: meta}, nil
}

// writePrivileges are those of which a commit to an existing table needs
// one before anything of the table is read.
var writePrivileges = []authz.Privilege{authz.Insert, authz.Update, authz.Delete, authz.Alter}

// anyWrite checks that the caller holds some write privilege on obj, so a
// caller that may not write learns nothing of the table.
func (s *Server) anyWrite(ctx context.Context, obj authz.Object) error {
	if len(obj) == 3 {
		// A commit's answer is the table's whole metadata.
		if err := s.refuseRestricted(ctx, catalog.TableRef{Catalog: obj[0], Schema: obj[1], Table: obj[2]}); err != nil {
			return err
		}
	}
	for _, p := range writePrivileges {
		if s.opts.Policy.Check(ctx, p, obj) == nil {
			return nil
		}
	}
	return s.opts.Policy.Check(ctx, authz.Insert, obj)
}

// commit commits c to its existing table through the one commit path
// (commit.Run), against the catalog the SQL path commits to. Each attempt
// checks c's requirements and the caller's privileges against the
// table's current metadata, and pins every branch c moves to the head it
// was checked against (assert-ref-snapshot-id): the commit lands only on
// the metadata it was authorized for, and a concurrent commit fails it
// (409) rather than being overwritten.
func (s *Server) commit(ctx context.Context, c change) (table.Metadata, string, error) {
	if err := s.anyWrite(ctx, authz.TableObject(c.ref)); err != nil {
		return nil, "", err
	}
	p, err := s.opts.Mounts.LoadTable(ctx, c.ref)
	if err != nil {
		return nil, "", err
	}
	rec := &recorder{CatalogIO: c.mt.Catalog}
	if err := commit.Run(ctx, s.request(ctx, c, p.Table, rec)); err != nil {
		return nil, "", err
	}
	if meta, loc, ok := rec.last(); ok {
		return meta, loc, nil
	}
	// No updates, or the catalog's answer was lost but the commit landed:
	// answer the table as it is now.
	fresh, err := s.opts.Mounts.LoadTable(ctx, c.ref)
	if err != nil {
		return nil, "", err
	}
	return fresh.Table.Metadata(), fresh.MetadataLocation, nil
}

// request is the commit of c to tbl through cat: each attempt authorizes
// c against the table as it then is (authorize).
func (s *Server) request(ctx context.Context, c change, tbl *table.Table, cat table.CatalogIO) commit.Request {
	return commit.Request{
		Name: c.ref.String(), Ident: c.ref.Ident(), Table: tbl, Catalog: cat, Stats: s.opts.Commits,
		Meta: func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
			return s.authorize(ctx, c, tbl)
		},
		Reload: func(ctx context.Context) (*table.Table, error) {
			fresh, err := s.opts.Mounts.LoadTable(ctx, c.ref)
			if err != nil {
				return nil, err
			}
			return fresh.Table, nil
		},
	}
}

// recorder keeps the metadata of the last commit that its catalog
// answered.
type recorder struct {
	table.CatalogIO
	mu   sync.Mutex
	meta table.Metadata
	loc  string
}

func (c *recorder) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	if err == nil {
		c.mu.Lock()
		c.meta, c.loc = meta, loc
		c.mu.Unlock()
	}
	return meta, loc, err
}

func (c *recorder) last() (table.Metadata, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta, c.loc, c.meta != nil
}

// authorize checks c against tbl, the table's current metadata: its
// requirements, then what each update needs (see needs), and returns the
// requirements to commit with: c's and the branch heads it was checked
// against.
func (s *Server) authorize(ctx context.Context, c change, tbl *table.Table) ([]table.Requirement, []table.Update, error) {
	meta := tbl.Metadata()
	for _, r := range c.reqs {
		if err := r.Validate(meta); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: requirement %s: %v", ErrCommitFailed, c.ref, r.GetType(), err)
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	pins, ns, err := s.needs(ctx, c, meta, fsys)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range pins {
		if err := r.Validate(meta); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: a snapshot must be committed on top of its branch's current head: %v", ErrCommitFailed, c.ref, err)
		}
	}
	if err := s.check(ctx, authz.TableObject(c.ref), ns); err != nil {
		return nil, nil, err
	}
	return append(append([]table.Requirement{}, c.reqs...), pins...), c.upds, nil
}

// need is a privilege a commit needs: any one of alts, each a set of
// privileges held together; why says what of the commit asks it.
type need struct {
	why  string
	alts [][]authz.Privilege
}

func needs1(why string, p authz.Privilege) need {
	return need{why: why, alts: [][]authz.Privilege{{p}}}
}

// check returns nil when the caller holds every need on obj, else the
// denial of the first need it lacks.
func (s *Server) check(ctx context.Context, obj authz.Object, ns []need) error {
	for _, n := range ns {
		ok := false
		for _, alt := range n.alts {
			if errAll(ctx, s.opts.Policy, alt, obj) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w (to %s)", errAll(ctx, s.opts.Policy, n.alts[0], obj), n.why)
		}
	}
	return nil
}

func errAll(ctx context.Context, p *authz.Policy, privs []authz.Privilege, obj authz.Object) error {
	for _, pr := range privs {
		if err := p.Check(ctx, pr, obj); err != nil {
			return err
		}
	}
	return nil
}

// refUpdate is the REST form of set-snapshot-ref.
type refUpdate struct {
	RefName    string        `json:"ref-name"`
	RefType    table.RefType `json:"type"`
	SnapshotID int64         `json:"snapshot-id"`
}

// fieldsOf reads an update's fields from its REST form (iceberg-go's
// update types are not exported).
func fieldsOf(u table.Update, v any) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// needs is what c's updates need on meta, the SQL statement's privilege
// for the same change:
//
//   - a snapshot a branch moves to is judged by what it does to the
//     branch's rows, read from the manifests (a client's claimed
//     operation is not trusted): rows added need INSERT, rows removed
//     DELETE, both UPDATE (or INSERT and DELETE, as INSERT OVERWRITE);
//     a snapshot that changes no row needs INSERT or ALTER. A new
//     snapshot must have the branch's current head as its parent (pinned
//     as a requirement), and every file it adds must lie in the table's
//     places (its location and file-placing properties);
//   - moving a branch to an existing snapshot (a rollback), creating or
//     dropping a branch or tag, and every other update (schema, spec,
//     sort order, properties, location, snapshot expiry, statistics)
//     need ALTER, as the ALTER TABLE statements and CALL procedures do;
//     a property that places files must be a location the catalog
//     allows, and icefloe's own properties are refused;
//   - assign-uuid and the encryption keys' updates are refused.
//
// pins are the requirements that keep the judgement true at commit time.
func (s *Server) needs(ctx context.Context, c change, meta table.Metadata, fsys iceio.IO) (pins []table.Requirement, ns []need, err error) {
	added := map[int64]*table.Snapshot{}
	snaps, ok := commit.AddedSnapshots(c.upds)
	if !ok {
		return nil, nil, badRequest("an add-snapshot update cannot be read")
	}
	for i := range snaps {
		added[snaps[i].SnapshotID] = &snaps[i]
	}
	places, err := s.places(c, meta)
	if err != nil {
		return nil, nil, err
	}
	lookup := func(id int64) *table.Snapshot {
		if snap, ok := added[id]; ok {
			return snap
		}
		return meta.SnapshotByID(id)
	}
	judged := map[int64]bool{}
	heads := map[string]*int64{} // branch heads as the updates so far left them
	for _, u := range c.upds {
		switch u.Action() {
		case table.UpdateAddSnapshot:
			// Judged with the ref that moves to it, below; alone (a
			// staged snapshot) after the loop.
		case table.UpdateSetSnapshotRef:
			var ru refUpdate
			if err := fieldsOf(u, &ru); err != nil {
				return nil, nil, badRequest("read set-snapshot-ref: %v", err)
			}
			head, moved := heads[ru.RefName]
			if !moved {
				head = headOf(meta, ru.RefName)
			}
			snap, isNew := added[ru.SnapshotID]
			switch {
			case ru.RefType == table.TagRef:
				ns = append(ns, needs1("set tag "+ru.RefName, authz.Alter))
			case !isNew:
				ns = append(ns, needs1("move branch "+ru.RefName+" to an existing snapshot", authz.Alter))
				if !moved {
					pins = append(pins, table.AssertRefSnapshotID(ru.RefName, head))
				}
			default:
				if head == nil && snap.ParentSnapshotID != nil {
					ns = append(ns, needs1("create branch "+ru.RefName, authz.Alter))
				}
				if !moved {
					pins = append(pins, table.AssertRefSnapshotID(ru.RefName, snap.ParentSnapshotID))
				} else if !sameID(head, snap.ParentSnapshotID) {
					return nil, nil, fmt.Errorf("%w: %s: snapshot %d is not on top of the snapshot the commit set branch %s to", ErrCommitFailed, c.ref, snap.SnapshotID, ru.RefName)
				}
				n, err := s.judge(fsys, lookup, snap, places)
				if err != nil {
					return nil, nil, err
				}
				ns = append(ns, n)
				judged[snap.SnapshotID] = true
			}
			if ru.RefType != table.TagRef {
				id := ru.SnapshotID
				heads[ru.RefName] = &id
			}
		case table.UpdateRemoveSnapshotRef:
			ns = append(ns, needs1("drop a branch or tag", authz.Alter))
		case table.UpdateAssignUUID:
			return nil, nil, badRequest("%s: assign-uuid only in a create", c.ref)
		case table.UpdateAddEncryptionKey, table.UpdateRemoveEncryptionKey:
			return nil, nil, fmt.Errorf("%w: %s: table encryption keys are icefloe's (encryption.key-id through SQL)", ErrUnsupported, u.Action())
		case table.UpdateSetProperties:
			var v struct {
				Updates iceberg.Properties `json:"updates"`
			}
			if err := fieldsOf(u, &v); err != nil {
				return nil, nil, badRequest("read set-properties: %v", err)
			}
			if err := errors.Join(reserved(v.Updates), c.mt.CheckPlacement(v.Updates)); err != nil {
				return nil, nil, err
			}
			ns = append(ns, needs1("set table properties", authz.Alter))
			// A property placing files outside the table's location is a
			// place the client chose, as in ALTER TABLE … SET TBLPROPERTIES.
			if err := s.claim(ctx, authz.TableObject(c.ref), catalog.ClientPlaces(meta.Location(), false, v.Updates), c.ref); err != nil {
				return nil, nil, err
			}
		case table.UpdateRemoveProperties:
			var v struct {
				Removals []string `json:"removals"`
			}
			if err := fieldsOf(u, &v); err != nil {
				return nil, nil, badRequest("read remove-properties: %v", err)
			}
			for _, k := range v.Removals {
				if isReserved(k) {
					return nil, nil, fmt.Errorf("%w: table property %q is set by icefloe's SQL only", authz.ErrDenied, k)
				}
			}
			ns = append(ns, needs1("remove table properties", authz.Alter))
		case table.UpdateSetLocation:
			var v struct {
				Location string `json:"location"`
			}
			if err := fieldsOf(u, &v); err != nil {
				return nil, nil, badRequest("read set-location: %v", err)
			}
			if strings.TrimSuffix(v.Location, "/") != strings.TrimSuffix(meta.Location(), "/") {
				return nil, nil, fmt.Errorf("%w: %s: a table's location cannot change (set-location to %q)", ErrUnsupported, c.ref, v.Location)
			}
			ns = append(ns, needs1("set the table's location", authz.Alter))
		default:
			ns = append(ns, needs1(u.Action(), authz.Alter))
		}
	}
	for _, snap := range snaps {
		if judged[snap.SnapshotID] {
			continue
		}
		n, err := s.judge(fsys, lookup, &snap, places)
		if err != nil {
			return nil, nil, err
		}
		ns = append(ns, n)
	}
	return pins, ns, nil
}

func sameID(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// headOf is the snapshot id ref points at in meta; nil when there is no
// such ref.
func headOf(meta table.Metadata, ref string) *int64 {
	for name, r := range meta.Refs() {
		if name == ref {
			id := r.SnapshotID
			return &id
		}
	}
	return nil
}

// places are where c's new files may lie: the table's location and the
// values of its file-placing properties (catalog.PlacesFiles), those the
// commit sets included (each checked as the commit's updates are).
func (s *Server) places(c change, meta table.Metadata) (catalog.Locations, error) {
	props := iceberg.Properties{}
	for k, v := range meta.Properties() {
		props[k] = v
	}
	for _, u := range c.upds {
		if u.Action() != table.UpdateSetProperties {
			continue
		}
		var v struct {
			Updates iceberg.Properties `json:"updates"`
		}
		if fieldsOf(u, &v) == nil {
			for k, pv := range v.Updates {
				props[k] = pv
			}
		}
	}
	return placesOf(meta.Location(), props)
}

// judge is what a new snapshot needs, from what it does to the rows of
// its parent (see needs); it refuses a snapshot whose new files lie
// outside places.
func (s *Server) judge(fsys iceio.IO, lookup func(int64) *table.Snapshot, snap *table.Snapshot, places catalog.Locations) (need, error) {
	var parent *table.Snapshot
	if snap.ParentSnapshotID != nil {
		if parent = lookup(*snap.ParentSnapshotID); parent == nil {
			return need{}, fmt.Errorf("%w: snapshot %d's parent %d is not in the table", ErrCommitFailed, snap.SnapshotID, *snap.ParentSnapshotID)
		}
	}
	if err := places.Check("manifest-list", snap.ManifestList); err != nil {
		return need{}, err
	}
	adds, removes, err := effects(fsys, parent, snap, places)
	if err != nil {
		return need{}, err
	}
	id := fmt.Sprintf("commit snapshot %d", snap.SnapshotID)
	switch {
	case adds && removes:
		return need{why: id + ", which adds and removes rows", alts: [][]authz.Privilege{{authz.Update}, {authz.Insert, authz.Delete}}}, nil
	case adds:
		return needs1(id+", which adds rows", authz.Insert), nil
	case removes:
		return needs1(id+", which removes rows", authz.Delete), nil
	}
	return need{why: id + ", which changes no row", alts: [][]authz.Privilege{{authz.Insert}, {authz.Alter}}}, nil
}

// liveFile is a live entry of a manifest: its kind and row count.
type liveFile struct {
	content iceberg.ManifestEntryContent
	rows    int64
}

// effects tells whether snap adds or removes rows of parent (nil: an
// empty table). Manifests both list hold the same files (a manifest is
// immutable); of the others, the live data and delete files are
// compared: a data file gone or a delete file added removes rows, a data
// file with rows added or a delete file gone adds them. Every file snap
// has that parent has not must lie in places.
func effects(fsys iceio.IO, parent, snap *table.Snapshot, places catalog.Locations) (adds, removes bool, err error) {
	newList, err := snap.Manifests(fsys)
	if err != nil {
		return false, false, fmt.Errorf("%w: read the manifest list of snapshot %d: %v", ErrBadRequest, snap.SnapshotID, err)
	}
	var oldList []iceberg.ManifestFile
	if parent != nil {
		if oldList, err = parent.Manifests(fsys); err != nil {
			return false, false, fmt.Errorf("read the manifest list of snapshot %d: %w", parent.SnapshotID, err)
		}
	}
	inNew, inOld := map[string]bool{}, map[string]bool{}
	for _, m := range newList {
		inNew[m.FilePath()] = true
	}
	for _, m := range oldList {
		inOld[m.FilePath()] = true
	}
	live := func(list []iceberg.ManifestFile, skip map[string]bool, check bool) (map[string]liveFile, error) {
		out := map[string]liveFile{}
		for _, m := range list {
			if skip[m.FilePath()] {
				continue
			}
			if check {
				if err := places.Check("manifest", m.FilePath()); err != nil {
					return nil, err
				}
			}
			entries, err := m.FetchEntries(fsys, true)
			if err != nil {
				return nil, fmt.Errorf("%w: read manifest %s: %v", ErrBadRequest, m.FilePath(), err)
			}
			for _, e := range entries {
				df := e.DataFile()
				key := fmt.Sprintf("%d\x00%s", df.ContentType(), df.FilePath())
				if df.ContentOffset() != nil {
					key += fmt.Sprintf("\x00%d", *df.ContentOffset())
				}
				out[key] = liveFile{content: df.ContentType(), rows: df.Count()}
			}
		}
		return out, nil
	}
	oldFiles, err := live(oldList, inNew, false)
	if err != nil {
		return false, false, err
	}
	newFiles, err := live(newList, inOld, true)
	if err != nil {
		return false, false, err
	}
	for key, f := range newFiles {
		if _, ok := oldFiles[key]; ok {
			continue
		}
		_, path, _ := strings.Cut(key, "\x00")
		path, _, _ = strings.Cut(path, "\x00")
		if err := places.Check("data file", path); err != nil {
			return false, false, err
		}
		if f.content == iceberg.EntryContentData {
			adds = adds || f.rows > 0
		} else {
			removes = true
		}
	}
	for key, f := range oldFiles {
		if _, ok := newFiles[key]; ok {
			continue
		}
		if f.content == iceberg.EntryContentData {
			removes = removes || f.rows > 0
		} else {
			adds = true
		}
	}
	return adds, removes, nil
}

// commitCreate commits a staged create (assert-create): a new table,
// made by the caller's CREATE privilege as CREATE TABLE … AS is, through
// the catalog's internal side (the create was authorized as a whole).
// Its location and properties are placed as a create's (a location the
// staged create did not propose is one the client chose), and its files
// must lie in its places.
func (s *Server) commitCreate(ctx context.Context, c change) (any, error) {
	obj := authz.TableObject(c.ref)
	if err := s.opts.Policy.Check(ctx, authz.Create, obj); err != nil {
		return nil, err
	}
	var loc string
	props := iceberg.Properties{}
	for _, u := range c.upds {
		switch u.Action() {
		case table.UpdateSetLocation:
			var v struct {
				Location string `json:"location"`
			}
			if err := fieldsOf(u, &v); err != nil {
				return nil, badRequest("read set-location: %v", err)
			}
			loc = strings.TrimSuffix(v.Location, "/")
		case table.UpdateSetProperties:
			var v struct {
				Updates iceberg.Properties `json:"updates"`
			}
			if err := fieldsOf(u, &v); err != nil {
				return nil, badRequest("read set-properties: %v", err)
			}
			if err := reserved(v.Updates); err != nil {
				return nil, err
			}
			for k, pv := range v.Updates {
				props[k] = pv
			}
		case table.UpdateAddEncryptionKey, table.UpdateRemoveEncryptionKey:
			return nil, fmt.Errorf("%w: %s: table encryption keys are icefloe's (encryption.key-id through SQL)", ErrUnsupported, u.Action())
		}
	}
	if loc == "" {
		return nil, badRequest("%s: a create sets the table's location", c.ref)
	}
	_, proposed := s.proposed.Get(proposalKey(c.ref, loc))
	pl, err := s.placeTable(ctx, c.mt, c.ref, loc, !proposed, props)
	if err != nil {
		return nil, err
	}
	snaps, ok := commit.AddedSnapshots(c.upds)
	if !ok {
		return nil, badRequest("an add-snapshot update cannot be read")
	}
	if len(snaps) > 0 {
		places, err := placesOf(loc, props)
		if err != nil {
			return nil, err
		}
		fsys, err := iceio.LoadFS(ctx, catalog.StorageProps(c.mt.Props, nil), loc)
		if err != nil {
			return nil, err
		}
		for i := range snaps {
			if err := places.Check("manifest-list", snaps[i].ManifestList); err != nil {
				return nil, err
			}
			if _, _, err := effects(fsys, nil, &snaps[i], places); err != nil {
				return nil, err
			}
		}
	}
	meta, mloc, err := c.mt.Internal().CommitTable(ctx, c.ref.Ident(), c.reqs, c.upds)
	if err != nil {
		if errors.Is(err, icecat.ErrTableAlreadyExists) {
			return nil, fmt.Errorf("%w: %s was created meanwhile: %v", ErrCommitFailed, c.ref, err)
		}
		return nil, err
	}
	s.proposed.Remove(proposalKey(c.ref, loc))
	if err := s.settle(ctx, c.mt, c.ref, pl); err != nil {
		return nil, err
	}
	audit.From(ctx).Wrote(c.ref.String(), snapshotOf(meta))
	return commitTableResponse{MetadataLocation: mloc, Metadata: meta}, nil
}
