package integration

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A contributor's recipe ("how to add a statement kind", …) in the docs
// names the files a change of that kind touches and the symbols in them,
// in a fenced block of language recipe, one line per file:
//
//	internal/parse/kinds.go: KindTruncate, Kinds
//	statement/truncate.go: Executor.truncate
//
// A symbol is a top-level func, type, const or var of the Go file, or a
// method written Type.method. TestContributorRecipes fails when a named
// file or symbol is gone, so the recipes change with the code.
func TestContributorRecipes(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range docFiles(root) {
		for _, s := range parseSnippets(t, root, file) {
			if s.lang != "recipe" {
				continue
			}
			n++
			for _, problem := range checkRecipe(root, s.text) {
				t.Errorf("%s:%d: %s", s.file, s.line, problem)
			}
		}
	}
	if n == 0 {
		t.Fatal("the docs hold no recipe block (docs/architecture.md: how to add a statement kind)")
	}
}

// checkRecipe returns what of a recipe's files and symbols is missing.
func checkRecipe(root, text string) []string {
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		path, syms, ok := strings.Cut(line, ":")
		path = strings.TrimSpace(path)
		if !ok || path == "" {
			problems = append(problems, fmt.Sprintf("%q: want \"path: Symbol, …\"", line))
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(path))
		if _, err := os.Stat(full); err != nil {
			problems = append(problems, fmt.Sprintf("%s does not exist", path))
			continue
		}
		declared, err := goSymbols(full)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, sym := range strings.Split(syms, ",") {
			if sym = strings.TrimSpace(sym); sym != "" && !declared[sym] {
				problems = append(problems, fmt.Sprintf("%s declares no %s", path, sym))
			}
		}
	}
	return problems
}

// goSymbols are the top-level names a Go file declares: funcs, types,
// consts, vars, and methods as Type.method.
func goSymbols(path string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = receiverName(d.Recv.List[0].Type) + "." + name
			}
			out[name] = true
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					out[sp.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out, nil
}

// receiverName is a method receiver's type name, without * or type
// parameters.
func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// TestCheckRecipe: a recipe naming a file or symbol that is not there is
// caught, each by name.
func TestCheckRecipe(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	got := checkRecipe(root, "statement/truncate.go: Executor.truncate, Executor.gone, truncate\nstatement/nothere.go: X\nno colon\n")
	want := []string{"statement/truncate.go declares no Executor.gone", "statement/truncate.go declares no truncate",
		"statement/nothere.go does not exist", `"no colon": want "path: Symbol, …"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
