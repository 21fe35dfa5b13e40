package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// The differential tables: a small TPC-H-shaped schema plus tables that
// exercise what distributed plans get wrong — several files per table,
// identity, day and bucket partitions, NULLs, decimals, timestamptz,
// strings with LIKE wildcards, positional deletes and an empty table.
// Generated from fixed seeds, so every run sees the same rows.

// dec is an unscaled decimal value for a generated row.
type dec int64

// diffCol is one column of a generated table.
type diffCol struct {
	name     string
	typ      iceberg.Type
	required bool
}

// diffPart is one partition field: transform of the source column.
type diffPart struct {
	source    string
	name      string
	transform iceberg.Transform
}

// diffTable is a generated table: appended in len(appends) commits of
// row ranges, then optionally trimmed by a merge-on-read delete, which
// writes positional delete files.
type diffTable struct {
	name    string
	cols    []diffCol
	parts   []diffPart
	appends [][2]int
	row     func(rng *rand.Rand, i int) []any
	// del, when set, is deleted after the appends with merge-on-read.
	del  iceberg.BooleanExpression
	seed uint64
}

var diffStart = time.Date(2024, time.March, 1, 0, 0, 0, 0, time.UTC)

// Sizes of the generated tables.
const (
	diffCustomers = 1000
	diffOrders    = 3000
	diffParts     = 400
	diffEvents    = 3000
	diffStrs      = 60
)

var (
	diffRegions   = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	diffSegments  = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}
	diffPriority  = []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	diffShipModes = []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	diffKinds     = []string{"view", "click", "cart", "purchase", "search"}
	diffWords     = []string{"quick", "final", "pending", "special", "ironic", "bold", "regular", "express"}
	// diffOddStrings hold LIKE wildcards, escapes, quotes, unicode and
	// blanks, to catch pushed-down LIKE and string comparisons gone wrong.
	diffOddStrings = []string{"100%", "50% off", "a_b", "a%b", "ab", "a\\b", "_lead", "%lead", "trail_", "trail%",
		"O'Brien", "ümlaut", "日本", "", " ", "A_B", "abc", "a.b", "a*b", "[ab]"}
)

// diffSplit cuts [0, n) into k appends.
func diffSplit(n, k int) [][2]int {
	out := make([][2]int, k)
	for i := range out {
		out[i] = [2]int{i * n / k, (i + 1) * n / k}
	}
	return out
}

func diffComment(rng *rand.Rand) string {
	n := 1 + rng.IntN(4)
	w := make([]string, n)
	for i := range w {
		w[i] = diffWords[rng.IntN(len(diffWords))]
	}
	s := strings.Join(w, " ")
	switch rng.IntN(12) {
	case 0:
		s += " 10% extra"
	case 1:
		s = "under_score " + s
	}
	return s
}

// orderKeys are the orders' keys; some are skipped (sparse, like TPC-H).
func orderKey(i int) int64 { return int64(i/8*32 + i%8 + 1) }

func diffTables() []*diffTable {
	i64, i32, str, f64 := iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Float64
	date, tstz, boolean := iceberg.PrimitiveTypes.Date, iceberg.PrimitiveTypes.TimestampTz, iceberg.PrimitiveTypes.Bool
	money := iceberg.DecimalTypeOf(12, 2)
	nullable := func(rng *rand.Rand, oneIn int, v any) any {
		if rng.IntN(oneIn) == 0 {
			return nil
		}
		return v
	}
	deleted := make([]int64, 0, 300)
	for i := 0; i < diffOrders; i += 19 {
		deleted = append(deleted, orderKey(i))
	}
	return []*diffTable{
		{
			name:    "region",
			cols:    []diffCol{{"r_regionkey", i64, true}, {"r_name", str, false}, {"r_comment", str, false}},
			appends: [][2]int{{0, 5}},
			row: func(rng *rand.Rand, i int) []any {
				return []any{int64(i), diffRegions[i], diffComment(rng)}
			},
			seed: 1,
		},
		{
			name:    "nation",
			cols:    []diffCol{{"n_nationkey", i64, true}, {"n_name", str, false}, {"n_regionkey", i64, false}, {"n_comment", str, false}},
			parts:   []diffPart{{"n_regionkey", "n_regionkey", iceberg.IdentityTransform{}}},
			appends: [][2]int{{0, 25}},
			row: func(rng *rand.Rand, i int) []any {
				return []any{int64(i), fmt.Sprintf("NATION_%02d", i), int64(i % 5), diffComment(rng)}
			},
			seed: 2,
		},
		{
			name: "customer",
			cols: []diffCol{{"c_custkey", i64, true}, {"c_name", str, false}, {"c_nationkey", i64, false},
				{"c_acctbal", money, false}, {"c_mktsegment", str, false}, {"c_comment", str, false}},
			parts:   []diffPart{{"c_custkey", "c_custkey_bucket", iceberg.BucketTransform{NumBuckets: 4}}},
			appends: diffSplit(diffCustomers, 2),
			row: func(rng *rand.Rand, i int) []any {
				return []any{int64(i + 1), fmt.Sprintf("Customer#%06d", i+1), int64(rng.IntN(25)),
					nullable(rng, 25, dec(rng.Int64N(1_100_000)-100_000)),
					nullable(rng, 20, diffSegments[rng.IntN(len(diffSegments))]), diffComment(rng)}
			},
			seed: 3,
		},
		{
			name: "orders",
			cols: []diffCol{{"o_orderkey", i64, true}, {"o_custkey", i64, false}, {"o_orderstatus", str, false},
				{"o_totalprice", money, false}, {"o_orderdate", date, false}, {"o_ts", tstz, false},
				{"o_orderpriority", str, false}, {"o_clerk", str, false}, {"o_comment", str, false}},
			parts:   []diffPart{{"o_ts", "o_ts_day", iceberg.DayTransform{}}},
			appends: diffSplit(diffOrders, 2),
			row: func(rng *rand.Rand, i int) []any {
				ts := diffStart.Add(time.Duration(rng.Int64N(int64(8 * 24 * time.Hour))))
				return []any{orderKey(i), int64(1 + rng.IntN(diffCustomers+50)), []string{"F", "O", "P"}[rng.IntN(3)],
					nullable(rng, 30, dec(100+rng.Int64N(50_000_000))), ts, ts,
					diffPriority[rng.IntN(len(diffPriority))], fmt.Sprintf("Clerk#%04d", rng.IntN(100)),
					nullable(rng, 40, diffComment(rng))}
			},
			del:  iceberg.IsIn(iceberg.Reference("o_orderkey"), deleted...),
			seed: 4,
		},
		{
			name: "lineitem",
			cols: []diffCol{{"l_orderkey", i64, true}, {"l_linenumber", i32, true}, {"l_partkey", i64, false},
				{"l_quantity", money, false}, {"l_extendedprice", money, false}, {"l_discount", iceberg.DecimalTypeOf(4, 2), false},
				{"l_tax", f64, false}, {"l_returnflag", str, false}, {"l_linestatus", str, false},
				{"l_shipdate", date, false}, {"l_shipmode", str, false}, {"l_comment", str, false}, {"l_weight", f64, false}},
			parts:   []diffPart{{"l_returnflag", "l_returnflag", iceberg.IdentityTransform{}}},
			appends: diffSplit(diffOrders, 3),
			// row i is order i's lines, generated together below.
			row:  nil,
			seed: 5,
		},
		{
			name: "part",
			cols: []diffCol{{"p_partkey", i64, true}, {"p_name", str, false}, {"p_brand", str, false},
				{"p_type", str, false}, {"p_size", i32, false}, {"p_retailprice", money, false}},
			appends: diffSplit(diffParts, 2),
			row: func(rng *rand.Rand, i int) []any {
				return []any{int64(i + 1), diffWords[rng.IntN(len(diffWords))] + " " + diffWords[rng.IntN(len(diffWords))],
					fmt.Sprintf("Brand#%d%d", 1+rng.IntN(5), 1+rng.IntN(5)),
					[]string{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}[rng.IntN(6)] + " " + []string{"BRASS", "COPPER", "NICKEL", "STEEL", "TIN"}[rng.IntN(5)],
					int32(1 + rng.IntN(50)), dec(90_000 + rng.Int64N(20_000))}
			},
			seed: 6,
		},
		{
			name: "events",
			cols: []diffCol{{"e_id", i64, true}, {"e_ts", tstz, false}, {"e_kind", str, false},
				{"e_value", f64, false}, {"e_flag", boolean, false}, {"e_user", i64, false}},
			parts:   []diffPart{{"e_ts", "e_ts_day", iceberg.DayTransform{}}, {"e_kind", "e_kind", iceberg.IdentityTransform{}}},
			appends: diffSplit(diffEvents, 3),
			row: func(rng *rand.Rand, i int) []any {
				ts := diffStart.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
				return []any{int64(i + 1), nullable(rng, 50, ts), diffKinds[rng.IntN(len(diffKinds))],
					nullable(rng, 8, float64(rng.IntN(1_000_000))/64+0.5), nullable(rng, 10, rng.IntN(3) == 0),
					nullable(rng, 15, int64(rng.IntN(300)))}
			},
			del:  iceberg.LessThan(iceberg.Reference("e_id"), int64(200)),
			seed: 7,
		},
		{
			name:    "strs",
			cols:    []diffCol{{"id", i64, true}, {"s", str, false}, {"grp", i32, false}, {"amount", iceberg.DecimalTypeOf(10, 3), false}},
			appends: diffSplit(diffStrs, 3),
			row: func(rng *rand.Rand, i int) []any {
				var s any = diffOddStrings[i%len(diffOddStrings)]
				if i%13 == 12 {
					s = nil
				}
				return []any{int64(i + 1), s, int32(i % 4), nullable(rng, 6, dec(rng.Int64N(2_000_000)-1_000_000))}
			},
			seed: 8,
		},
		{
			name: "empty_t",
			cols: []diffCol{{"id", i64, true}, {"name", str, false}, {"amount", iceberg.DecimalTypeOf(10, 2), false},
				{"ts", tstz, false}, {"x", f64, false}},
			parts: []diffPart{{"ts", "ts_day", iceberg.DayTransform{}}},
		},
	}
}

// lineitemRows generates the lines of orders [from, to): 1 to 7 each.
func lineitemRows(rng *rand.Rand, from, to int) [][]any {
	var rows [][]any
	for i := from; i < to; i++ {
		n := 1 + rng.IntN(7)
		ship := diffStart.AddDate(0, 0, rng.IntN(120))
		for ln := 1; ln <= n; ln++ {
			qty := int64(1 + rng.IntN(50))
			price := qty * (90_000 + rng.Int64N(20_000)) / 100
			flag := []string{"A", "N", "R"}[rng.IntN(3)]
			var mode any = diffShipModes[rng.IntN(len(diffShipModes))]
			if rng.IntN(30) == 0 {
				mode = nil
			}
			var weight any = float64(rng.IntN(100_000))/7 + 0.25
			if rng.IntN(12) == 0 {
				weight = nil
			}
			rows = append(rows, []any{orderKey(i), int32(ln), int64(1 + rng.IntN(diffParts)),
				dec(qty * 100), dec(price * 100), dec(rng.Int64N(11)), float64(rng.IntN(9)) / 100,
				flag, []string{"F", "O"}[rng.IntN(2)], ship.AddDate(0, 0, ln), mode, diffComment(rng), weight})
		}
	}
	return rows
}

// createDiffTables creates and fills the differential tables in the
// default schema of the local catalog.
func createDiffTables(t testing.TB, mounts *catalog.Mounts) {
	t.Helper()
	ctx := context.Background()
	mt, err := mounts.Get(catalog.LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range diffTables() {
		if err := dt.create(ctx, mt.Catalog); err != nil {
			t.Fatalf("create table %s: %v", dt.name, err)
		}
	}
}

func (dt *diffTable) create(ctx context.Context, cat icecat.Catalog) error {
	ns := table.Identifier{catalog.DefaultSchema}
	if ok, err := cat.CheckNamespaceExists(ctx, ns); err != nil {
		return err
	} else if !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			return err
		}
	}
	fields := make([]iceberg.NestedField, len(dt.cols))
	for i, c := range dt.cols {
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.name, Type: c.typ, Required: c.required}
	}
	sch := iceberg.NewSchema(0, fields...)
	var popts []iceberg.PartitionOption
	for _, p := range dt.parts {
		popts = append(popts, iceberg.AddPartitionFieldByName(p.source, p.name, p.transform, sch, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(popts...)
	if err != nil {
		return err
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{catalog.DefaultSchema, dt.name}, sch,
		icecat.WithPartitionSpec(&spec),
		icecat.WithProperties(iceberg.Properties{
			table.PropertyFormatVersion: "2",
			table.WriteDeleteModeKey:    table.WriteModeMergeOnRead,
			table.CommitNumRetriesKey:   "4",
		}))
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(dt.seed, 0xd1ff))
	for _, a := range dt.appends {
		var rows [][]any
		if dt.name == "lineitem" {
			rows = lineitemRows(rng, a[0], a[1])
		} else {
			for i := a[0]; i < a[1]; i++ {
				rows = append(rows, dt.row(rng, i))
			}
		}
		rec, err := buildRecord(sc, rows)
		if err != nil {
			return err
		}
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			return err
		}
		tbl, err = tbl.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			return err
		}
	}
	if dt.del != nil {
		if tbl, err = tbl.Delete(ctx, dt.del, nil); err != nil {
			return fmt.Errorf("merge-on-read delete: %w", err)
		}
		// The point is positional delete files, not rewritten data files.
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return err
		}
		withDeletes := 0
		for _, t := range tasks {
			if len(t.DeleteFiles) > 0 {
				withDeletes++
			}
		}
		if withDeletes == 0 {
			return fmt.Errorf("delete wrote no positional delete files (%d data files)", len(tasks))
		}
	}
	return nil
}

// buildRecord builds one batch of rows (values as diffTable.row makes
// them) in schema sc.
func buildRecord(sc *arrow.Schema, rows [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			if err := appendValue(b.Field(c), v); err != nil {
				return nil, fmt.Errorf("column %s: %w", sc.Field(c).Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(fb array.Builder, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	switch b := fb.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(int64(v.(dec))))
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(v.(time.Time)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
	default:
		return fmt.Errorf("no generator for %T", fb)
	}
	return nil
}

// diffTableNames are the generated tables, as queries name them.
func diffTableNames() []string {
	var names []string
	for _, dt := range diffTables() {
		names = append(names, dt.name)
	}
	return names
}
