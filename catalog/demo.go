package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Sizes of the demo tables SeedDemo makes.
const (
	DemoOrders    = 50_000
	DemoCustomers = 2_000
	DemoEvents    = 20_000
)

// demoStart is the first instant of the demo data: orders span 30 days
// from it, events 7.
var demoStart = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// demoTable is one demo table: its schema, spec and how to fill it.
type demoTable struct {
	name   string
	schema *iceberg.Schema
	spec   func(*iceberg.Schema) (iceberg.PartitionSpec, error)
	// batches are the appends, one commit each; fill writes rows
	// [from, to) into b.
	batches [][2]int
	fill    func(b *array.RecordBuilder, rng *rand.Rand, from, to int)
	rngSeed uint64
}

// SeedDemo creates the demo tables in schema of cat (and the schema if it
// is missing) and fills them with generated data, the same on every run:
//
//   - orders (50,000 rows in 5 commits over 30 days, partitioned by
//     day(ordered_at): 30 data files): id, customer_id, status and amount
//     (both with NULLs), ordered_at (timestamptz), ordered_on (date);
//   - customers (2,000 rows, partitioned by country): id, name, country,
//     signup (date), vip (boolean);
//   - events (20,000 rows in 2 commits, partitioned by bucket(8, id)): id,
//     ts (timestamp), kind, value (double with NULLs), tags (list<string>).
//
// Tables that exist already are left as they are, so a second run adds
// nothing; a table whose seeding was interrupted stays partial.
func SeedDemo(ctx context.Context, cat icecat.Catalog, schema string) error {
	ns := table.Identifier{schema}
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("catalog: demo schema %s: %w", schema, err)
	}
	if !exists {
		err := cat.CreateNamespace(ctx, ns, nil)
		if err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
			return fmt.Errorf("catalog: demo schema %s: %w", schema, err)
		}
	}
	for _, dt := range demoTables() {
		if err := dt.seed(ctx, cat, schema); err != nil {
			return fmt.Errorf("catalog: demo table %s.%s: %w", schema, dt.name, err)
		}
	}
	return nil
}

func (dt *demoTable) seed(ctx context.Context, cat icecat.Catalog, schema string) error {
	ident := table.Identifier{schema, dt.name}
	exists, err := cat.CheckTableExists(ctx, ident)
	if err != nil {
		return err
	}
	if exists {
		return nil
	}
	spec, err := dt.spec(dt.schema)
	if err != nil {
		return err
	}
	tbl, err := cat.CreateTable(ctx, ident, dt.schema,
		icecat.WithPartitionSpec(&spec),
		icecat.WithProperties(iceberg.Properties{table.CommitNumRetriesKey: "4"}))
	if errors.Is(err, icecat.ErrTableAlreadyExists) {
		return nil
	}
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(dt.rngSeed, 0x1cef10e))
	for _, batch := range dt.batches {
		rec := demoRecord(sc, func(b *array.RecordBuilder) { dt.fill(b, rng, batch[0], batch[1]) })
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			return err
		}
		tbl, err = tbl.Append(ctx, rdr, iceberg.Properties{"icefloe.demo": "true"})
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func demoRecord(sc *arrow.Schema, fill func(*array.RecordBuilder)) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fill(b)
	return b.NewRecordBatch()
}

// demoSplit cuts [0, n) into k equal appends.
func demoSplit(n, k int) [][2]int {
	out := make([][2]int, k)
	for i := range out {
		out[i] = [2]int{i * n / k, (i + 1) * n / k}
	}
	return out
}

var (
	demoCountries = []string{"AR", "AU", "BR", "CA", "DE", "FR", "IN", "JP", "US", "ZA"}
	demoStatuses  = []string{"placed", "paid", "shipped", "delivered", "returned", "cancelled"}
	demoKinds     = []string{"view", "click", "cart", "purchase", "search"}
	demoTags      = []string{"mobile", "web", "promo", "new", "returning", "eu", "us"}
	demoFirst     = []string{"Ada", "Bea", "Carl", "Dana", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"}
	demoLast      = []string{"Ito", "Khan", "Lopez", "Meyer", "Novak", "Okafor", "Park", "Rossi", "Silva", "Tan"}
)

func demoTables() []*demoTable {
	f := func(id int, name string, typ iceberg.Type, required bool) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required}
	}
	orders := &demoTable{
		name: "orders",
		schema: iceberg.NewSchema(0,
			f(1, "id", iceberg.PrimitiveTypes.Int64, true),
			f(2, "customer_id", iceberg.PrimitiveTypes.Int64, false),
			f(3, "status", iceberg.PrimitiveTypes.String, false),
			f(4, "amount", iceberg.DecimalTypeOf(12, 2), false),
			f(5, "ordered_at", iceberg.PrimitiveTypes.TimestampTz, false),
			f(6, "ordered_on", iceberg.PrimitiveTypes.Date, false),
		),
		spec: func(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
			return iceberg.NewPartitionSpecOpts(
				iceberg.AddPartitionFieldByName("ordered_at", "ordered_at_day", iceberg.DayTransform{}, sc, nil))
		},
		batches: demoSplit(DemoOrders, 5),
		rngSeed: 1,
		fill: func(b *array.RecordBuilder, rng *rand.Rand, from, to int) {
			step := 30 * 24 * time.Hour / DemoOrders
			for i := from; i < to; i++ {
				at := demoStart.Add(time.Duration(i)*step + time.Duration(rng.Int64N(int64(step))))
				b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
				b.Field(1).(*array.Int64Builder).Append(1 + rng.Int64N(DemoCustomers))
				if rng.IntN(20) == 0 {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.StringBuilder).Append(demoStatuses[rng.IntN(len(demoStatuses))])
				}
				if rng.IntN(30) == 0 {
					b.Field(3).AppendNull()
				} else {
					b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(100 + rng.Int64N(99_900)))
				}
				b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
				b.Field(5).(*array.Date32Builder).Append(arrow.Date32FromTime(at))
			}
		},
	}
	customers := &demoTable{
		name: "customers",
		schema: iceberg.NewSchema(0,
			f(1, "id", iceberg.PrimitiveTypes.Int64, true),
			f(2, "name", iceberg.PrimitiveTypes.String, false),
			f(3, "country", iceberg.PrimitiveTypes.String, false),
			f(4, "signup", iceberg.PrimitiveTypes.Date, false),
			f(5, "vip", iceberg.PrimitiveTypes.Bool, false),
		),
		spec: func(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
			return iceberg.NewPartitionSpecOpts(
				iceberg.AddPartitionFieldByName("country", "country", iceberg.IdentityTransform{}, sc, nil))
		},
		batches: demoSplit(DemoCustomers, 1),
		rngSeed: 2,
		fill: func(b *array.RecordBuilder, rng *rand.Rand, from, to int) {
			for i := from; i < to; i++ {
				b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
				b.Field(1).(*array.StringBuilder).Append(demoFirst[rng.IntN(len(demoFirst))] + " " + demoLast[rng.IntN(len(demoLast))])
				b.Field(2).(*array.StringBuilder).Append(demoCountries[rng.IntN(len(demoCountries))])
				b.Field(3).(*array.Date32Builder).Append(arrow.Date32FromTime(demoStart.AddDate(0, 0, -rng.IntN(3*365))))
				b.Field(4).(*array.BooleanBuilder).Append(rng.IntN(10) == 0)
			}
		},
	}
	events := &demoTable{
		name: "events",
		schema: iceberg.NewSchema(0,
			f(1, "id", iceberg.PrimitiveTypes.Int64, true),
			f(2, "ts", iceberg.PrimitiveTypes.Timestamp, false),
			f(3, "kind", iceberg.PrimitiveTypes.String, false),
			f(4, "value", iceberg.PrimitiveTypes.Float64, false),
			f(5, "tags", &iceberg.ListType{ElementID: 6, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}, false),
		),
		spec: func(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
			return iceberg.NewPartitionSpecOpts(
				iceberg.AddPartitionFieldByName("id", "id_bucket", iceberg.BucketTransform{NumBuckets: 8}, sc, nil))
		},
		batches: demoSplit(DemoEvents, 2),
		rngSeed: 3,
		fill: func(b *array.RecordBuilder, rng *rand.Rand, from, to int) {
			tags := b.Field(4).(*array.ListBuilder)
			tagValues := tags.ValueBuilder().(*array.StringBuilder)
			for i := from; i < to; i++ {
				ts := demoStart.Add(time.Duration(rng.Int64N(int64(7 * 24 * time.Hour))))
				b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
				b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
				b.Field(2).(*array.StringBuilder).Append(demoKinds[rng.IntN(len(demoKinds))])
				if rng.IntN(10) == 0 {
					b.Field(3).AppendNull()
				} else {
					b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
				}
				tags.Append(true)
				for range rng.IntN(4) {
					tagValues.Append(demoTags[rng.IntN(len(demoTags))])
				}
			}
		},
	}
	return []*demoTable{orders, customers, events}
}
