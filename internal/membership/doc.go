// Package membership is how workers join and leave a coordinator's pool
// while everything runs: the messages that cross between them (an
// announcement, a key check) sealed with the cluster key, the worker's
// announcer that repeats its announcement to every coordinator, and the
// DNS source that re-resolves a name (a Kubernetes headless service) into
// worker locations.
//
// Neither side ever sends the key. A coordinator checks a worker's key by
// sealing a random challenge that only a holder of the same key can open
// and answer; a worker's announcement is itself sealed, so a coordinator
// dials only locations that a key holder named. A mismatch is logged on
// both sides in words that name the ticket key.
package membership
