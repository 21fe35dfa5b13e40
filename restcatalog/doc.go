// Package restcatalog is the coordinator's Iceberg REST catalog server:
// the catalog API of the Iceberg REST specification (config, OAuth2
// tokens, namespaces, tables, views, commits and multi-table
// transactions) over every mounted catalog, so that Spark, pyiceberg,
// Trino and DuckDB's iceberg extension read and write icefloe's tables
// under the same users, grants and commit path as its SQL clients.
//
// A request authenticates as a Flight call does (internal/auth: Basic
// credentials, icefloe's own bearer tokens, external JWTs); the OAuth2
// client-credentials endpoint exchanges a user's name and password for
// icefloe's bearer token. Privileges are those of the SQL path
// (internal/authz): loading a table needs SELECT, listings show what the
// caller may see, creates and drops go through the guarded catalogs, and
// a commit needs the privilege of the SQL statement that would make the
// same change: a snapshot's privilege follows from the files it adds and
// removes (read from its manifests, not from its claimed operation), every
// other update needs ALTER. Commits go through internal/commit against the
// same catalogs the SQL path commits to, with the requirements checked
// against the current metadata, so a REST commit and a SQL commit race
// as two SQL commits do.
//
// The first path segment after /v1/ is the prefix, the name of a mounted
// catalog: GET /v1/config?warehouse=NAME answers it.
//
// It imports catalog and the internal packages only: no planner, statement
// or flightsql. The composition root (cluster) starts it on its
// own listener with the coordinator's TLS.
package restcatalog
