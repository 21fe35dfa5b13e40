// Package wire holds the values that cross processes: the sealed ticket a
// coordinator puts in each Flight endpoint and a worker opens, and its codec.
//
// A ticket is versioned, sealed with AES-256-GCM under the cluster key,
// expiring, and compact. It names the pinned metadata location and the
// encoded file tasks of one group, never the table metadata itself, so its
// size does not grow with the table's history. Sealing means a client can
// neither read the storage properties it carries nor forge one that opens
// other files.
//
// wire imports nothing of the module.
package wire
