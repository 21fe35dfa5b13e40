package icemeta

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// PartitionKey names a file's partition spec and partition values: two
// files have the same key exactly when they are in one partition of one
// spec.
func PartitionKey(df iceberg.DataFile) string {
	part := df.Partition()
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "/%d=%#v", id, part[id])
	}
	return b.String()
}
