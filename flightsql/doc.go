// Package flightsql is the coordinator's Arrow Flight SQL surface.
//
// A Server answers every Flight SQL command a JDBC, ADBC or Go client sends:
// statement and prepared-statement queries and updates, the metadata
// commands (catalogs, schemas, tables with their Arrow schemas, table types,
// keys, type info), GetSqlInfo with every standard key, and session options
// (catalog and schema) carried in a stateless cookie. Queries are planned by
// a Planner into endpoints that workers serve; the coordinator serves only
// metadata and the update counts it issues itself.
//
// The Server is stateless: prepared-statement handles and update-count
// tickets are sealed with the cluster key and carry everything needed to
// run them, so several coordinators can stand behind one address.
//
// Errors become gRPC statuses in one place, ToStatus.
//
// WorkerPool tells the planner which workers are live, checking each with
// the standard gRPC health protocol; StaticWorkers is a fixed list.
package flightsql
