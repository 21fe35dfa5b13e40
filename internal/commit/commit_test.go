package commit

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestAddedSnapshots(t *testing.T) {
	snaps, ok := AddedSnapshots([]table.Update{
		table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"}),
		table.NewAddSnapshotUpdate(&table.Snapshot{SnapshotID: 42, TimestampMs: 1, ManifestList: "file:///w/snap-42.avro"}),
		table.NewAddSnapshotUpdate(&table.Snapshot{SnapshotID: 7, TimestampMs: 1}),
	})
	if !ok || len(snaps) != 2 || snaps[0].SnapshotID != 42 || snaps[1].SnapshotID != 7 || snaps[0].ManifestList != "file:///w/snap-42.avro" {
		t.Fatalf("got %+v, %v; want snapshots 42 (with its manifest list) and 7, true", snaps, ok)
	}
}
