package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the Grafana dashboard the Helm chart ships.
const dashboardFile = "../deploy/helm/icefloe/dashboards/icefloe.json"

// promqlFunctions are PromQL's functions and aggregations: metricsql,
// which parses the expressions, accepts MetricsQL's others too, which
// Prometheus would refuse.
var promqlFunctions = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min
		count_over_time day_of_month day_of_week day_of_year days_in_month delta deriv exp floor histogram_avg
		histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum
		holt_winters hour idelta increase irate label_join label_replace last_over_time ln log10 log2
		mad_over_time max_over_time min_over_time minute month predict_linear present_over_time quantile_over_time
		rate resets round scalar sgn sort sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time time
		timestamp vector year
		sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio`) {
		promqlFunctions[f] = true
	}
}

// exported is what the processes' /metrics expose: each series name
// (a histogram's as _bucket, _sum and _count) with its label names.
type exported map[string]map[string]bool

func exportedOf(fams ...map[string]*dto.MetricFamily) exported {
	out := exported{}
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		ls := out[name]
		if ls == nil {
			ls = map[string]bool{"job": true, "instance": true} // Prometheus adds them
			out[name] = ls
		}
		for _, l := range labels {
			ls[l.GetName()] = true
		}
		for _, e := range extra {
			ls[e] = true
		}
	}
	for _, fs := range fams {
		for name, f := range fs {
			for _, m := range f.GetMetric() {
				switch f.GetType() {
				case dto.MetricType_HISTOGRAM:
					add(name+"_bucket", m.GetLabel(), "le")
					add(name+"_sum", m.GetLabel())
					add(name+"_count", m.GetLabel())
				case dto.MetricType_SUMMARY:
					add(name, m.GetLabel(), "quantile")
					add(name+"_sum", m.GetLabel())
					add(name+"_count", m.GetLabel())
				default:
					add(name, m.GetLabel())
				}
			}
		}
	}
	return out
}

// family is the metric family a series name belongs to.
func family(series string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(series, s); ok && !strings.HasSuffix(series, "_total") {
			return f
		}
	}
	return series
}

// grafanaVars are Grafana's interval variables, as a Prometheus query
// gets them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// labelValues is a query variable's label_values(metric, label).
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// checkExpr parses one panel query as PromQL and returns the metric
// names it reads, or what is wrong with it: a function PromQL lacks, a
// metric the processes do not export, or an aggregation by a label none
// of its metrics has.
func checkExpr(expr string, have exported) (names []string, problems []string) {
	e, err := metricsql.Parse(grafanaVars.Replace(expr))
	if err != nil {
		return nil, []string{fmt.Sprintf("does not parse: %v", err)}
	}
	metricsOf := func(e metricsql.Expr) []string {
		var out []string
		metricsql.VisitAll(e, func(x metricsql.Expr) {
			if me, ok := x.(*metricsql.MetricExpr); ok {
				for _, lfs := range me.LabelFilterss {
					for _, lf := range lfs {
						if lf.Label == "__name__" {
							out = append(out, lf.Value)
						}
					}
				}
			}
		})
		return out
	}
	names = metricsOf(e)
	if len(names) == 0 {
		problems = append(problems, "names no metric")
	}
	for _, n := range names {
		if have[n] == nil {
			problems = append(problems, fmt.Sprintf("names %s, which no process exports", n))
		}
	}
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		switch f := x.(type) {
		case *metricsql.FuncExpr:
			if !promqlFunctions[f.Name] {
				problems = append(problems, fmt.Sprintf("calls %s, which PromQL does not have", f.Name))
			}
		case *metricsql.AggrFuncExpr:
			if !promqlFunctions[f.Name] {
				problems = append(problems, fmt.Sprintf("aggregates with %s, which PromQL does not have", f.Name))
			}
			ms := metricsOf(f)
			for _, l := range f.Modifier.Args {
				if !slices.ContainsFunc(ms, func(m string) bool { return have[m][l] }) {
					problems = append(problems, fmt.Sprintf("aggregates %s by %q, a label none of %v has", f.Name, l, ms))
				}
			}
		}
	})
	return names, problems
}

// sdkErr is err, nil for the empty error list the Grafana Foundation SDK
// returns when all went well.
func sdkErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// dashboardTarget is one query of a dashboard panel.
type dashboardTarget struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	Datasource struct {
		Type string `json:"type"`
	} `json:"datasource"`
}

// dashboardPanel is one panel of a dashboard, as its JSON has it.
type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	GridPos    struct{ H, W, X, Y int }
	Datasource *struct {
		Type, UID string
	} `json:"datasource"`
	Targets []dashboardTarget `json:"targets"`
}

// dashboardVariable is one templating variable of a dashboard.
type dashboardVariable struct {
	Name, Type string
	Query      json.RawMessage
}

// dashboardProblems checks a dashboard's JSON: Grafana's dashboard schema
// (the Grafana Foundation SDK's strict decoding of it, with every panel
// and query type it knows), the layout, and each query against what the
// processes export; used lists the metric families its panels read.
func dashboardProblems(raw []byte, have exported) (problems []string, used map[string]bool) {
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(raw)); err != nil {
		problems = append(problems, "not a Grafana dashboard: "+err.Error())
	} else if err := sdkErr(d.Validate()); err != nil {
		problems = append(problems, "not a valid Grafana dashboard: "+err.Error())
	}
	// The layout and the queries, from the JSON itself.
	var doc struct {
		SchemaVersion int              `json:"schemaVersion"`
		UID           string           `json:"uid"`
		Title         string           `json:"title"`
		Panels        []dashboardPanel `json:"panels"`
		Templating    struct {
			List []dashboardVariable
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return append(problems, "JSON: "+err.Error()), nil
	}
	if doc.SchemaVersion < 36 || doc.UID == "" || doc.Title == "" {
		problems = append(problems, fmt.Sprintf("schemaVersion %d, uid %q, title %q: want a schemaVersion of Grafana 9 or later, a uid and a title", doc.SchemaVersion, doc.UID, doc.Title))
	}
	used = map[string]bool{}
	ids := map[int]bool{}
	cells := map[[2]int]string{} // (x, y) of every grid cell a panel covers
	for _, p := range doc.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		problems = append(problems, panelPlaceProblems(p, name, ids, cells)...)
		if p.Type == "row" {
			continue
		}
		problems = append(problems, panelQueryProblems(p, name, have, used)...)
	}
	return append(problems, variableProblems(doc.Templating.List, have)...), used
}

// panelPlaceProblems checks a panel's id, title and place on the grid,
// against the ids and cells of the panels before it (which it adds to).
func panelPlaceProblems(p dashboardPanel, name string, ids map[int]bool, cells map[[2]int]string) []string {
	var problems []string
	if ids[p.ID] || p.ID <= 0 || p.Title == "" {
		problems = append(problems, name+": an id used twice or none, or no title")
	}
	ids[p.ID] = true
	g := p.GridPos
	if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
		problems = append(problems, fmt.Sprintf("%s: gridPos %+v outside the 24 columns", name, g))
	}
	for x := g.X; x < g.X+g.W; x++ {
		for y := g.Y; y < g.Y+g.H; y++ {
			if other, ok := cells[[2]int{x, y}]; ok {
				problems = append(problems, fmt.Sprintf("%s overlaps %s", name, other))
				x, y = g.X+g.W, g.Y+g.H
				continue
			}
			cells[[2]int{x, y}] = name
		}
	}
	return problems
}

// panelQueryProblems checks a panel's data source and queries against the
// exported metrics, and marks the metric families they use.
func panelQueryProblems(p dashboardPanel, name string, have exported, used map[string]bool) []string {
	var problems []string
	if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
		problems = append(problems, name+": no Prometheus data source from the datasource variable, or no query")
	}
	refs := map[string]bool{}
	for _, tg := range p.Targets {
		if refs[tg.RefID] || tg.RefID == "" || tg.Datasource.Type != "prometheus" {
			problems = append(problems, fmt.Sprintf("%s: query %q has no refId of its own or no Prometheus data source", name, tg.RefID))
		}
		refs[tg.RefID] = true
		names, bad := checkExpr(tg.Expr, have)
		for _, b := range bad {
			problems = append(problems, fmt.Sprintf("%s, query %s (%s): %s", name, tg.RefID, tg.Expr, b))
		}
		for _, n := range names {
			used[family(n)] = true
		}
	}
	return problems
}

// variableProblems checks that every query variable is label_values of an
// exported metric's label.
func variableProblems(vars []dashboardVariable, have exported) []string {
	var problems []string
	for _, v := range vars {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if json.Unmarshal(v.Query, &q) != nil {
			_ = json.Unmarshal(v.Query, &q.Query)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil || !have[m[1]][m[2]] {
			problems = append(problems, fmt.Sprintf("variable %s: query %q is no label_values of an exported metric's label", v.Name, q.Query))
		}
	}
	return problems
}

// The Grafana dashboard the chart ships, against what a real coordinator
// and worker export after a workload: it decodes strictly as a Grafana
// dashboard, every query parses as PromQL and reads metrics (and groups
// by labels) the processes export, and every icefloe metric family has a
// panel, as do each process's resident memory and Go heap. The check
// itself finds a misspelt metric, a label no metric has and a
// MetricsQL-only function.
func TestGrafanaDashboard(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	bin := icefloeBin(t)
	dataDir := t.TempDir()
	env := []string{"ICEFLOE_TICKET_KEY=dashboard-test-key"}
	w := startRole(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0")
	c := startRole(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0",
		"--worker", w["worker"].(string))
	cnxn := adbcConn(t, strings.TrimPrefix(c["coordinator"].(string), "grpc://"))

	// A workload that reaches every labelled series: queries of each
	// strategy (endpoints and children), a failure, writes (write
	// fragments, commits).
	execUpdate(t, cnxn, "CREATE TABLE dash (k BIGINT, g VARCHAR)")
	for i := range 3 {
		execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO dash SELECT range, 'g' || (range %% 5) FROM range(%d, %d)", i*1000, (i+1)*1000))
	}
	execUpdate(t, cnxn, "INSERT INTO dash SELECT k + 10000, g FROM dash")
	mustQuery(t, cnxn, "SELECT * FROM dash WHERE k < 10")
	mustQuery(t, cnxn, "SELECT g, count(*) FROM dash GROUP BY g")
	mustQuery(t, cnxn, "SELECT g, median(k) FROM dash GROUP BY g")
	if _, err := query(t, cnxn, "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("a query of a missing table answered")
	}
	coord, work := scrape(t, c["http"].(string)), scrape(t, w["http"].(string))
	have := exportedOf(coord, work)

	problems, used := dashboardProblems(raw, have)
	for _, p := range problems {
		t.Error(p)
	}
	var missing []string
	for name := range have {
		f := family(name)
		if strings.HasPrefix(f, "icefloe_") && !used[f] {
			missing = append(missing, f)
		}
	}
	for _, f := range []string{"process_resident_memory_bytes", "go_memstats_heap_inuse_bytes"} {
		if !used[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	if missing = slices.Compact(missing); len(missing) > 0 {
		t.Errorf("no panel shows %v", missing)
	}
	t.Logf("%d metric families in %d panels' queries; the processes export %d series names", len(used), strings.Count(string(raw), `"type": "timeseries"`), len(have))

	// The check finds what it is for.
	for _, c := range []struct{ from, to, want string }{
		{"icefloe_commit_conflicts_total", "icefloe_commit_conflict_total", "icefloe_commit_conflict_total, which no process exports"},
		{"sum by (outcome)", "sum by (outcom)", `by "outcom", a label none of`},
		{"histogram_quantile(0.99,", "median_over_time(0.99,", "median_over_time, which PromQL does not have"},
		{`"schemaVersion": 39`, `"schemaVersion": "39"`, "not a Grafana dashboard"},
		{`"legendFormat"`, `"legendFormatt"`, "unexpected field 'legendFormatt'"},
		{`"showLegend"`, `"showLegends"`, "unexpected field 'showLegends'"},
		{`"x": 8,`, `"x": 4,`, "overlaps"},
	} {
		bad := strings.Replace(string(raw), c.from, c.to, 1)
		if bad == string(raw) {
			t.Fatalf("the dashboard has no %q to break", c.from)
		}
		problems, _ := dashboardProblems([]byte(bad), have)
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("with %q for %q the check reports %v, want %q", c.to, c.from, problems, c.want)
		}
	}
}
