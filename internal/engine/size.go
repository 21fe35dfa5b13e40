package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MinMemoryLimit is the smallest memory limit Validate accepts: below it
// DuckDB fails its first allocations.
const MinMemoryLimit = 16 << 20

// ErrBadSize marks a memory limit that is not a size.
var ErrBadSize = errors.New("not a size")

var sizeRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)$`)

// sizeUnits are the units DuckDB's memory_limit accepts (case ignored),
// as multiples of a byte.
var sizeUnits = map[string]float64{
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kilobyte": 1e3, "megabyte": 1e6, "gigabyte": 1e9, "terabyte": 1e12,
	"kilobytes": 1e3, "megabytes": 1e6, "gigabytes": 1e9, "terabytes": 1e12,
}

// ParseMemoryLimit reads a memory limit as DuckDB does ("4GB", "512 MiB",
// "1.5gb") and returns it in bytes; other text is ErrBadSize.
func ParseMemoryLimit(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%w: %q (give a number and a unit: KB, MB, GB, TB or KiB, MiB, GiB, TiB, e.g. 4GB)", ErrBadSize, s)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%w: %q: unknown unit %q (want KB, MB, GB, TB or KiB, MiB, GiB, TiB)", ErrBadSize, s, m[2])
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, s)
	}
	return int64(n * unit), nil
}

// validateMemoryLimit checks a non-empty limit is a size of at least
// MinMemoryLimit.
func validateMemoryLimit(s string) error {
	if s == "" {
		return nil
	}
	n, err := ParseMemoryLimit(s)
	if err != nil {
		return fmt.Errorf("engine: memory limit: %w", err)
	}
	if n < MinMemoryLimit {
		return fmt.Errorf("engine: memory limit %s is below the minimum of 16MiB", s)
	}
	return nil
}
