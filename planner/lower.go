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
// in the tickets' order, each child followed by its own children.
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
// exchange's too, each child streaming partition i of its producer
// instance's rows (hashPartition).
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
				// kids lists the fragments as EXPLAIN ANALYZE meets
				// their tickets: each child, then its own children.
				if kids != nil {
					*kids = append(*kids, cf)
				}
				ct, err := pb.instance(cf, j, kids)
				if err != nil {
					return err
				}
				pl := pb.placeOf(cf, j)
				var rows int64
				if ex.Kind == plan.ExchangeHash {
					producer := pb.producerID(ex, k, j)
					ct.SQL = hashPartition(cf.SQL, ex.Keys[k], ex.Partitions)
					ct.Partition = &wire.Partition{Producer: producer, Index: i, Count: ex.Partitions}
					pl = pb.producerPlace(producer, pl)
					if r := instanceRows(cf, j); r > 0 {
						rows = max(r/int64(ex.Partitions), 1)
					}
				}
				c, err := pb.child(ex.View, ct, pl)
				if err != nil {
					return err
				}
				c.Rows, c.Once = rows, ex.Stream
				t.Children = append(t.Children, c)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, ex.Head())
}

// partitionColumn is the last column of a hash exchange producer's
// result: the partition of each row, which the worker strips before it
// sends the row to that partition's consumer.
const partitionColumn = "__icefloe_partition"

// hashPartition is a producer's SQL, sql's rows with the partition of
// each (of n) as a last column: the hash of its keys (SQL expressions
// over sql's columns) modulo n. DuckDB's hash of equal values of one type
// is equal on every worker, so rows with equal keys land in the same
// partition wherever they are read.
func hashPartition(sql string, keys []string, n int) string {
	return fmt.Sprintf("SELECT *, hash(%s) %% %d AS %s FROM (%s)", strings.Join(keys, ", "), n, partitionColumn, sql)
}

// producerID names instance j of input k of a hash exchange within the
// query: the tickets of its partitions share it, and the worker runs the
// producer once for all of them.
func (pb *planBuilder) producerID(ex *plan.Exchange, k, j int) string {
	if pb.exchanges == nil {
		pb.exchanges = map[*plan.Exchange]int{}
	}
	id, ok := pb.exchanges[ex]
	if !ok {
		id = len(pb.exchanges)
		pb.exchanges[ex] = id
	}
	return fmt.Sprintf("x%d.%d.%d", id, k, j)
}

// producerPlace is where a producer instance runs: the first place
// chosen for it, for every consumer's child of it, so that all of them
// reach the one worker that runs it.
func (pb *planBuilder) producerPlace(producer string, pl place) place {
	if pb.producers == nil {
		pb.producers = map[string]place{}
	}
	if got, ok := pb.producers[producer]; ok {
		return got
	}
	pb.producers[producer] = pl
	return pl
}

// instanceRows estimates the rows instance j of f sends: its group's, or
// its share of the fragment's; 0 when unknown.
func instanceRows(f *plan.Fragment, j int) int64 {
	if f.Per != nil && j < len(f.Per.Groups) && f.Partitions == 0 {
		return max(f.Per.Groups[j].Rows, 0)
	}
	if f.EstRows > 0 {
		return f.EstRows / int64(f.Instances())
	}
	return 0
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
