// Package engine wraps the DuckDB database each node embeds: it opens it
// locked down (no file access, no extensions, a memory limit with a private
// spill folder, configuration locked), and moves Arrow data in and out.
//
// It sits under both planner (binding, the parser) and worker (running
// fragments), which may not import each other.
package engine
