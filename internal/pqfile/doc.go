// Package pqfile writes and reads the small Parquet files icefloe makes
// itself through a table's IO — partition statistics, merged position
// delete files — so that an encrypted table's are encrypted like the
// rest: one record batch written and sized, a whole file read back as an
// Arrow table.
package pqfile
