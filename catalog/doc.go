// Package catalog mounts Iceberg catalogs by name, loads a table per query
// pinned to one metadata location, and keeps the LRU of opened metadata
// (keyed by metadata location) that workers reopen tables through.
package catalog
