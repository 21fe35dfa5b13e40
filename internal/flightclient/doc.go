// Package flightclient is icefloe's one Arrow Flight client: how a Flight
// location is dialed (plaintext or TLS with the cluster's roots, the
// authorization each call carries, the message size limit), a pool of
// clients by location that is closed with its owner, pulling a ticket's
// stream with fallback over its endpoint's locations, and running Flight
// actions.
//
// The coordinator's write fan-out and single-endpoint proxy, the workers'
// pulls of child fragments from their peers, membership's key checks and
// announcements and the `icefloe sql` client all dial and call through
// here, so TLS and credentials are decided in one place. It sits under
// planner, worker and flightsql, which may not import each other.
package flightclient
