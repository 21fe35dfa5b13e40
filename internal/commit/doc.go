// Package commit is icefloe's one commit path to an Iceberg catalog. Every
// snapshot or metadata change a statement makes goes through Table (for
// iceberg-go transactions) or Catalog (for requirements and updates made
// by hand), which share one conflict-checking catalog wrapper:
//
//   - a commit that lost a race to another writer is reported as
//     table.ErrCommitFailed, which iceberg-go retries against the
//     refreshed table (DefaultRetries times unless the table says
//     otherwise), and a commit whose answer was lost but which landed
//     counts as committed;
//   - the metadata file a lost commit left behind is removed;
//   - every added snapshot records the statement's id (WithStatementID,
//     WithStatement), and a statement run again under a client's id
//     commits nothing again (ErrAlreadyCommitted);
//   - the partition summaries of the new manifests are repaired before
//     the commit is sent;
//   - attempts, conflicts, retries and the bytes the committed snapshots
//     added are counted in Stats.
//
// It imports nothing of icefloe's above internal/: the planner's
// statements decide what to commit, this package how.
package commit
