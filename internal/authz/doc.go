// Package authz decides what an authenticated principal may do with
// catalog objects: roles with grants of privileges (SELECT, INSERT,
// UPDATE, DELETE, CREATE, DROP, ALTER) on catalogs, schemas and tables
// named by patterns (a SELECT grant may carry a row filter and column
// masks: restrict.go), and the built-in admin role that may do everything.
//
// The planner checks every table a statement touches when it plans it;
// Guard wraps each mounted catalog so that no catalog change (create,
// drop, rename, commit) happens without the privilege, listings show only
// what the caller may see, and dropped tables are reported (their tickets
// stop being served).
package authz
