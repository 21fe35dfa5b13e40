package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// The load section of docs/benchmarks.md sits between these markers; a
// doc without them gets the section appended.
const (
	reportBegin = "<!-- load:begin -->"
	reportEnd   = "<!-- load:end -->"
)

// writeReport rewrites doc's load section from the results file path and
// the hand-written reading of it in notes (a missing file: none).
func writeReport(path, doc, notes string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	reading, err := os.ReadFile(notes)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(doc, []byte(replaceSection(string(text), reportBegin, reportEnd, section(&r, string(reading)))), 0o644)
}

// replaceSection puts body between the markers begin and end of text,
// replacing what was there; a text without them gets the section
// appended.
func replaceSection(text, begin, end, body string) string {
	body = begin + "\n" + body + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		return text[:i] + body + text[j+len(end):]
	}
	return strings.TrimRight(text, "\n") + "\n\n" + body + "\n"
}

func section(r *results, notes string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Under load: %d clients, %d workers, %.0f s\n\n", r.Clients, r.Workers, r.Duration)
	p("`bench/load` (a Go program: %d clients run truly in parallel and the client's own cost stays\n", r.Clients+1)
	p("small) starts `icefloe worker` ×%d and `icefloe coordinator` over them as separate processes on\n", r.Workers)
	p("127.0.0.1, loads TPC-H SF0.1 `orders` (%d rows) and `lineitem` (%d rows) through ADBC bulk\n", r.Dataset.Orders, r.Dataset.Lineitem)
	p("ingest, and runs %d phases of %.0f s. In each, %d clients (one ADBC Flight SQL connection each)\n", len(r.Phases), r.Duration, r.Clients)
	p("loop over a weighted mix (each phase INSERTs into a new table):\n\n%s\n", mixText(r.Mix))
	p("Every answer is checked against figures computed from the Parquet files while loading (row\n")
	p("counts of the scans, the groups' counts and sums, the point rows), and at the end the INSERT\n")
	p("tables must hold exactly the acknowledged rows. The second phase adds one client that runs cross\n")
	p("joins of `orders` with itself (a count over `a.o_custkey + b.o_custkey = 7777`, and a top-3 sort\n")
	p("of the whole product by price), with the session option `statement_timeout` = `%s`; the third\n", r.Config.CrossClient)
	p("runs the mix alone again, as the control.\n\n")
	p("<!-- snippet: skip reason=\"a benchmark, minutes long\" -->\n```sh\nmake bench-load\n```\n\n")
	p("Measured %s (%s) on %d cores and %.0f GiB shared with other work (builds, tests);\n", r.Started, r.Version, r.CPUs, r.MemoryGiB)
	p("the 1-minute load average is given per phase, so read absolute latencies with it. Limits of the\n")
	p("run (both configs; the workers also set `memory_limit: 1GB` for their DuckDB):\n\n")
	p("```yaml\n%s```\n\n", r.Config.Coordinator)
	summaryTable(&b, r)
	if notes = strings.TrimSpace(notes); notes != "" {
		p("%s\n\n", notes)
	}
	for _, ph := range r.Phases {
		phaseSection(&b, r, ph)
	}
	in := r.Inserts
	p("**INSERTs, all phases:** %d acknowledged, %d failed; the tables hold %d rows: %d acknowledged\n", in.Acked, in.Failed, in.Rows, in.Lost)
	p("rows missing, %d doubled, %d rows of INSERTs that had failed (a client told \"error\" for a write\n", in.Doubled, in.FailedButCommitted)
	p("that committed), %d never sent. Their data folders hold %d files besides the tables' %d (files of\n", in.Unknown, in.StrayFiles, in.DataFiles)
	p("statements that failed and were not deleted).\n\n")
	a0, a1 := r.AloneInsert[0], r.AloneInsert[1]
	p("**One INSERT alone** (%d one after another, nothing else running): p50 %.0f ms, max %.0f ms into the\n", aloneInserts, a0.P50ms, a0.MaxMs)
	p("first phase's new table (%s snapshots after them); p50 %.0f ms, max %.0f ms into the last phase's table\n", a0.Snapshots, a1.P50ms, a1.MaxMs)
	p("after it (%s snapshots after them).\n\n", a1.Snapshots)
	if r.Failed != "" {
		p("**The run failed:** %s\n\n", r.Failed)
	}
	p("Results: `bench/load/out/results.json` (every phase's RSS series, the cross-join client's\n")
	p("attempts, a message per error code).\n")
	return b.String()
}

// summaryTable compares the phases in one table: the mixed clients'
// figures, the cheapest query's, the cross-join client's, memory and the
// machine's load.
func summaryTable(b *strings.Builder, r *results) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("| phase | mixed clients: answered/s | p50 | p99 | errors | `SELECT 1` p50 / p99 | INSERT p50 / p99 | cross-join client | workers left planning | peak RSS, largest process | load average (1 min) |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range r.Phases {
		o := ph.Overall
		one := ph.Kinds[kindPoint].Queries["SELECT 1"]
		ins := ph.Kinds[kindInsert]
		cross := "—"
		if ph.Cross != nil {
			cross = fmt.Sprintf("%d answered, %s", ph.Cross.Ops, errText(ph.Cross.Errors))
		}
		var peak int64
		who := ""
		for _, n := range r.Processes {
			if ph.PeakRSSMiB[n] > peak {
				peak, who = ph.PeakRSSMiB[n], n
			}
		}
		p("| %s | %.1f | %.0f ms | %.0f ms | %s | %.0f / %.0f ms | %.0f / %.0f ms | %s | %d | %d MiB (%s) | %.1f–%.1f |\n",
			ph.Name, o.PerSecond, o.P50ms, o.P99ms, errText(o.Errors), one.P50ms, one.P99ms, ins.P50ms, ins.P99ms, cross,
			ph.WorkersLeftPlanning, peak, who, ph.Loadavg1m.Min, ph.Loadavg1m.Max)
	}
	p("\n")
}

func mixText(mix map[string]int) string {
	what := map[string]string{
		kindScan:      "full-table scans (`SELECT * FROM orders`, 4 columns of `lineitem`, all endpoints pulled in parallel)",
		kindAggregate: "aggregates (a Q1-like group-by of `lineitem`, `orders` by priority, a Q6-like filter)",
		kindPoint:     "point and small queries (`SELECT 1`, one order by key, the orders of one day: one partition)",
		kindInsert:    "one-row `INSERT`s into a table of their own",
	}
	var b strings.Builder
	for i, m := range mixWeights {
		end := ";"
		if i == len(mixWeights)-1 {
			end = "."
		}
		fmt.Fprintf(&b, "- %d%% %s%s\n", mix[m.kind], what[m.kind], end)
	}
	return b.String()
}

// avgMs is the mean of histogram name over the phase, in ms.
func avgMs(m map[string]float64, name string) float64 {
	if m[name+"_count"] == 0 {
		return 0
	}
	return m[name+"_sum"] / m[name+"_count"] * 1000
}

func errText(errs map[string]int) string {
	if len(errs) == 0 {
		return "0"
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%d %s", errs[c], c))
	}
	return strings.Join(parts, ", ")
}

func phaseSection(b *strings.Builder, r *results, ph *phase) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	extra := ""
	if ph.CrossClient {
		extra = " + 1 cross-join client"
	}
	p("### %s: %d clients%s\n\n", ph.Name, ph.Clients, extra)
	p("%.1f s from the first call to the mixed clients' last answer", ph.ElapsedSeconds)
	if ph.CrossClient {
		p(" (%.1f s to the cross-join client's)", ph.CrossSeconds)
	}
	p("; load average (1 min) %.1f–%.1f, mean %.1f.\n\n", ph.Loadavg1m.Min, ph.Loadavg1m.Max, ph.Loadavg1m.Mean)
	p("| kind | answered | per second | p50 | p99 | max | errors (gRPC code) | wrong |\n|---|---|---|---|---|---|---|---|\n")
	row := func(name string, kr *kindResult) {
		p("| %s | %d | %.1f | %.0f ms | %.0f ms | %.0f ms | %s | %d |\n", name, kr.Ops, kr.PerSecond, kr.P50ms, kr.P99ms, kr.MaxMs, errText(kr.Errors), kr.Wrong)
	}
	for _, m := range mixWeights {
		row(m.kind, ph.Kinds[m.kind])
	}
	row("**all mixed clients**", ph.Overall)
	if ph.Cross != nil {
		row("cross-join client", ph.Cross)
	}
	m := ph.Coordinator
	p("\nCoordinator: %.0f commit attempts, %.0f lost to a concurrent commit, %.0f retries; statements waited\n",
		m["icefloe_commit_attempts_total"], m["icefloe_commit_conflicts_total"], m["icefloe_commit_retries_total"])
	p("%.0f ms on average for a statement slot and planned (updates: ran) in %.0f ms on average; workers left planning %d times.\n",
		avgMs(m, "icefloe_query_queue_seconds"), avgMs(m, "icefloe_query_plan_seconds"), ph.WorkersLeftPlanning)
	p("\nBy query (answered ones):")
	var parts []string
	for _, m := range mixWeights {
		qs := ph.Kinds[m.kind].Queries
		for _, q := range slices.Sorted(maps.Keys(qs)) {
			parts = append(parts, fmt.Sprintf("%s %d, p50 %.0f ms, p99 %.0f ms", q, qs[q].Ops, qs[q].P50ms, qs[q].P99ms))
		}
	}
	p(" %s.\n", strings.Join(parts, "; "))
	p("\n| process | peak RSS (VmRSS every 250 ms) | VmHWM%s | goroutines before → after (not gRPC connections) |\n|---|---|---|---|\n",
		map[bool]string{true: " (reset at the phase's start)", false: " (since start)"}[ph.HWMReset])
	for _, n := range r.Processes {
		g := ph.Goroutines[n]
		gr := fmt.Sprintf("%d → %d (%d → %d)", g[0].Total, g[1].Total, g[0].Other, g[1].Other)
		p("| %s | %d MiB | %d MiB | %s |\n", n, ph.PeakRSSMiB[n], ph.HWMMiB[n], gr)
	}
	p("| load client | %d MiB | | |\n\n", ph.PeakRSSMiB["load client"])
	p("Goroutines read %.0f s after the last answer (once every process was back at its count before, or\n", ph.SettledSeconds)
	p("stopped changing); in brackets those that do not serve an open gRPC connection (a pooled connection\n")
	p("keeps three or four, client or server side, until it is closed).\n\n")
	if len(ph.CrossAttempts) > 0 {
		var parts []string
		for _, a := range ph.CrossAttempts {
			parts = append(parts, fmt.Sprintf("%s: %s after %.1f s", a.Query, a.Outcome, a.Seconds))
		}
		p("What the cross-join client saw, in order: %s.\n\n", strings.Join(parts, "; "))
	}
	if len(ph.Overall.Errors) > 0 || (ph.Cross != nil && len(ph.Cross.Errors) > 0) {
		p("Errors, one message per code:\n\n")
		seen := map[string]bool{}
		for _, kr := range []*kindResult{ph.Overall, ph.Cross} {
			if kr == nil {
				continue
			}
			for _, c := range slices.Sorted(maps.Keys(kr.ErrorSeen)) {
				if !seen[c] {
					seen[c] = true
					p("- `%s`: %s\n", c, strings.ReplaceAll(kr.ErrorSeen[c], "\n", " "))
				}
			}
		}
		var parts []string
		for _, kr := range []*kindResult{ph.Overall, ph.Cross} {
			if kr == nil {
				continue
			}
			for _, q := range slices.Sorted(maps.Keys(kr.ByQuery)) {
				parts = append(parts, fmt.Sprintf("%s %d", q, kr.ByQuery[q]))
			}
		}
		p("\nErrors by query: %s.\n\n", strings.Join(parts, "; "))
	}
}
