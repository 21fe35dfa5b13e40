package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceconfig "github.com/apache/iceberg-go/config"

	// FileIO for S3, GCS and Azure blob storage: tables may live on any.
	_ "github.com/apache/iceberg-go/io/gocloud"
	// Database drivers of the SQL catalog: "pg" for PostgreSQL, sqliteshim
	// for SQLite.
	_ "github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// Catalog kinds a Config may name.
const (
	TypeREST = "rest"
	TypeGlue = "glue"
	TypeSQL  = "sql"
)

// Types lists the catalog kinds Open accepts.
var Types = []string{TypeREST, TypeGlue, TypeSQL}

// Config describes one catalog to mount: a name, a kind and iceberg-go's
// properties for that kind (e.g. "uri", "warehouse", "credential",
// "glue.region", "sql.dialect", "s3.endpoint").
type Config struct {
	Name       string            `yaml:"name"`
	Type       string            `yaml:"type"`
	Properties map[string]string `yaml:"properties"`
	// AllowedLocations are location prefixes (absolute paths or URLs)
	// under which SQL may place tables besides the warehouse.
	AllowedLocations []string `yaml:"allowed_locations,omitempty"`
}

// Validate reports every problem of c at once; key prefixes the problems
// (e.g. "catalogs[0]").
func (c Config) Validate(key string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s.%s: %s", key, field, fmt.Sprintf(format, args...)))
	}
	if c.Name == "" {
		bad("name", "required")
	} else if strings.ContainsAny(c.Name, ".\" ") {
		bad("name", "%q may not contain dots, quotes or spaces", c.Name)
	}
	switch c.Type {
	case TypeREST:
		if c.Properties["uri"] == "" {
			bad("properties.uri", "required for a rest catalog")
		} else if u, err := url.Parse(c.Properties["uri"]); err != nil || u.Host == "" {
			bad("properties.uri", "not an http(s) URL")
		}
	case TypeGlue:
	case TypeSQL:
		if c.Properties["uri"] == "" {
			bad("properties.uri", "required for a sql catalog (a database DSN)")
		}
		switch d := c.Properties[sqlcat.DialectKey]; d {
		case string(sqlcat.Postgres), string(sqlcat.SQLite), "sqlite3":
		case "":
			bad("properties."+sqlcat.DialectKey, "required: postgres or sqlite")
		default:
			bad("properties."+sqlcat.DialectKey, "%q: want postgres or sqlite", d)
		}
	case "":
		bad("type", "required: one of %s", strings.Join(Types, ", "))
	default:
		bad("type", "%q: want one of %s", c.Type, strings.Join(Types, ", "))
	}
	for i, l := range c.AllowedLocations {
		if _, err := normalise(l); err != nil {
			bad(fmt.Sprintf("allowed_locations[%d]", i), "%q %v", redactLocation(l), err)
		}
	}
	return errors.Join(errs...)
}

// String names the catalog without its properties.
func (c Config) String() string { return fmt.Sprintf("catalog %s (%s)", c.Name, c.Type) }

var isolateOnce sync.Once

// isolateFromHomeConfig makes iceberg-go forget ~/.iceberg-go.yaml (or
// $GOICEBERG_HOME's): a server's catalogs come from its own config only,
// never silently from a user's home file. Worker counts it read stay.
func isolateFromHomeConfig() {
	isolateOnce.Do(func() {
		iceconfig.EnvConfig.Catalogs = nil
		iceconfig.EnvConfig.DefaultCatalog = ""
	})
}

// Open opens the catalog c describes and returns it with the properties
// its tables' storage is opened with. A failure names the catalog and is
// classified like Mounts.LoadTable's errors (ErrUnavailable,
// ErrUnauthenticated). The caller closes the catalog.
func Open(ctx context.Context, c Config) (icecat.Catalog, iceberg.Properties, error) {
	if err := c.Validate("catalog " + c.Name); err != nil {
		return nil, nil, err
	}
	isolateFromHomeConfig()
	RegisterSecrets(c.Properties)
	props := iceberg.Properties(maps.Clone(c.Properties))
	if props == nil {
		props = iceberg.Properties{}
	}
	var (
		cat icecat.Catalog
		err error
	)
	switch c.Type {
	case TypeREST:
		cat, err = openREST(ctx, c.Name, props)
	case TypeGlue:
		props["type"] = TypeGlue
		cat, err = icecat.Load(ctx, c.Name, props)
	case TypeSQL:
		props["type"] = TypeSQL
		if props[sqlcat.DialectKey] == "sqlite3" {
			props[sqlcat.DialectKey] = string(sqlcat.SQLite)
		}
		if props[sqlcat.DriverKey] == "" {
			props[sqlcat.DriverKey] = map[string]string{string(sqlcat.Postgres): "pg", string(sqlcat.SQLite): sqliteshim.ShimName}[props[sqlcat.DialectKey]]
		}
		props["uri"] = strings.TrimPrefix(props["uri"], "sql://")
		cat, err = openSQL(c.Name, props)
		if err == nil {
			err = pingSQL(ctx, cat)
		}
	}
	if err != nil {
		if cat != nil {
			if cl, ok := cat.(icecat.Closer); ok {
				cl.Close()
			}
		}
		return nil, nil, ScrubError(classify(c.Name, fmt.Errorf("open %s: %w", c, err)), Secrets(c.Properties))
	}
	// The OAuth2 credential stays with the catalog's transport; storage
	// gets the rest.
	delete(props, "credential")
	delete(props, "token")
	return cat, props, nil
}

// openSQL opens an SQL catalog over a database handle of its own, as
// iceberg-go's registry would, but keeping the handle: the catalog then
// answers metadata locations without loading tables (Locator).
func openSQL(name string, props iceberg.Properties) (icecat.Catalog, error) {
	db, err := sql.Open(props[sqlcat.DriverKey], props["uri"])
	if err != nil {
		return nil, err
	}
	dialect := sqlcat.SupportedDialect(strings.ToLower(props[sqlcat.DialectKey]))
	cat, err := sqlcat.NewCatalog(name, db, dialect, props)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &closingCatalog{Catalog: cat, db: db, dialect: dialect}, nil
}

// pingSQL makes an unreachable database fail at mount time rather than at
// the first query: listing namespaces runs one query.
func pingSQL(ctx context.Context, cat icecat.Catalog) error {
	_, err := cat.ListNamespaces(ctx, nil)
	return err
}

// openREST opens a REST catalog whose OAuth2 client credentials, if any,
// are handled by an oauthTransport: refreshed before expiry, and once more
// after a 401/419.
func openREST(ctx context.Context, name string, props iceberg.Properties) (icecat.Catalog, error) {
	uri := props["uri"]
	var opts []rest.Option
	rest2 := iceberg.Properties{}
	for k, v := range props {
		switch k {
		case "uri", "type", "credential", "scope", "oauth2-server-uri", "rest.authorization-url", "audience", "resource":
		case "token":
			opts = append(opts, rest.WithOAuthToken(v))
		case "warehouse":
			opts = append(opts, rest.WithWarehouseLocation(v))
		case "prefix":
			opts = append(opts, rest.WithPrefix(v))
		case "rest.sigv4-enabled":
			if strings.EqualFold(v, "true") {
				opts = append(opts, rest.WithSigV4RegionSvc(props["rest.signing-region"], props["rest.signing-name"]))
			}
		default:
			rest2[k] = v
		}
	}
	if len(rest2) > 0 {
		opts = append(opts, rest.WithAdditionalProps(rest2))
	}
	base := &http.Transport{Proxy: http.ProxyFromEnvironment}
	var transport http.RoundTripper = base
	if cred := props["credential"]; cred != "" {
		tokenURL := props["oauth2-server-uri"]
		if tokenURL == "" {
			tokenURL = props["rest.authorization-url"]
		}
		if tokenURL == "" {
			tokenURL = strings.TrimSuffix(uri, "/") + "/v1/oauth/tokens"
		}
		scope := props.Get("scope", "catalog")
		tr := NewOAuthTransport(OAuthConfig{
			TokenURL:   tokenURL,
			Credential: cred,
			Scope:      scope,
			Audience:   props["audience"],
			Resource:   props["resource"],
		}, transport)
		transport = tr
	}
	store := newVendedStore()
	opts = append(opts, rest.WithCustomTransport(&vendingTransport{base: transport, store: store}))
	cat, err := rest.NewCatalog(ctx, name, uri, opts...)
	if err != nil {
		base.CloseIdleConnections()
		return nil, err
	}
	return &restCatalog{Catalog: cat, vended: store, transport: base}, nil
}

// Compile-time checks that each kind is an iceberg-go catalog.
var (
	_ icecat.Catalog = (*rest.Catalog)(nil)
	_ icecat.Catalog = (*glue.Catalog)(nil)
	_ icecat.Catalog = (*sqlcat.Catalog)(nil)
)

// SortedKeys returns props' keys in order.
func SortedKeys(props map[string]string) []string { return slices.Sorted(maps.Keys(props)) }
