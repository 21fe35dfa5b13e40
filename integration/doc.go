// Package integration holds icefloe's end-to-end suites: an in-process
// cluster (coordinator and workers on 127.0.0.1:0) driven through real
// clients — the Go ADBC driver that Python ADBC runs — and compared with
// single-node DuckDB on the same snapshot.
package integration
