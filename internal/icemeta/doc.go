// Package icemeta makes the Iceberg metadata icefloe writes correct where
// iceberg-go v0.7.0 writes it wrong, so that icefloe's own pruning and
// every other engine reading its tables (pyiceberg, Spark, Trino, …) see
// statistics that cover every value a predicate can match.
//
//   - Data files: Write wraps table.WriteRecords and Correct fixes each
//     file's column metrics from its Parquet footer and data: an empty
//     string or binary minimum is a lower bound (iceberg-go drops it), a
//     string longer than arrow-go keeps in the footer is covered by the
//     upper bound (iceberg-go's falls below it), and float and double
//     columns get nan_value_counts (iceberg-go writes none). Write also
//     fails a write whose files lost rows (iceberg-go's partitioned
//     writer can drop a failed file's error).
//   - Manifest lists: RepairManifestList recomputes the partition
//     summaries of the manifests a snapshot writes and rewrites the list
//     before the snapshot is committed when iceberg-go's are wrong: an
//     empty string or binary partition value makes its lower (and upper)
//     bound null, which every reader takes for "all values are null", and
//     -0.0/0.0 bounds must hold under either ordering of the two zeros.
//   - Manifests: RepairManifestSchemas gives the decimals of the Avro
//     schema in the header of the manifests a snapshot writes their
//     scale (iceberg-go leaves out a zero scale, and pyiceberg cannot
//     read a decimal without one), copying the data blocks as they are,
//     and writes the manifest list again with the new lengths.
//   - Rebuild copies a DataFile through iceberg-go's builder with some
//     fields changed (iceberg-go has no builder from an existing file);
//     PartitionKey names the partition a file is in.
//
// The planner (coordinator-side writes, commits) and the workers (write
// fragments, ingest) both use it, so it lives under internal/.
package icemeta
