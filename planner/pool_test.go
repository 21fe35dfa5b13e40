package planner

import (
	"testing"

	"github.com/icefloe/icefloe/internal/flightclient"
)

// testPool is a Flight client pool closed when t ends.
func testPool(t testing.TB) *flightclient.Pool {
	p := flightclient.NewPool(flightclient.Options{}, 0)
	t.Cleanup(func() { p.Close() })
	return p
}
