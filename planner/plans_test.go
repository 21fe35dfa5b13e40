package planner

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// TestPlans prints the plans of the queries in testdata/plans: the rules
// tried and the plan tree with its estimates. `go test -run TestPlans
// ./planner/ -rewrite` rewrites the expected plans.
//
//	plan [workers=N] [shuffle] [broadcast=B]
//	<query>
//	----
//	<rules and tree>
//
// The catalog holds default.t (8 files of 10 rows), default.u (1 file),
// default.v (2 files) and default.e (no files); files are placed by their first id, so the groups
// are the same in every run. N is 1 or 2 workers of 2 slots (2 by
// default). shuffle plans with every table above the broadcast size and
// shuffles whatever can be (broadcast_bytes 1, shuffle_bytes -1);
// broadcast=B sets broadcast_bytes to B (t is 7215 bytes, u 897).
func TestPlans(t *testing.T) {
	fx := newPlanFixture(t)
	datadriven.RunTest(t, "testdata/plans", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "plan" {
			d.Fatalf(t, "unknown command %s", d.Cmd)
		}
		plan, err := fx.plan(t, d)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		var b strings.Builder
		for _, l := range planLines(plan) {
			if k, v, _ := strings.Cut(l, "\t"); k == "rule" || k == "plan" {
				b.WriteString(v + "\n")
			}
		}
		return b.String()
	})
}

// planSetup is what a plan command's arguments choose of the planner.
type planSetup struct {
	workers   int
	shuffle   bool
	broadcast int64
	shuffleAt int64
	memory    int64
}

// planFixture holds the planners of a datadriven file, one per setup.
type planFixture struct {
	planners map[planSetup]*Planner
}

func newPlanFixture(t *testing.T) *planFixture {
	testHookAffinityKey = func(task table.FileScanTask) string {
		return hex.EncodeToString(task.File.LowerBoundValues()[1])
	}
	t.Cleanup(func() { testHookAffinityKey = nil })
	return &planFixture{planners: map[planSetup]*Planner{}}
}

// plan plans d's query with the planner its arguments choose:
// workers=N, shuffle, broadcast=B, shuffle_bytes=S, worker_memory=M.
func (fx *planFixture) plan(t *testing.T, d *datadriven.TestData) (*Plan, error) {
	workers := 2
	if d.HasArg("workers") {
		d.ScanArgs(t, "workers", &workers)
	}
	key := planSetup{workers: workers, shuffle: d.HasArg("shuffle")}
	if d.HasArg("broadcast") {
		d.ScanArgs(t, "broadcast", &key.broadcast)
	}
	if d.HasArg("shuffle_bytes") {
		d.ScanArgs(t, "shuffle_bytes", &key.shuffleAt)
	}
	if d.HasArg("worker_memory") {
		d.ScanArgs(t, "worker_memory", &key.memory)
	}
	p := fx.planners[key]
	if p == nil {
		opts := func(o *Options) {
			if key.shuffle {
				o.BroadcastBytes, o.ShuffleBytes = 1, -1
			}
			if key.broadcast > 0 {
				o.BroadcastBytes = key.broadcast
			}
			if key.shuffleAt != 0 {
				o.ShuffleBytes = key.shuffleAt
			}
			o.WorkerMemory = key.memory
		}
		ws := fixedWorkers{{Location: "grpc://w1:1", Slots: 2}, {Location: "grpc://w2:2", Slots: 2}}[:workers]
		var cat icecat.Catalog
		p, _, cat = testPlannerWith(t, ws, 8, opts)
		schema := iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String})
		row := func(f, i int) []any { return []any{int64(f*10 + i), fmt.Sprint("v", i)} }
		testTable(t, cat, "u", schema, 1, row)
		testTable(t, cat, "e", schema, 0, row)
		testTable(t, cat, "v", schema, 2, row)
		fx.planners[key] = p
	}
	return planText(context.Background(), p, Session{Catalog: "local", Schema: "default"}, strings.TrimSpace(d.Input))
}

// TestLowerRefusesBadHashExchange: a hash exchange whose keys do not
// match its inputs, or read by an instance beyond its partitions, fails
// naming it rather than sealing tickets that would read the wrong rows.
func TestLowerRefusesBadHashExchange(t *testing.T) {
	pb := &planBuilder{}
	for _, ex := range []*plan.Exchange{
		{Kind: plan.ExchangeHash, Keys: [][]string{{"k"}, {"j"}}, Partitions: 4, View: "__icefloe_t0", In: []plan.Node{&plan.Fragment{}}},
		{Kind: plan.ExchangeHash, Keys: [][]string{{"k"}}, Partitions: 0, View: "__icefloe_t0", In: []plan.Node{&plan.Fragment{}}},
	} {
		err := pb.attach(&wire.Ticket{}, &plan.Fragment{}, []plan.Node{ex}, 0, nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Exchange hash on (k)") {
			t.Errorf("lowering %s: %v", ex.Head(), err)
		}
	}
}
