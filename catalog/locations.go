package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// ErrLocation: a location a client chose (a table's or schema's location,
// write.data.path, …) is outside the locations its catalog allows.
var ErrLocation = errors.New("catalog: location not allowed")

// Table and schema properties that decide where files are written.
const (
	LocationKey             = "location"
	WriteDataPathKey        = "write.data.path"
	WriteMetadataPathKey    = "write.metadata.path"
	ObjectStorePathKey      = "write.object-storage.path"
	FolderStoragePathKey    = "write.folder-storage.path"
	LocationProviderImplKey = "write.location-provider.impl"
)

// PlacesFiles tells the property keys whose values are locations files
// are written under: location, write.data.path, write.metadata.path,
// write.object-storage.path, write.folder-storage.path, and any other key
// ending in "location" or ".path" (an engine may read it so).
func PlacesFiles(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, "location") || strings.HasSuffix(k, ".path")
}

// Locations are the location prefixes under which clients may place
// tables and their files in one catalog: its warehouse, when that is a
// location, and the prefixes the operator allows besides.
type Locations struct {
	prefixes []place
	shown    []string // as configured, for messages
}

// place is a normalised location: a scheme, a bucket (or host) and the
// path's segments.
type place struct {
	scheme, bucket string
	segs           []string
}

// NewLocations allows what is under warehouse (when it is a location: an
// absolute path or a URL; REST catalogs often name a warehouse instead)
// and under each of extra, which must all be locations.
func NewLocations(warehouse string, extra []string) (Locations, error) {
	var l Locations
	if p, err := normalise(warehouse); err == nil && warehouse != "" {
		l.prefixes, l.shown = append(l.prefixes, p), append(l.shown, warehouse)
	}
	for _, e := range extra {
		p, err := normalise(e)
		if err != nil {
			return Locations{}, fmt.Errorf("allowed location %q: %w", e, err)
		}
		l.prefixes, l.shown = append(l.prefixes, p), append(l.shown, e)
	}
	return l, nil
}

// Check returns nil if loc, given for property key, is under one of the
// allowed prefixes, and an error wrapping ErrLocation naming the key
// otherwise.
func (l Locations) Check(key, loc string) error {
	if strings.EqualFold(key, LocationProviderImplKey) {
		return fmt.Errorf("%w: %s: a location provider class decides where files go; it cannot be set", ErrLocation, key)
	}
	p, err := normalise(loc)
	shown := redactLocation(loc)
	if err != nil {
		return fmt.Errorf("%w: %s: %q %v", ErrLocation, key, shown, err)
	}
	for _, pre := range l.prefixes {
		if p.under(pre) {
			return nil
		}
	}
	if len(l.prefixes) == 0 {
		return fmt.Errorf("%w: %s: %q: this catalog allows no locations chosen in SQL (set allowed_locations in its config)", ErrLocation, key, shown)
	}
	return fmt.Errorf("%w: %s: %q is outside the catalog's warehouse (%s)", ErrLocation, key, shown, strings.Join(l.shown, ", "))
}

// CheckPlacement refuses properties that would place files outside the
// locations mt allows: the value of every key PlacesFiles names must lie
// under mt.Locations, and a location provider class cannot be set. It is
// the first half of where a client may place a table's or schema's files,
// for SQL and the REST catalog alike; the second is that the places the
// client chose (ClientPlaces) need the LOCATION privilege and must be
// free of every other table (Mounts.CheckFree). Errors wrap ErrLocation.
func (mt *Mount) CheckPlacement(props iceberg.Properties) error {
	for _, k := range SortedKeys(props) {
		if !PlacesFiles(k) && !strings.EqualFold(k, LocationProviderImplKey) {
			continue
		}
		if err := mt.Locations.Check(k, props[k]); err != nil {
			return err
		}
	}
	return nil
}

// ClientPlaces are the places a client chose for a table at loc (chosen
// by the client, or else by icefloe: TableLocation) with props: loc when
// the client chose it, and every value of a property placing files
// (PlacesOf) that is not under loc. Choosing any needs the LOCATION
// privilege, and each must be free (Mounts.CheckFree).
func ClientPlaces(loc string, chosen bool, props iceberg.Properties) []string {
	var out []string
	if chosen {
		out = append(out, loc)
	}
	for _, p := range PlacesOf(loc, props)[1:] {
		if loc == "" || !Under(p, loc) {
			out = append(out, p)
		}
	}
	return out
}

// Under tells whether loc is prefix or lies in it, both normalised as
// Check normalises them; false when either does not normalise.
func Under(loc, prefix string) bool {
	p, err := normalise(loc)
	if err != nil {
		return false
	}
	pre, err := normalise(prefix)
	return err == nil && p.under(pre)
}

func (p place) under(pre place) bool {
	if p.scheme != pre.scheme || p.bucket != pre.bucket || len(p.segs) < len(pre.segs) {
		return false
	}
	for i, s := range pre.segs {
		if p.segs[i] != s {
			return false
		}
	}
	return true
}

// schemeAliases are schemes that name the same store.
var schemeAliases = map[string]string{"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "wasbs": "wasb"}

// normalise parses a location: a local one (an absolute path or a
// file:// URL) with "." and ".." resolved and symbolic links followed as
// far as the path exists; an object store one with its scheme's aliases
// folded and its bucket lower-cased, where "." and ".." segments, empty
// segments, escapes, queries and credentials are refused (object stores
// take them literally, other readers may not).
func normalise(loc string) (place, error) {
	if lp, ok := LocalPath(loc); ok {
		return place{scheme: "file", segs: segments(resolveLinks(lp))}, nil
	}
	u, err := url.Parse(loc)
	switch {
	case err != nil:
		return place{}, errors.New("is not a location")
	case u.Scheme == "" || u.Opaque != "":
		return place{}, errors.New("is not an absolute path or a URL")
	case u.Scheme == "file":
		return place{}, errors.New("is not a local path on this host")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawPath != "" || strings.Contains(loc, "%"):
		return place{}, errors.New("has credentials, a query, a fragment or escapes")
	case u.Host == "":
		return place{}, errors.New("names no bucket")
	}
	scheme := strings.ToLower(u.Scheme)
	if a, ok := schemeAliases[scheme]; ok {
		scheme = a
	}
	p := strings.TrimPrefix(u.Path, "/")
	var segs []string
	if p != "" {
		segs = strings.Split(strings.TrimSuffix(p, "/"), "/")
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return place{}, errors.New("has an empty, \".\" or \"..\" path segment")
		}
	}
	return place{scheme: scheme, bucket: strings.ToLower(u.Host), segs: segs}, nil
}

// resolveLinks follows symbolic links in the longest part of the clean,
// absolute path p that exists, and keeps the rest as it is.
func resolveLinks(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		} else if !errors.Is(err, os.ErrNotExist) {
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func segments(p string) []string {
	p = path.Clean(filepath.ToSlash(p))
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// redactLocation is loc without credentials or query, for messages.
func redactLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		if strings.ContainsAny(loc, "@?") {
			return "(a location that is not a URL)"
		}
		return loc
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	return u.String()
}

// TableLocation is a fresh location for a new table called ref.Table in
// ref's schema of mt: a folder of its own in the schema's folder
// (Mount.SchemaFolder), named after the table and a random UUID
// (<schema folder>/<name>-<32 hex digits>, as Trino's unique table
// locations), so no other table, earlier or later, dropped or renamed,
// shares it. "" when the schema's folder cannot be told: the catalog
// then chooses.
func (mt *Mount) TableLocation(ctx context.Context, ref TableRef) string {
	folder := mt.SchemaFolder(ctx, ref.Ident()[:len(ref.Ident())-1])
	if folder == "" {
		return ""
	}
	return TableLocationIn(folder, ref.Table)
}

// TableLocationIn is a fresh location for a new table called name in
// folder: <folder>/<name>-<32 hex digits> (see TableLocation).
func TableLocationIn(folder, name string) string {
	return strings.TrimSuffix(folder, "/") + "/" + folderName(name) + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")
}

// folderName is a table's name as a path segment: letters, digits, "_",
// "-" and "." kept, anything else (a "/", a "%", spaces) as "_", at most
// 64 bytes, never "." or "..".
func folderName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || strings.Trim(s, ".") == "" {
		return "t" + s
	}
	return s
}

// tableFolder matches the last segment of a TableLocation.
var tableFolder = regexp.MustCompile(`-[0-9a-f]{32}$`)

// isTableFolder tells whether a folder's name is one TableLocation makes.
func isTableFolder(name string) bool { return tableFolder.MatchString(name) }
