// Package plan is the physical plan of a distributed query as a value: a
// tree of scans, fragments, exchanges and partial/final aggregates that
// prints as an indented tree, with each node's estimated rows and bytes
// (from the statistics the coordinator has: manifest record counts and
// file sizes) and, once a query ran under EXPLAIN ANALYZE, the rows,
// bytes and time measured on it.
//
// The planner's rules build plans; one lowering step in package planner
// turns a plan into sealed tickets. The package knows nothing of tickets,
// catalogs or workers: a Scan names the query's input by index, and a
// Fragment's placement says where its instances run, not which worker.
package plan
