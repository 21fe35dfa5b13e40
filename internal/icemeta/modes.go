package icemeta

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// modeKind is a column metrics mode (write.metadata.metrics.*).
type modeKind int

const (
	modeNone   modeKind = iota // no metrics
	modeCounts                 // value, null and NaN counts
	modeBounds                 // counts and lower/upper bounds (truncate(N) or full)
)

// metricsMode is the metrics mode of one column.
type metricsMode struct {
	kind     modeKind
	truncate int // > 0: string and binary bounds keep this many characters or bytes
}

var truncateMode = regexp.MustCompile(`^truncate\((\d+)\)$`)

// parseMode reads a metrics mode as iceberg-go does (case-insensitive,
// trimmed); ok is false for a malformed one.
func parseMode(s string) (metricsMode, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "none":
		return metricsMode{kind: modeNone}, true
	case "counts":
		return metricsMode{kind: modeCounts}, true
	case "full":
		return metricsMode{kind: modeBounds}, true
	}
	m := truncateMode.FindStringSubmatch(s)
	if m == nil {
		return metricsMode{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return metricsMode{}, false
	}
	return metricsMode{kind: modeBounds, truncate: n}, true
}

// columnMode is the metrics mode iceberg-go's writer applies to the
// top-level column f of a table with properties props (table/arrow_utils.go
// computeStatsPlan): the column's own write.metadata.metrics.column.<name>,
// else write.metadata.metrics.default (truncate(16)); truncation applies to
// strings and binaries only, other types keep full bounds. ok is false when
// the mode cannot be read (iceberg-go then fails the write itself).
func columnMode(props iceberg.Properties, f iceberg.NestedField) (metricsMode, bool) {
	raw, ok := props[table.MetricsModeColumnConfPrefix+"."+f.Name]
	if !ok {
		raw = props.Get(table.DefaultWriteMetricsModeKey, table.DefaultWriteMetricsModeDefault)
	}
	m, ok := parseMode(raw)
	if !ok {
		return metricsMode{}, false
	}
	switch f.Type.(type) {
	case iceberg.StringType, iceberg.BinaryType:
	default:
		m.truncate = 0
	}
	return m, true
}
