// Package exchange holds a hash exchange's partitions between the one run
// of a producer fragment and its consumers.
//
// A producer reads its input once and cuts each batch of its result into
// N partitions (Split); an Exchange queues each partition's batches until
// the consumer of that partition pulls them, so consumers start while the
// producer still reads. The queues of a process's exchanges hold at most
// a Memory's bytes; past it batches spill as Arrow IPC to a Spill folder
// they share too, bounded in bytes, and past both a producer waits
// (back-pressure) until a consumer drains something.
//
// A partition is claimed by exactly one consumer, which reads it to its
// end or releases it; a partition nobody has claimed can be dropped (its
// consumer's pull then starts another run of the producer, which reads
// the same pinned files), so an exchange short of space drops unclaimed
// partitions before it makes its producer wait. Every batch is freed and
// every spill file removed once its partition is read, released or
// dropped.
package exchange
