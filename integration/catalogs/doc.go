// Package catalogs holds icefloe's suites against real catalog servers:
// the Iceberg REST reference server (behind an OAuth2 gateway that makes
// tokens expire), AWS Glue and S3 on moto's server, and the SQL catalog on
// PostgreSQL, with pyiceberg as the other engine. The tests need the
// `catalogs` build tag and the servers' programs; ./run installs and runs
// them.
package catalogs
