package flightsql

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/engine"
)

// TestSqlInfoListsAreDuckDBs keeps GetSqlInfo true to the engine: the
// keywords are exactly DuckDB's reserved keywords, and every function
// named in a function list is a DuckDB function.
func TestSqlInfoListsAreDuckDBs(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "128MB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	strs := func(q string) []string {
		rows, err := conn.DB().QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	reserved := strs("SELECT upper(keyword_name) FROM duckdb_keywords() WHERE keyword_category = 'reserved' ORDER BY 1")
	got := slices.Clone(keywords)
	slices.Sort(got)
	if !slices.Equal(got, reserved) {
		t.Errorf("keywords differ from DuckDB's reserved keywords:\n got  %v\n want %v", got, reserved)
	}
	fns := map[string]bool{}
	for _, f := range strs("SELECT DISTINCT upper(function_name) FROM duckdb_functions()") {
		fns[f] = true
	}
	// Special forms the parser turns into expressions, not functions.
	special := map[string]bool{"CAST": true, "EXTRACT": true, "COALESCE": true, "NULLIF": true,
		"CURRENT_DATE": true, "CURRENT_TIME": true, "CURRENT_TIMESTAMP": true, "CURRENT_USER": true,
		"USER": true, "POSITION": true, "TRIM": true, "SUBSTRING": true, "CURRENT_CATALOG": true,
		"CURRENT_SCHEMA": true, "IFNULL": true}
	for name, list := range map[string][]string{"numeric": numericFunctions, "string": stringFunctions,
		"system": systemFunctions, "datetime": datetimeFunctions} {
		for _, f := range list {
			if f != strings.ToUpper(f) {
				t.Errorf("%s function %s: not upper case", name, f)
			}
			if !fns[f] && !special[f] {
				t.Errorf("%s function %s is not a DuckDB function", name, f)
			}
		}
	}
}
