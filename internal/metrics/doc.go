// Package metrics defines icefloe's Prometheus metrics (client_golang)
// and serves them, with /healthz, the status page and the profiling
// handlers, on a process's one HTTP listener (http.go).
//
// Every name carries the icefloe_ prefix and its unit; labels take a
// bounded set of values only (kinds, strategies, states, gRPC codes),
// never SQL text, table names or principals. docs/operations.md lists
// every metric and what to alert on.
package metrics
