// Package partstats computes, writes and reads Iceberg partition
// statistics files: per partition of one snapshot, the counts of data and
// delete files and records, in the spec's Parquet layout. iceberg-go
// v0.7.0 registers such files in table metadata
// (table.NewSetPartitionStatisticsUpdate) but neither writes nor reads
// them.
package partstats
