// Package worker is the Flight server of a worker. Its DoGet opens a sealed
// wire.Ticket, reopens each pinned table through the metadata cache, reads
// the ticket's planned file tasks with iceberg-go into DuckDB temp tables,
// runs the fragment SQL and streams the result with exactly the schema the
// coordinator planned.
//
// Any read error fails the stream: a worker never returns fewer rows
// silently. Errors become gRPC status codes in one function, toStatus.
//
// worker never imports planner; what crosses between them is a wire value.
package worker
