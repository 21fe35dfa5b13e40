// Package catalog mounts Iceberg catalogs by name, loads a table per query
// pinned to one metadata location, and keeps the LRU of opened metadata
// (keyed by metadata location, bounded by bytes) that workers reopen tables
// through.
//
// Open turns a Config (name, type rest/glue/sql, iceberg-go properties)
// into a catalog without consulting ~/.iceberg-go.yaml. REST catalogs run
// OAuth2 client credentials through OAuthTransport (refresh before expiry,
// one refresh and retry after 401/419) and remember the storage
// credentials they vend (Vending). Catalog failures are classified as
// ErrUnavailable or ErrUnauthenticated, naming the catalog and never its
// secrets. InspectMetaTable computes "t$snapshots" and the other metadata
// tables from pinned metadata.
package catalog
