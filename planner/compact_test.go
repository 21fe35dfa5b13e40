package planner

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestPackByPartitionKeepsPartitionsApart: compaction groups never mix
// two partitions, whatever their values print as: NULL and the string
// '<nil>', values holding the key's separators.
func TestPackByPartitionKeepsPartitionsApart(t *testing.T) {
	spec := iceberg.NewPartitionSpecID(0,
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "a", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "b", Transform: iceberg.IdentityTransform{}})
	parts := []map[int]any{
		{1000: nil, 1001: "x"},
		{1000: "<nil>", 1001: "x"},
		{1000: "a|1001=b", 1001: "c"},
		{1000: "a", 1001: "b|1001=c"},
	}
	var files []*dataFileTasks
	for i, p := range parts {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("file:///wh/t/data/%d.parquet", i),
			iceberg.ParquetFile, p, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &dataFileTasks{file: b.Build(), bytes: 100})
	}
	groups := packByPartition(files, 1<<30)
	if len(groups) != len(parts) {
		for _, g := range groups {
			var in []map[int]any
			for _, f := range g {
				in = append(in, f.file.Partition())
			}
			t.Logf("group: %v", in)
		}
		t.Fatalf("%d groups for %d partitions", len(groups), len(parts))
	}
}
