// Package flightsql is the coordinator's Arrow Flight SQL surface.
//
// A Server answers every Flight SQL command a JDBC, ADBC or Go client sends:
// statement and prepared-statement queries and updates, the metadata
// commands (catalogs, schemas, tables with their Arrow schemas, table types,
// keys, type info), GetSqlInfo with every standard key, and session options
// (catalog and schema) carried in a stateless cookie. Queries are planned by
// a Backend into endpoints that workers serve; the coordinator serves only
// metadata and the update counts it issues itself. What a Backend offers
// beyond planning and running statements (bulk ingest, ticket renewal,
// parameter schemas) it declares in Capabilities.
//
// The Server is stateless: prepared-statement handles and update-count
// tickets are sealed with the cluster key and carry everything needed to
// run them, so several coordinators can stand behind one address.
//
// Errors become gRPC statuses in one place, ToStatus.
//
// Which workers are live is not this package's business: the composition
// root hands the planner a worker set (package fleet) and the server its
// Membership.
package flightsql
