package cluster

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layer is one floor of the module's floor plan. A package imports only
// packages on lower floors, and packages of its own floor only where the
// floor is open (its packages build on one another).
type layer struct {
	name     string
	packages []string // module-relative paths; "dir/..." is dir and below
	open     bool
}

// layers are the floors, bottom first; docs/architecture.md (Layers) shows
// the same table, and TestLayersDocumented holds the two together.
var layers = []layer{
	{name: "wire", packages: []string{"wire"}},
	{name: "libraries", open: true, packages: []string{
		"internal/admit", "internal/audit", "internal/auth", "internal/cachestats", "internal/colmeta",
		"internal/conform", "internal/datacache", "internal/drain", "internal/engine",
		"internal/exchange", "internal/flightclient", "internal/flightio", "internal/flightio/crafted",
		"internal/membership", "internal/membudget", "internal/memsize",
		"internal/parse", "internal/partstats", "internal/pqfile", "internal/queryreg",
		"internal/readyline", "internal/resultcache", "internal/sqltok", "internal/streamidle", "internal/suggest",
		"internal/tlsconf", "internal/tracing", "planner/plan",
	}},
	{name: "catalog", open: true, packages: []string{"catalog/tablecrypt", "catalog"}},
	{name: "catalog services", open: true, packages: []string{
		"internal/authz", "internal/commit", "internal/directscan", "internal/icemeta", "internal/metrics",
		"internal/orphans", "internal/testlocal",
	}},
	{name: "planning", packages: []string{"planner"}},
	{name: "execution", packages: []string{"statement"}},
	{name: "services", packages: []string{"fleet", "internal/status", "restcatalog", "worker"}},
	{name: "surface", packages: []string{"flightsql"}},
	{name: "composition root", packages: []string{"cluster"}},
	{name: "binaries", open: true, packages: []string{"cmd/...", "bench/...", "deploy/...", "integration/..."}},
}

// denied are imports the floors would allow but the design does not: the
// worker's read path stands apart from planning and execution, and the
// REST catalog speaks to catalogs only.
var denied = map[string][]string{
	"worker":      {"planner", "statement"},
	"restcatalog": {"planner", "statement"},
}

const module = "github.com/icefloe/icefloe"

// floorOf returns the index of the floor holding pkg (module-relative), or -1.
func floorOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l.packages {
			if p == pkg || strings.HasSuffix(p, "/...") && (pkg == strings.TrimSuffix(p, "/...") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "..."))) {
				return i
			}
		}
	}
	return -1
}

type listed struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// modulePackages lists every package of the module with its imports and
// its in-package tests' imports (external test packages, package x_test,
// are not importable and may drive the whole system; they are left out).
func modulePackages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "duckdb_arrow", "-json=ImportPath,Imports,TestImports", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// layerProblems reports every import in pkgs that breaks the floor plan.
func layerProblems(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		ff := floorOf(from)
		if ff < 0 {
			out = append(out, from+": on no floor (add it to layers and docs/architecture.md)")
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports) {
			to, ours := rel(imp)
			if !ours || to == from {
				continue
			}
			tf := floorOf(to)
			switch {
			case tf < 0:
				continue // reported as its own package
			case tf > ff:
				out = append(out, from+" ("+layers[ff].name+") imports "+to+" ("+layers[tf].name+"), a floor above")
			case tf == ff && !layers[ff].open:
				out = append(out, from+" imports "+to+", on its own floor ("+layers[ff].name+")")
			}
			if slices.Contains(denied[from], to) {
				out = append(out, from+" imports "+to+", which the design keeps apart")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestLayers holds the module to its floor plan: no package imports the
// composition root (cluster) or any other package above its floor.
func TestLayers(t *testing.T) {
	for _, p := range layerProblems(modulePackages(t)) {
		t.Error(p)
	}
}

// TestLayersCatch shows the check fails on the imports it is there to refuse.
func TestLayersCatch(t *testing.T) {
	bad := []listed{
		{ImportPath: module + "/statement", Imports: []string{module + "/cluster"}},
		{ImportPath: module + "/planner", TestImports: []string{module + "/statement"}},
		{ImportPath: module + "/worker", Imports: []string{module + "/planner"}},
		{ImportPath: module + "/internal/authz", Imports: []string{module + "/planner"}},
		{ImportPath: module + "/fleet", Imports: []string{module + "/restcatalog"}},
		{ImportPath: module + "/newthing"},
	}
	got := layerProblems(bad)
	if len(got) != len(bad) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(bad), strings.Join(got, "\n"))
	}
	for _, want := range []string{"statement (execution) imports cluster", "planner (planning) imports statement", "worker imports planner, which", "internal/authz (catalog services) imports planner", "fleet imports restcatalog, on its own floor", "newthing: on no floor"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no problem %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestLayersDocumented checks that docs/architecture.md's Layers table
// lists the same floors, in the same order, with the same packages.
func TestLayersDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layers\n")
	if !ok {
		t.Fatal("docs/architecture.md has no ## Layers section")
	}
	var doc [][]string // floor name, then packages
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "floor" {
			continue
		}
		row := []string{strings.TrimSpace(cells[0])}
		for _, f := range strings.Split(cells[1], ",") {
			row = append(row, strings.Trim(strings.TrimSpace(f), "`"))
		}
		doc = append(doc, row)
	}
	// The doc lists the top floor first, as a building's directory does.
	slices.Reverse(doc)
	if len(doc) != len(layers) {
		t.Fatalf("docs/architecture.md lists %d floors, the test %d", len(doc), len(layers))
	}
	for i, l := range layers {
		if doc[i][0] != l.name {
			t.Errorf("floor %d: doc %q, test %q", i, doc[i][0], l.name)
			continue
		}
		got, want := slices.Sorted(slices.Values(doc[i][1:])), slices.Sorted(slices.Values(l.packages))
		if !slices.Equal(got, want) {
			t.Errorf("floor %s: doc lists %v, the test %v", l.name, got, want)
		}
	}
}
