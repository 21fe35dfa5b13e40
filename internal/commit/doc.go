// Package commit is icefloe's one commit path to an Iceberg catalog. Every
// snapshot or metadata change a statement makes goes through Run, the one
// entry point: a Request carries either an iceberg-go transaction's change
// (Tx) or requirements and updates computed by hand (Meta). Run starts no
// commit for a statement already cancelled, and once started finishes it
// (at most Timeout) whatever happens to the statement. Both kinds commit
// through one conflict-checking catalog wrapper (Table and Catalog build
// it):
//
//   - a commit that lost a race to another writer is reported to
//     iceberg-go as table.ErrCommitFailed, which it retries against the
//     refreshed table (DefaultRetries times unless the table says
//     otherwise); one that still loses is ErrConflict, one whose outcome
//     is not known ErrUnknown, and one whose answer was lost but which
//     landed counts as committed;
//   - the metadata file a lost commit left behind is removed;
//   - every added snapshot records the statement's id (WithStatementID,
//     WithStatement), and a statement run again under a client's id
//     commits nothing again (ErrAlreadyCommitted);
//   - the partition summaries of the new manifests are repaired before
//     the commit is sent;
//   - attempts, conflicts, retries and the bytes the committed snapshots
//     added are counted in Stats.
//
// FindRef and RefHead read the refs a Meta commit asserts.
//
// It sits under planner and statement: their statements decide what to
// commit, this package how.
package commit
