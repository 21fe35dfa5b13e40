package planner

import (
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// lower turns a plan into the plan's tickets: one endpoint per instance of
// each endpoint fragment, its scans encoded and its children sealed. It
// records which fragment each endpoint and child runs, for EXPLAIN
// ANALYZE's figures.
func (pb *planBuilder) lower(res *plan.Result) error {
	pb.plan.Strategy = res.Strategy
	pb.plan.tree = res
	for _, f := range res.Endpoints {
		for i := range f.Instances() {
			var kids []*plan.Fragment
			t, err := pb.instance(f, i, &kids)
			if err != nil {
				return err
			}
			pb.endpointAt(t, pb.placeOf(f, i))
			pb.plan.streams = append(pb.plan.streams, stream{frag: f, children: kids})
		}
	}
	return nil
}

// stream is which fragments an endpoint runs: its own and its children's,
// in the ticket's order.
type stream struct {
	frag     *plan.Fragment
	children []*plan.Fragment
}

// instance is instance i of f as a ticket; kids collects the fragments
// of its children.
func (pb *planBuilder) instance(f *plan.Fragment, i int, kids *[]*plan.Fragment) (*wire.Ticket, error) {
	t := pb.ticket(nil, f.SQL, f.Schema)
	t.Passthrough, t.ChildLimit = f.Passthrough, f.ChildLimit
	return t, pb.attach(t, f, f.In, i, kids)
}

// attach adds what nodes read to instance i of f's ticket: scans (the
// Per scan's group i, any other whole) and children.
func (pb *planBuilder) attach(t *wire.Ticket, f *plan.Fragment, nodes []plan.Node, i int, kids *[]*plan.Fragment) error {
	for _, n := range nodes {
		switch n := n.(type) {
		case *plan.Scan:
			in := pb.b.inputs[n.Input]
			tasks := in.tasks
			if n == f.Per {
				tasks = in.groups[i]
			}
			scan, err := encodeScan(in, tasks)
			if err != nil {
				return err
			}
			t.Scans = append(t.Scans, scan)
		case *plan.Aggregate, *plan.Join:
			if err := pb.attach(t, f, n.Inputs(), i, kids); err != nil {
				return err
			}
		case *plan.Exchange:
			if err := pb.exchange(t, f, n, i, kids); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: plan node %s inside a fragment", ErrUnsupported, n.Head())
		}
	}
	return nil
}

// exchange lowers an exchange below instance i of f: a broadcast's scans
// join the ticket whole; a gather's or merge's fragments become its
// children, one per instance, read as the exchange's view; a hash
// exchange's too, each child keeping only partition i of its rows.
func (pb *planBuilder) exchange(t *wire.Ticket, f *plan.Fragment, ex *plan.Exchange, i int, kids *[]*plan.Fragment) error {
	switch ex.Kind {
	case plan.ExchangeBroadcast:
		return pb.attach(t, f, ex.In, i, kids)
	case plan.ExchangeGather, plan.ExchangeMerge, plan.ExchangeHash:
		if ex.Kind == plan.ExchangeHash && (len(ex.Keys) != len(ex.In) || ex.Partitions < 1 || i >= ex.Partitions) {
			return fmt.Errorf("%w: %s with %d inputs read by instance %d", ErrUnsupported, ex.Head(), len(ex.In), i)
		}
		for k, n := range ex.In {
			cf, ok := n.(*plan.Fragment)
			if !ok {
				return fmt.Errorf("%w: %s under %s", ErrUnsupported, n.Head(), ex.Head())
			}
			for j := range cf.Instances() {
				ct, err := pb.instance(cf, j, nil)
				if err != nil {
					return err
				}
				if ex.Kind == plan.ExchangeHash {
					ct.SQL = hashPartition(cf.SQL, ex.Keys[k], i, ex.Partitions)
				}
				c, err := pb.child(ex.View, ct, pb.placeOf(cf, j))
				if err != nil {
					return err
				}
				t.Children = append(t.Children, c)
				if kids != nil {
					*kids = append(*kids, cf)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, ex.Head())
}

// hashPartition is partition i of n of sql's rows: those whose keys (SQL
// expressions over sql's columns) hash to i. DuckDB's hash of equal values
// of one type is equal on every worker, so rows with equal keys land in
// the same partition wherever they are read.
func hashPartition(sql string, keys []string, i, n int) string {
	return fmt.Sprintf("SELECT * FROM (%s) WHERE hash(%s) %% %d = %d", sql, strings.Join(keys, ", "), n, i)
}

// placeOf is where instance i of f runs.
func (pb *planBuilder) placeOf(f *plan.Fragment, i int) place {
	switch f.Place {
	case plan.PlaceGroups:
		if f.Per != nil {
			return pb.b.inputs[f.Per.Input].places[i]
		}
	case plan.PlaceLargest:
		return pb.gatherPlace()
	case plan.PlacePartitions:
		return pb.partitionPlace(i)
	}
	return pb.rotate()
}
