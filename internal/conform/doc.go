// Package conform retypes the Arrow data DuckDB produces into the Arrow
// schema iceberg-go writes for a table: field names, nullability and field
// ids of nested types, UUID from text and fixed from BLOB. It also refuses
// values Iceberg cannot store and readers cannot read back (Validate):
// invalid UTF-8, DuckDB's infinities, dates and timestamps outside years
// 1 to 9999, times past 24:00. The planner (INSERT … VALUES, bulk ingest)
// and the workers' writers (INSERT … SELECT, CTAS, UPDATE) both write
// through it.
package conform
