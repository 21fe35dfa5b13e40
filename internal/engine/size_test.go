package engine

import (
	"errors"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"4GB": 4e9, "4 GB": 4e9, "4gb": 4e9, "4.5GiB": 4.5 * (1 << 30), "512MiB": 512 << 20,
		"4 g": 4e9, "2gigabytes": 2e9, " 1TB ": 1e12,
	} {
		got, err := ParseMemoryLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"4 gigs", "4", "80%", "", "GB", "-1GB", "none", "4GB'"} {
		if _, err := ParseMemoryLimit(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseMemoryLimit(%q) = %v, want ErrBadSize", in, err)
		}
	}
	if err := (Options{MemoryLimit: "4KB"}).Validate(); err == nil {
		t.Error("Validate accepted 4KB")
	}
	if err := (Options{MemoryLimit: "4 gigs"}).Validate(); err == nil {
		t.Error("Validate accepted 4 gigs")
	}
}
