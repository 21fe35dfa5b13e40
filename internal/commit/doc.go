// Package commit is icefloe's one commit path to an Iceberg catalog. Every
// snapshot or metadata change a statement makes goes through Run, the one
// entry point: a Request carries either an iceberg-go transaction's change
// (Tx) or requirements and updates computed by hand (Meta). Run starts no
// commit for a statement already cancelled, and once started finishes it
// (at most Timeout) whatever happens to the statement. It owns the one
// retry policy:
//
//   - commits to one table from this process take turns (queue.go): each
//     attempt loads the table, checks what was committed since the
//     statement read it against the statement's Scope (scope.go: Iceberg's
//     serializable and snapshot isolation, scoped to the statement's
//     conflict filter and the files it rewrote), builds the change on the
//     table as loaded and sends it, so statements of one coordinator never
//     lose races to each other;
//   - a commit that lost a race to another writer is built again on the
//     refreshed table and checked again, commit.retry.num-retries times
//     (DefaultRetries unless the table says otherwise; appends more
//     patiently); one that still loses, or conflicts, is ErrConflict, one
//     whose outcome is not known ErrUnknown, and one whose answer was lost
//     but which landed counts as committed;
//   - the metadata file a lost commit left behind is removed;
//   - every added snapshot records the statement's id (WithStatementID,
//     WithStatement), scoped to the client's principal, and a statement run
//     again under a client's id commits nothing again (ErrAlreadyCommitted);
//   - the partition summaries of the new manifests are repaired before
//     the commit is sent;
//   - attempts, conflicts, retries and the bytes the committed snapshots
//     added are counted in Stats.
//
// FindRef and RefHead read the refs a Meta commit asserts.
//
// It sits under planner and statement: their statements decide what to
// commit and declare what it depends on, this package how.
package commit
