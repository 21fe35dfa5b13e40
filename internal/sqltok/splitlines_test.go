package sqltok

import "testing"

func TestSplitLines(t *testing.T) {
	src := "SELECT 1;\n\n-- a comment\nSELECT\n  2; SELECT 'a;\nb';\nSELECT 'unterminated"
	got := SplitLines(src)
	want := []Statement{{"SELECT 1", 1}, {"-- a comment\nSELECT\n  2", 3}, {"SELECT 'a;\nb'", 5}, {"SELECT 'unterminated", 7}}
	if len(got) != len(want) {
		t.Fatalf("SplitLines = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
