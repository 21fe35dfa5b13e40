package readyline

import (
	"encoding/json"
	"strings"
)

// Fields returns the JSON fields of a ready log line, or nil when line is
// not one.
func Fields(line string) map[string]any {
	i := strings.Index(line, "ready\t{")
	if i < 0 {
		return nil
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(line[i+len("ready\t"):]), &f); err != nil {
		return nil
	}
	return f
}
