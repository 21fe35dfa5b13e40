// Command load is icefloe's bounded load test: real processes, many
// clients, a fixed time, every answer checked.
//
// It starts `icefloe worker` twice and `icefloe coordinator` over them
// (127.0.0.1, ports picked free, each stopped by PID at the end and on
// Ctrl-C), loads TPC-H orders and lineitem from tpchgen-cli's Parquet
// files through ADBC bulk ingest, then runs three phases of -duration each:
//
//   - mixed: -clients clients, each looping over a weighted mix of full
//     table scans (all endpoints pulled in parallel), TPC-H-like
//     aggregates, point and small queries (SELECT 1, a filter hitting one
//     file) and one-row INSERTs into a table of their own (a new one
//     each phase, so the phases compare);
//   - cross: the same clients plus one running cross joins of orders with
//     itself (a count over a non-equi condition, a top-N sort of the
//     whole product) under a session statement timeout;
//   - mixed again: the first phase once more, as the control.
//
// Per kind and overall it reports queries per second, p50/p99 latency,
// errors by gRPC code and wrong answers (each answer is compared with
// figures computed from the Parquet files while loading; the INSERT
// tables must hold exactly the acknowledged rows at the end), the peak RSS
// of every process (VmRSS sampled every 250 ms, and VmHWM), goroutines of
// every process before and after each phase (pprof), and the load
// average. Results go to -out as JSON; -doc rewrites the section of
// docs/benchmarks.md between its load markers. -report FILE only
// rewrites the section from an earlier results file.
//
// Written in Go rather than Python so that 17 clients run truly in
// parallel without the GIL and the client's own overhead stays small
// next to the server's; it uses the same ADBC Flight SQL driver Python
// wraps.
//
//	make bench-load
//
// Reported, never asserted; a wrong answer or a lost or doubled INSERT
// makes it exit non-zero.
//
// With -soak DURATION it runs the soak instead (soak.go): -soak-clients
// clients of reads, INSERTs, DELETEs and abandoned streams with
// expire_snapshots every minute, every process's live heap sampled, and
// each one's live-heap slope in MB/min as the figure:
//
//	make bench-soak
package main
