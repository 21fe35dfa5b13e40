package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/internal/sqltok"
)

func TestCompleteStatements(t *testing.T) {
	for _, tc := range []struct {
		in    string
		stmts []sqltok.Statement
		rest  string
		ok    bool
	}{
		{"SELECT 1\n", nil, "", false},
		{"SELECT ';\n", nil, "", false}, // an open literal
		{"SELECT 1 -- ;\n", nil, "", false},
		{"SELECT 1;\n", []sqltok.Statement{{Text: "SELECT 1", Line: 1}}, "\n", true},
		{"SELECT\n1; SELECT 2; SELECT\n", []sqltok.Statement{{Text: "SELECT\n1", Line: 1}, {Text: "SELECT 2", Line: 2}}, " SELECT\n", true},
	} {
		stmts, rest, ok := completeStatements(tc.in)
		if ok != tc.ok || rest != tc.rest || !reflect.DeepEqual(stmts, tc.stmts) {
			t.Errorf("completeStatements(%q) = %+v, %q, %v; want %+v, %q, %v", tc.in, stmts, rest, ok, tc.stmts, tc.rest, tc.ok)
		}
	}
}

func TestShortcuts(t *testing.T) {
	show := func(stmt string) shortcutCmd { return shortcutCmd{kind: "sql", sql: stmt} }
	for in, want := range map[string]shortcutCmd{
		`\q`: {quit: true}, `.quit`: {quit: true}, "exit": {quit: true}, " quit ; ": {quit: true},
		`\?`: {kind: "help"}, ".help": {kind: "help"},
		`\l`: show("SHOW CATALOGS"), ".catalogs": show("SHOW CATALOGS"), ".databases": show("SHOW CATALOGS"),
		`\dn`: show("SHOW SCHEMAS"), `\dn s%`: show("SHOW SCHEMAS LIKE 's%'"),
		`\dt`: show("SHOW TABLES"), ".tables": show("SHOW TABLES"), `\d`: show("SHOW TABLES"),
		`\dt ord%`:                show("SHOW TABLES LIKE 'ord%'"),
		`\dt sales.o'%`:           show("SHOW TABLES FROM sales LIKE 'o''%'"),
		`\dt local."x y".`:        show(`SHOW TABLES FROM local."x y"`),
		`\d orders`:               show("DESCRIBE orders"),
		`\d local.default.orders`: show("DESCRIBE local.default.orders"), ".schema t": show("DESCRIBE t"),
		`\x`: {kind: "unknown", arg: `\x`},
	} {
		got, ok := shortcut(in)
		if !ok || got != want {
			t.Errorf("shortcut(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"SELECT 1;", "exit now", "", "quit_table"} {
		if got, ok := shortcut(in); ok {
			t.Errorf("shortcut(%q) = %+v: SQL taken for a command", in, got)
		}
	}
}

func TestAddrDefaultPort(t *testing.T) {
	for in, want := range map[string]string{
		"localhost": "localhost:32010", "127.0.0.1:5": "127.0.0.1:5", "h:": "h:32010",
		"grpc://h": "h:32010", "grpc+tls://h:443": "h:443", "::1": "[::1]:32010", "[::1]:7": "[::1]:7",
	} {
		if got, _, err := parseAddr(in); err != nil || got != want {
			t.Errorf("parseAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCompleter(t *testing.T) {
	c := &completer{names: []string{"local.default.orders", "default.orders", "orders", "status"}}
	head, got, tail := c.complete("select sta from x", 10)
	if head != "select " || tail != " from x" || !reflect.DeepEqual(got, []string{"status"}) {
		t.Errorf("complete = %q %q %q", head, got, tail)
	}
	if _, got, _ := c.complete("SEL", 3); !reflect.DeepEqual(got, []string{"SELECT "}) {
		t.Errorf("keyword: %q", got)
	}
	if _, got, _ := c.complete("from local.def", 14); !reflect.DeepEqual(got, []string{"local.default.orders"}) {
		t.Errorf("qualified: %q", got)
	}
}

// TestTablePages: the table format prints a page at a time (its memory is
// one page, whatever the result's size), one header, the total in the
// footer, and columns that only widen.
func TestTablePages(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var out bytes.Buffer
	tw := &tableWriter{out: &out}
	if err := tw.begin(schema); err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	total := 0
	for batch := range 5 {
		for i := range tablePageRows - 1 {
			b.Append(int64(batch*100000 + i))
		}
		arr := b.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
		arr.Release()
		if err := tw.write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		total += tablePageRows - 1
		if len(tw.page) >= tablePageRows {
			t.Fatalf("holds %d rows, more than a page", len(tw.page))
		}
		if batch == 1 && !strings.Contains(out.String(), "    998\n") {
			t.Fatalf("nothing printed after two batches (%d bytes)", out.Len())
		}
	}
	if err := tw.end(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Count(text, "\n--") != 1 || !strings.HasSuffix(text, "(4995 rows)\n") || strings.Count(text, "\n") != total+3 {
		t.Fatalf("output: %d lines, ends %q", strings.Count(text, "\n"), text[len(text)-40:])
	}
	if !strings.HasPrefix(text, "      n\n--------\n      0\n") {
		t.Errorf("first page: %q", text[:30])
	}
}

// TestAddrFromEnv: $ICEFLOE_ADDR is the default of --addr; the flag wins.
func TestAddrFromEnv(t *testing.T) {
	t.Setenv(AddrEnv, "10.0.0.5:4000")
	var errOut bytes.Buffer
	if o, _, err := parseSQLArgs([]string{"SELECT 1"}, nil, &errOut); err != nil || o.addr != "10.0.0.5:4000" {
		t.Fatalf("addr %q, %v; want $%s", o.addr, err, AddrEnv)
	}
	if o, _, err := parseSQLArgs([]string{"--addr", "h:1", "SELECT 1"}, nil, &errOut); err != nil || o.addr != "h:1" {
		t.Fatalf("addr %q, %v; want the flag's", o.addr, err)
	}
}
