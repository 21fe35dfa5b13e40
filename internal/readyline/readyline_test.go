package readyline

import "testing"

func TestFields(t *testing.T) {
	line := "2026-12-01T21:22:35.616Z\tinfo\ticefloe coordinator ready\t{\"coordinator\": \"grpc://127.0.0.1:34869\", \"auth\": false}"
	f := Fields(line)
	if f["coordinator"] != "grpc://127.0.0.1:34869" || f["auth"] != false {
		t.Fatalf("Fields = %v", f)
	}
	for _, l := range []string{
		"2026-12-01T21:22:35.616Z\tinfo\tworker joined planning\t{\"worker\": \"grpc://127.0.0.1:1\"}",
		"2026-12-01T21:22:35.616Z\tinfo\ticefloe ready\t{not json",
		"",
	} {
		if f := Fields(l); f != nil {
			t.Errorf("Fields(%q) = %v, want nil", l, f)
		}
	}
}
