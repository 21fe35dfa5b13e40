package statement

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	err := Options{TicketTTL: -1, MaxValueBytes: -1}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Planner is required", "TicketTTL", "MaxValueBytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := NewExecutor(Options{}); err == nil {
		t.Fatal("NewExecutor without a planner: no error")
	}
}

// TestOptionsDefaults: what is unset comes from the planner, what is set
// stays.
func TestOptionsDefaults(t *testing.T) {
	e := newEnv(t)
	pl := e.x.Planner()
	x, err := NewExecutor(Options{Planner: pl, TicketTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	po := pl.Options()
	if x.opts.Mounts != po.Mounts || x.opts.Engine != po.Engine || x.opts.Key != po.Key || x.opts.Flight != po.Flight {
		t.Error("Mounts, Engine, Key or Flight not taken from the planner")
	}
	if x.opts.TicketTTL != time.Minute {
		t.Errorf("TicketTTL %v, want the one set", x.opts.TicketTTL)
	}
	if x.log == nil || x.Planner() != pl {
		t.Error("no logger, or not the planner given")
	}
}
