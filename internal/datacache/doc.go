// Package datacache keeps local copies of object-store data files on a
// worker's disk, so a table on S3, GCS or Azure is read at local speed once
// warm: DuckDB's Parquet reader reads the copy exactly as it reads a local
// warehouse file (worker/direct.go), and iceberg-go's reader reads it
// through IO.
//
// Iceberg data files are immutable, so a copy is keyed by the file's
// location and its size from the table metadata. Still, every use asks the
// object store for the object's current size and version (one HEAD): a
// file deleted underneath the cache fails the query naming it, a file whose
// size no longer matches the metadata fails it too (ErrChanged), and a copy
// of an older version is dropped and fetched again. No query ever reads
// rows that are no longer on storage.
//
// A miss fetches the whole file through iceberg-go's IO with parallel
// ranged reads into a temporary file, then renames it into place, so a
// crash never leaves a partial copy under a final name. The cache is bounded
// in bytes and evicts the least recently used copies that no query is
// reading (a reader pins what it uses until it releases it). It survives
// restarts: Open rebuilds the index from the directory, checks each copy's
// size against its name and discards partial or damaged files. Stats
// returns the counters (hits, misses, bytes fetched, evictions).
package datacache
