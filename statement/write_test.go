package statement

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/icefloe/icefloe/planner"
)

func TestFragmentUUIDs(t *testing.T) {
	stmt := uuid.New()
	for i := 10; i < 16; i++ {
		stmt[i] = 0
	}
	prefix := writePrefix(stmt.String())
	seen := map[string]bool{}
	for i := range 300 {
		id := planner.FragmentUUID(stmt.String(), i)
		if !strings.HasPrefix(id, prefix) || seen[id] {
			t.Fatalf("fragment %d: %s (prefix %s)", i, id, prefix)
		}
		seen[id] = true
	}
}
