package suggest

import "testing"

func TestNearest(t *testing.T) {
	tables := []string{"orders", "lineitem", "customer", "nation"}
	for _, tc := range []struct{ name, want string }{
		{"order", "orders"},
		{"ORDRES", "orders"},
		{"lineitems", "lineitem"},
		{"custmer", "customer"},
		{"nations", "nation"},
		{"region", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Nearest(tc.name, tables); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Nearest("mytable2", []string{"MyTable", "mytable"}); got != "mytable" {
		t.Errorf("Nearest between names differing in case = %q, want mytable", got)
	}
	if got := Nearest("a", nil); got != "" {
		t.Errorf("Nearest with no candidates = %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"é", "e", 1}} {
		if got := distance([]rune(tc.a), []rune(tc.b)); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
