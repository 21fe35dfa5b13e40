// Package audit writes icefloe's audit log: one JSON line per statement
// a coordinator runs (who, from where, what SQL, which tables and
// snapshots it read and wrote, how many rows and bytes, how long, and how
// it ended with which gRPC code), one per ticket a worker serves, and one
// per failed login. Lines go to a file opened for appending (0600) and to
// the server's log at info. Passwords and tokens never reach it; SQL
// literals are replaced by ? when configured.
//
// The planner notes what a statement touched in the Record its context
// carries (WithRecord, From); the Flight boundary writes the line.
package audit
