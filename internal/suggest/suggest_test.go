package suggest

import "testing"

func TestNearest(t *testing.T) {
	keys := []string{"listen", "data_dir", "workers", "memory_limit", "threads", "ticket_key", "ticket_ttl"}
	for _, tc := range []struct{ name, want string }{
		{"memroy_limit", "memory_limit"}, // swapped letters
		{"memory_limt", "memory_limit"},
		{"MEMORY_LIMIT", "memory_limit"},
		{"worker", "workers"},
		{"ticket_tl", "ticket_ttl"},
		{"datadir", "data_dir"},
		{"colour", ""}, // nothing close
		{"x", ""},
	} {
		if got := Nearest(tc.name, keys); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Hint("lisen", keys); got != ` (did you mean "listen"?)` {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("zzzzzz", keys); got != "" {
		t.Errorf("Hint of a far name = %q", got)
	}
}

func TestNearestTableNames(t *testing.T) {
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
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"héllo", "hello", 1}, {"same", "same", 0},
		{"flaw", "lawn", 2}, {"é", "e", 1},
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
