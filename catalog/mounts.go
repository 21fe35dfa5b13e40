package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/encryption"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog/tablecrypt"
)

// Errors of this package; they wrap iceberg-go's catalog errors where one
// is the cause, so errors.Is works with both.
var (
	ErrCatalogNotFound = errors.New("catalog: catalog not found")
	ErrSchemaNotFound  = errors.New("catalog: schema not found")
	ErrTableNotFound   = errors.New("catalog: table not found")
	// ErrEncrypted: the table is encrypted (encryption.key-id) and its
	// key cannot be had: no KMS on the catalog, or the KMS does not hold
	// the key.
	ErrEncrypted = errors.New("catalog: encrypted table cannot be opened")
)

// TableRef names a table by catalog, schema (a one-level namespace) and name.
type TableRef struct {
	Catalog string
	Schema  string
	Table   string
}

// String returns catalog.schema.table.
func (r TableRef) String() string { return r.Catalog + "." + r.Schema + "." + r.Table }

// Ident is the iceberg-go identifier of the table within its catalog.
func (r TableRef) Ident() table.Identifier { return table.Identifier{r.Schema, r.Table} }

// Pinned is a table loaded for one query, pinned to one metadata location.
type Pinned struct {
	Ref              TableRef
	Table            *table.Table
	MetadataLocation string
	// StorageProps open the table's files. They may hold credentials: they go
	// to workers only inside sealed tickets and are never logged.
	StorageProps map[string]string
	// Vended are the storage properties a REST catalog vended with the
	// table (also in StorageProps); nil when none were.
	Vended map[string]string
	// CredentialsExpire is when the storage credentials vended with the
	// table expire; zero when none were vended or no expiry was given.
	// Tickets carrying them expire no later.
	CredentialsExpire time.Time
}

// Mount is one mounted catalog.
type Mount struct {
	Name string
	// Catalog is the catalog as clients may use it: behind the guard, if
	// the mounts have one (Mounts.SetGuard).
	Catalog icecat.Catalog
	// Props are the properties the catalog was opened with; the storage
	// ones are handed to workers.
	Props iceberg.Properties
	// Locations are where SQL may place tables, schemas and their files:
	// under the warehouse, and under the configured allowed locations.
	Locations Locations
	// KMS wraps the keys of the catalog's encrypted tables (kms-type in
	// Props); nil when none is configured.
	KMS encryption.KeyManagementClient
	// keys caches unwrapped table keys by wrapped key; shared by the
	// copies SetGuard makes.
	keys *sync.Map

	// internal is the catalog for steps already authorized as a whole;
	// raw is the catalog itself.
	internal, raw icecat.Catalog
}

// Internal returns the catalog for steps the caller authorized as a whole
// (a replace's staging table): the guard's privilege checks are left out,
// what it reports (dropped tables) is kept.
func (m *Mount) Internal() icecat.Catalog { return m.internal }

// GuardFunc wraps a mounted catalog: guarded is what clients use,
// internal what already authorized steps use.
type GuardFunc func(mount string, c icecat.Catalog) (guarded, internal icecat.Catalog)

// String names the mount without its properties.
func (m *Mount) String() string {
	return fmt.Sprintf("catalog %s (%s)", m.Name, m.raw.CatalogType())
}

// Locator is a catalog that can tell a table's current metadata location
// without loading the table (the SQL catalogs icefloe opens). ok false
// means it cannot say, and the table is loaded the usual way.
type Locator interface {
	MetadataLocation(ctx context.Context, ident table.Identifier) (location string, ok bool, err error)
}

// Mounts holds the mounted catalogs by name, and the cache their tables'
// metadata is read through. It is safe for concurrent use.
type Mounts struct {
	mu     sync.RWMutex
	mounts map[string]*Mount
	cache  *MetadataCache
	guard  GuardFunc
}

// NewMounts returns an empty set of mounts with a metadata cache of the
// default size.
func NewMounts() *Mounts {
	return &Mounts{mounts: map[string]*Mount{}, cache: NewMetadataCache(0)}
}

// SetCache replaces the metadata cache; call it before the first load.
func (m *Mounts) SetCache(c *MetadataCache) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cache = c
}

// Cache is the cache tables are loaded through: the planner reads
// manifests and memoises file plans through it too.
func (m *Mounts) Cache() *MetadataCache {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cache
}

// Mount adds a catalog under name. Locations chosen in SQL must be under
// its warehouse (props["warehouse"], when that is a location) or one of
// allowed.
func (m *Mounts) Mount(name string, cat icecat.Catalog, props iceberg.Properties, allowed ...string) error {
	if name == "" || strings.ContainsAny(name, ".\"") {
		return fmt.Errorf("catalog: invalid catalog name %q", name)
	}
	locs, err := NewLocations(props["warehouse"], allowed)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mounts[name]; ok {
		return fmt.Errorf("catalog: catalog %q mounted twice", name)
	}
	kms, err := tablecrypt.LoadKMS(props)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", name, err)
	}
	m.mounts[name] = m.newMount(&Mount{Name: name, Props: props, Locations: locs, KMS: kms, keys: &sync.Map{}, raw: cat})
	return nil
}

// newMount puts the raw catalog of mt behind the guard, if any, and
// leaves staging tables out of its listings (staging.go).
func (m *Mounts) newMount(mt *Mount) *Mount {
	hidden := hideStaging{mt.raw}
	mt.Catalog, mt.internal = hidden, hidden
	if m.guard != nil {
		mt.Catalog, mt.internal = m.guard(mt.Name, hidden)
	}
	return mt
}

// SetGuard puts every catalog, mounted already or later, behind guard.
func (m *Mounts) SetGuard(guard GuardFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.guard = guard
	for name, mt := range m.mounts {
		cp := *mt
		m.mounts[name] = m.newMount(&cp)
	}
}

// Names returns the mounted catalog names, sorted.
func (m *Mounts) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.mounts))
}

// Get returns the mount called name.
func (m *Mounts) Get(name string) (*Mount, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mt, ok := m.mounts[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrCatalogNotFound, name)
	}
	return mt, nil
}

// Close closes every catalog that can be closed.
func (m *Mounts) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, mt := range m.mounts {
		if c, ok := mt.raw.(icecat.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// LoadTable loads ref's current metadata and pins it. A catalog that is a
// Locator is asked only for the metadata location, and the metadata comes
// from the cache: a warm load costs one catalog lookup, however large the
// metadata file.
func (m *Mounts) LoadTable(ctx context.Context, ref TableRef) (*Pinned, error) {
	mt, err := m.Get(ref.Catalog)
	if err != nil {
		return nil, err
	}
	tbl, err := m.load(ctx, mt, ref)
	if err != nil {
		if errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace) {
			return nil, fmt.Errorf("%w: %s", ErrTableNotFound, ref)
		}
		return nil, classify(ref.Catalog, fmt.Errorf("load table %s: %w", ref, err))
	}
	p := &Pinned{
		Ref:              ref,
		Table:            tbl,
		MetadataLocation: tbl.MetadataLocation(),
		StorageProps:     StorageProps(mt.Props, tbl.Properties()),
	}
	if err := mt.decrypt(ctx, p); err != nil {
		return nil, err
	}
	if v, ok := mt.raw.(Vending); ok {
		if props, expires, ok := v.VendedProps(p.MetadataLocation); ok {
			maps.Copy(p.StorageProps, props)
			p.Vended, p.CredentialsExpire = props, expires
		}
	}
	return p, nil
}

// load loads the table of ref from mt, through the cache when mt's
// catalog is a Locator. The location is asked of the catalog itself (the
// guard does not forward Locator, and passes loads through unchecked:
// reads are authorized by the planner before they load); the table
// commits through mt.Catalog, behind the guard.
func (m *Mounts) load(ctx context.Context, mt *Mount, ref TableRef) (*table.Table, error) {
	if l, ok := mt.raw.(Locator); ok {
		loc, found, err := l.MetadataLocation(ctx, ref.Ident())
		if err != nil {
			return nil, err
		}
		if found {
			return m.Cache().Load(ctx, ref.Ident(), loc, mt.Props, mt.Catalog)
		}
	}
	return mt.Catalog.LoadTable(ctx, ref.Ident())
}

// decrypt makes an encrypted table's files readable: its key, unwrapped
// by the mount's KMS, wraps the table's IO and joins the storage
// properties (which reach workers only inside sealed tickets).
func (mt *Mount) decrypt(ctx context.Context, p *Pinned) error {
	props := p.Table.Properties()
	keyID := props[tablecrypt.KeyIDProp]
	if keyID == "" {
		return nil
	}
	wrapped := props[tablecrypt.WrappedKeyProp]
	var key []byte
	if v, ok := mt.keys.Load(keyID + "\x00" + wrapped); ok {
		key = v.([]byte)
	} else {
		k, err := tablecrypt.TableKey(ctx, mt.KMS, keyID, wrapped)
		if err != nil {
			return fmt.Errorf("%w: %s is encrypted with KMS key %q: %v", ErrEncrypted, p.Ref, keyID, err)
		}
		mt.keys.Store(keyID+"\x00"+wrapped, k)
		key = k
	}
	tbl := p.Table
	p.Table = table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		tablecrypt.WrapFunc(tbl.FS, tbl.Location(), key), mt.Catalog)
	p.StorageProps[tablecrypt.TableKeyProp] = tablecrypt.EncodeKey(key)
	return nil
}

// storagePrefixes are the property prefixes FileIO reads.
var storagePrefixes = []string{"s3.", "gcs.", "adls.", "client.", "io-impl", "py-io-impl", "warehouse"}

// StorageProps picks the FileIO properties out of catalog and table
// properties; table properties win.
func StorageProps(catalogProps, tableProps iceberg.Properties) map[string]string {
	out := map[string]string{}
	for _, props := range []iceberg.Properties{catalogProps, tableProps} {
		for k, v := range props {
			for _, p := range storagePrefixes {
				if strings.HasPrefix(k, p) {
					out[k] = v
					break
				}
			}
		}
	}
	return out
}
