// Package conform retypes the Arrow data DuckDB produces into the Arrow
// schema iceberg-go writes for a table: field names, nullability and field
// ids of nested types, UUID from text and fixed from BLOB. The planner and
// the worker both write through it.
package conform
