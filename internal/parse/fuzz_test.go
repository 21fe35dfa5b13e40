package parse

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; a statement that parses has a kind and
// a body, every piece of text its body holds (expressions, queries, the
// statement of EXPLAIN) is a piece of its text, and parsing is a
// function of the text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "UPDATE t SET l = [1, 2], s = {'a': 1} WHERE x", "DELETE FROM t WHERE a",
		"INSERT INTO t (a) VALUES (1)", "INSERT INTO t (SELECT 1)", "CREATE TABLE t (a INT) PARTITIONED BY (bucket(4, a)) WITH (k = 1)",
		"CREATE TABLE t AS SELECT 1", "CREATE OR REPLACE VIEW v AS SELECT 1", "EXPLAIN ANALYZE SELECT 1",
		"MERGE INTO t USING s ON a WHEN MATCHED THEN UPDATE SET a = 1 WHEN NOT MATCHED THEN INSERT VALUES (1)",
		"ALTER TABLE t CREATE BRANCH b RETAIN 1 DAYS", "ALTER TABLE t EXECUTE optimize WHERE a > 1",
		"ALTER TABLE t ADD PARTITION FIELD day(ts)", "CALL system.f(a => map('k', 'v'), b => array(1))",
		"SHOW TABLES FROM s LIKE 'x'", "DESCRIBE SELECT 1", "USE c.s", "TRUNCATE t", "DROP SCHEMA s CASCADE",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := Parse(s)
		again, err2 := Parse(s)
		if (err == nil) != (err2 == nil) || st.Kind != again.Kind || !reflect.DeepEqual(st.Body, again.Body) {
			t.Fatalf("%q: two parses differ", s)
		}
		if err != nil {
			if st.Kind != KindInvalid || st.Body != nil {
				t.Fatalf("%q: failed parse with kind %v", s, st.Kind)
			}
			return
		}
		if st.Kind == KindInvalid || st.Body == nil || st.Info().Runner == 0 {
			t.Fatalf("%q: parsed without kind or body", s)
		}
		texts(t, s, reflect.ValueOf(st.Body))
	})
}

// texts checks that every string and sub-statement text in v is in s.
func texts(t *testing.T, s string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			if st, ok := v.Interface().(*Statement); ok {
				if !strings.Contains(s, st.Text) {
					t.Fatalf("%q: inner statement %q is not in the text", s, st.Text)
				}
				texts(t, s, reflect.ValueOf(st.Body))
				return
			}
			texts(t, s, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			switch {
			case !f.IsExported():
			case cutText[f.Name] && f.Type.Kind() == reflect.String:
				if x := v.Field(i).String(); !strings.Contains(s, x) {
					t.Fatalf("%q: %s %q is not in the text", s, f.Name, x)
				}
			case cutText[f.Name] && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
				for j := range v.Field(i).Len() {
					if x := v.Field(i).Index(j).String(); !strings.Contains(s, x) {
						t.Fatalf("%q: %s %q is not in the text", s, f.Name, x)
					}
				}
			default:
				texts(t, s, v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			texts(t, s, v.Index(i))
		}
	}
}

// cutText are the fields that hold text cut from the statement as it is
// (not names or decoded literals).
var cutText = map[string]bool{"Expr": true, "Where": true, "Values": true, "Columns": false, "Def": true,
	"Type": true, "Source": true, "Exprs": true}
