// Package queryreg is the coordinator's query registry: every statement it
// runs, from the moment it arrives until its result has been read (or it
// failed or was cancelled), with who ran it, its redacted SQL, its state,
// its plan and its progress on the workers, plus a bounded ring of the
// statements that ended most recently. The system tables
// (system.runtime.queries), the status page and CALL system.cancel_query
// read and act on it.
package queryreg
