// Package streamidle cuts gRPC streams whose peer stopped taking part: a
// server stream whose Send has been blocked by flow control for the idle
// timeout (the client does not read), or whose Recv has waited that long
// for the client's next message (an upload that stopped sending). The
// handler's context is cancelled with ErrIdle, so the work behind the
// stream stops and releases what it holds; the client gets
// DEADLINE_EXCEEDED naming the limit's config key once it reads again.
//
// Time spent computing between two messages is not idle: only a Send or
// Recv that blocks counts, measured from the moment it started, which is
// the end of the last one that succeeded.
package streamidle
