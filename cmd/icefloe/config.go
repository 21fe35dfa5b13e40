package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/restcatalog"
)

// Config is the optional YAML file given with --config. Values may use
// ${VAR} to read the environment. Flags override the file.
type Config struct {
	// Listen is the coordinator's (or a worker's) host:port.
	Listen string `yaml:"listen"`
	// HTTPListen is the host:port of the HTTP listener (/metrics,
	// /healthz, the coordinator's status page); empty means none.
	HTTPListen string `yaml:"http_listen,omitempty"`
	// HTTPHosts are the host names the status page and the profiles
	// answer to besides IP addresses, localhost and http_listen's host
	// (the Host header; names a reverse proxy or DNS gives the listener).
	HTTPHosts []string `yaml:"http_hosts,omitempty"`
	// DataDir holds the embedded catalog, warehouse and spill folders.
	DataDir string `yaml:"data_dir"`
	// Workers is how many in-process workers `serve` starts.
	Workers int `yaml:"workers"`
	// WorkerAddresses are the workers a separate coordinator plans over.
	WorkerAddresses []string `yaml:"worker_addresses"`
	// WorkerDNS is host:port: a separate coordinator's workers are every
	// address host resolves to (a Kubernetes headless service), resolved
	// again every 5 s.
	WorkerDNS string `yaml:"worker_dns"`
	// Announce are coordinator addresses a worker announces itself to.
	Announce []string `yaml:"announce"`
	// AdvertiseHost is the host in a worker's location (what clients and
	// coordinators dial), when it listens on an unspecified address.
	AdvertiseHost string `yaml:"advertise_host"`
	// HealthInterval is how often a coordinator checks each worker.
	HealthInterval time.Duration `yaml:"health_interval"`
	// DrainTimeout is how long a role lets work in flight finish after
	// SIGTERM before it ends it with UNAVAILABLE.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// TicketKey is the cluster key shared by coordinator and workers; the
	// ICEFLOE_TICKET_KEY environment variable is used when it is empty.
	TicketKey string `yaml:"ticket_key"`
	// MemoryLimit is each DuckDB's memory limit, e.g. "4GB".
	MemoryLimit string `yaml:"memory_limit"`
	// Threads is each DuckDB's thread count; 0 means all CPUs.
	Threads int `yaml:"threads"`
	// MetadataCacheBytes bounds the coordinator's and each worker's
	// metadata cache (parsed table metadata, manifests, memoised plans),
	// in bytes of memory they hold; 0 means the default (256 MiB).
	MetadataCacheBytes int64 `yaml:"metadata_cache_bytes"`
	// DataCacheDir holds each worker's local copies of object-store data
	// files; empty means <data_dir>/cache.
	DataCacheDir string `yaml:"data_cache_dir"`
	// DataCacheBytes bounds each worker's data cache; unset means the
	// default (4 GiB), 0 turns the cache off.
	DataCacheBytes *int64 `yaml:"data_cache_bytes"`
	// ResultCacheBytes bounds the coordinator's result cache; unset means
	// the default (64 MiB), 0 turns the cache off.
	ResultCacheBytes *int64 `yaml:"result_cache_bytes"`
	// Catalogs are mounted besides the embedded "local" one, each under
	// its name: a type (rest, glue, sql) and iceberg-go's properties.
	Catalogs []catalog.Config `yaml:"catalogs"`
	// TicketTTL is how long a planned ticket stays valid (e.g. 5m); 0
	// means the planner's default.
	TicketTTL time.Duration `yaml:"ticket_ttl,omitempty"`
	// BroadcastBytes, ShuffleBytes and ShufflePartitions choose how a
	// coordinator runs joins (planner.Options); 0 means the planner's
	// defaults, a negative ShuffleBytes shuffles every join that can be.
	BroadcastBytes    int64 `yaml:"broadcast_bytes,omitempty"`
	ShuffleBytes      int64 `yaml:"shuffle_bytes,omitempty"`
	ShufflePartitions int   `yaml:"shuffle_partitions,omitempty"`
	// Auth turns authentication (and authorization) on.
	Auth *AuthConfig `yaml:"auth,omitempty"`
	// TLS turns TLS on for every listener.
	TLS *TLSConfig `yaml:"tls,omitempty"`
	// Audit writes one JSON line per statement and per login failure.
	Audit *AuditConfig `yaml:"audit,omitempty"`
	// Limits bound what runs at once and for how long (limits.go).
	Limits *LimitsConfig `yaml:"limits,omitempty"`
	// Tracing sends OpenTelemetry spans to a collector (tracing.go).
	Tracing *TracingConfig `yaml:"tracing,omitempty"`
	// REST serves the Iceberg REST catalog on the coordinator
	// (docs/rest-catalog.md).
	REST *RESTConfig `yaml:"rest,omitempty"`
}

// RESTConfig configures the coordinator's Iceberg REST catalog.
type RESTConfig struct {
	// Listen is its host:port (what --rest-addr sets); empty: none.
	Listen string `yaml:"listen,omitempty"`
	// Credentials is what a table load hands out for the table's files:
	// none (the default), vended (what an upstream REST catalog vended)
	// or static (the catalog's own configured keys).
	Credentials string `yaml:"credentials,omitempty"`
}

// AuthConfig lists who may log in and what they may do.
type AuthConfig struct {
	Users []UserConfig `yaml:"users,omitempty"`
	Roles []RoleConfig `yaml:"roles,omitempty"`
	// TokenTTL is the lifetime of the bearer tokens issued at login.
	TokenTTL time.Duration `yaml:"token_ttl,omitempty"`
	// JWT accepts external tokens a JWKS verifies.
	JWT *JWTConfig `yaml:"jwt,omitempty"`
}

// UserConfig is one user who logs in with a password.
type UserConfig struct {
	Name string `yaml:"name"`
	// PasswordHash is a bcrypt hash: `icefloe passwd` makes one.
	PasswordHash string   `yaml:"password_hash"`
	Roles        []string `yaml:"roles,omitempty"`
	// Attributes are read by row filters and column masks
	// (current_user_attribute('region')).
	Attributes map[string]string `yaml:"attributes,omitempty"`
}

// RoleConfig is a role and its grants; the role admin is built in.
type RoleConfig struct {
	Name   string        `yaml:"name"`
	Grants []GrantConfig `yaml:"grants,omitempty"`
}

// GrantConfig grants privileges on the objects a pattern names.
type GrantConfig struct {
	Privileges []string `yaml:"privileges"`
	// On is catalog, catalog.schema or catalog.schema.table; each part
	// may be a glob (*, ?, [...]).
	On string `yaml:"on"`
	// Where, on a grant of SELECT alone, is a row filter: the rows it
	// gives are those the SQL predicate holds for.
	Where string `yaml:"where,omitempty"`
	// Masks, on a grant of SELECT alone, replace each named column by an
	// SQL expression.
	Masks []MaskConfig `yaml:"masks,omitempty"`
}

// MaskConfig masks one column for the readers of a grant.
type MaskConfig struct {
	Column string `yaml:"column"`
	Expr   string `yaml:"expr"`
}

// JWTConfig accepts external JWTs.
type JWTConfig struct {
	JWKSFile       string `yaml:"jwks_file,omitempty"`
	JWKSURL        string `yaml:"jwks_url,omitempty"`
	Issuer         string `yaml:"issuer"`
	Audience       string `yaml:"audience"`
	PrincipalClaim string `yaml:"principal_claim,omitempty"`
	RolesClaim     string `yaml:"roles_claim,omitempty"`
	// AttributeClaims become the principal's attributes.
	AttributeClaims []string `yaml:"attribute_claims,omitempty"`
	DefaultRoles    []string `yaml:"default_roles,omitempty"`
}

// TLSConfig secures every listener of the cluster.
type TLSConfig struct {
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// CAFile signs the servers' certificates: what coordinator and
	// workers verify each other against (default: the system's roots).
	CAFile string `yaml:"ca_file,omitempty"`
	// Dev makes a throwaway CA and certificate in the data dir (as
	// serve --tls does) instead of the files.
	Dev bool `yaml:"dev,omitempty"`
}

// AuditConfig says where the audit log goes.
type AuditConfig struct {
	// File receives one JSON line per statement and per failed login;
	// every line also goes to the server log at info.
	File string `yaml:"file,omitempty"`
	// RedactLiterals replaces the literals of logged SQL with ?.
	RedactLiterals bool `yaml:"redact_literals,omitempty"`
}

// TicketKeyEnv is the environment variable holding the cluster key.
const TicketKeyEnv = "ICEFLOE_TICKET_KEY"

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// loadConfig reads path (if not empty), expanding ${VAR} in values; a
// reference to an unset variable is an error naming it, and so is an
// unknown key (with the nearest known one).
func loadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return c, fmt.Errorf("config %s: %s", path, catalog.ScrubText(err.Error()))
	}
	if len(doc.Content) == 0 {
		return c, c.Validate() // an empty file
	}
	missing, values := expandEnv(&doc)
	if len(missing) > 0 {
		slices.Sort(missing)
		return c, fmt.Errorf("config %s: unset environment variables: %s", path, strings.Join(slices.Compact(missing), ", "))
	}
	if errs := checkKeys(doc.Content[0], reflect.TypeOf(c), ""); len(errs) > 0 {
		return c, fmt.Errorf("config %s: %w", path, errors.Join(errs...))
	}
	if err := doc.Content[0].Decode(&c); err != nil {
		// The parser may quote a value, and ${VAR}s hold the secrets.
		return c, fmt.Errorf("config %s: %s", path, catalog.Scrub(err.Error(), values))
	}
	return c, c.Validate()
}

// emptyItems reports each empty address of the list under key.
func emptyItems(key string, list []string) []error {
	var errs []error
	for i, a := range list {
		if a == "" {
			errs = append(errs, fmt.Errorf("config: %s[%d]: empty", key, i))
		}
	}
	return errs
}

// Validate reports every problem at once, naming the key.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("config: workers: must be >= 0, got %d", c.Workers))
	}
	if c.Threads < 0 {
		errs = append(errs, fmt.Errorf("config: threads: must be >= 0, got %d", c.Threads))
	}
	errs = append(errs, emptyItems("worker_addresses", c.WorkerAddresses)...)
	if c.HealthInterval < 0 {
		errs = append(errs, fmt.Errorf("config: health_interval: must be >= 0, got %s", c.HealthInterval))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("config: drain_timeout: must be >= 0, got %s", c.DrainTimeout))
	}
	errs = append(errs, emptyItems("announce", c.Announce)...)
	if c.MetadataCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("config: metadata_cache_bytes: must be >= 0, got %d", c.MetadataCacheBytes))
	}
	if c.ResultCacheBytes != nil && *c.ResultCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("config: result_cache_bytes: must be >= 0 (0 turns the cache off), got %d", *c.ResultCacheBytes))
	}
	if c.DataCacheBytes != nil && *c.DataCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("config: data_cache_bytes: must be >= 0 (0 turns the cache off), got %d", *c.DataCacheBytes))
	}
	if c.TicketTTL < 0 {
		errs = append(errs, fmt.Errorf("config: ticket_ttl: must be >= 0, got %s", c.TicketTTL))
	}
	if r := c.REST; r != nil {
		switch restcatalog.Credentials(r.Credentials) {
		case "", restcatalog.CredentialsNone, restcatalog.CredentialsVended, restcatalog.CredentialsStatic:
		default:
			errs = append(errs, fmt.Errorf("config: rest.credentials: %q: want none, vended or static", r.Credentials))
		}
	}
	if c.BroadcastBytes < 0 {
		errs = append(errs, fmt.Errorf("config: broadcast_bytes: must be >= 0, got %d", c.BroadcastBytes))
	}
	if c.ShufflePartitions < 0 {
		errs = append(errs, fmt.Errorf("config: shuffle_partitions: must be >= 0, got %d", c.ShufflePartitions))
	}
	errs = append(errs, c.Auth.validate(), c.TLS.validate(), c.Limits.validate(), c.Tracing.validate())
	seen := map[string]int{catalog.LocalCatalogName: -1}
	for i, cat := range c.Catalogs {
		key := fmt.Sprintf("catalogs[%d]", i)
		if err := cat.Validate(key); err != nil {
			errs = append(errs, err)
		}
		if j, dup := seen[cat.Name]; dup && cat.Name != "" {
			if j < 0 {
				errs = append(errs, fmt.Errorf("config: %s.name: %q is the embedded catalog's name", key, cat.Name))
			} else {
				errs = append(errs, fmt.Errorf("config: %s.name: %q already names catalogs[%d]", key, cat.Name, j))
			}
		} else {
			seen[cat.Name] = i
		}
	}
	errs = append(errs, c.validateValues())
	return errors.Join(errs...)
}

// String prints the config with secrets redacted.
func (c Config) String() string {
	r := c
	if r.TicketKey != "" {
		r.TicketKey = "<redacted>"
	}
	r.WorkerAddresses = make([]string, len(c.WorkerAddresses))
	for i, a := range c.WorkerAddresses {
		r.WorkerAddresses[i] = catalog.Redacted(map[string]string{"address": a})["address"]
	}
	r.Catalogs = make([]catalog.Config, len(c.Catalogs))
	for i, cat := range c.Catalogs {
		cat.Properties = catalog.Redacted(cat.Properties)
		r.Catalogs[i] = cat
	}
	r.Auth = c.Auth.redacted()
	out, _ := yaml.Marshal(r)
	return string(out)
}

// resultCacheBytes is result_cache_bytes as the coordinator takes it: 0
// for the default, negative for off.
func (c *Config) resultCacheBytes() int64 {
	switch {
	case c.ResultCacheBytes == nil:
		return 0
	case *c.ResultCacheBytes == 0:
		return -1
	}
	return *c.ResultCacheBytes
}
