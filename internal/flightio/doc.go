// Package flightio holds what the coordinator's and the workers' Flight
// streams share: sending a stream's schema before its first batch is
// computed, so clients that wait for it (the JDBC driver waits for every
// endpoint's schema before it returns from executeQuery) can cancel or
// stop early while the work is still under way; and checking a client's
// record batches whole before anything reads them (Checked).
package flightio
