// Package status serves the coordinator's status page on its HTTP
// listener: the running and recent statements (what
// system.runtime.queries shows) with a cancel button, and the workers.
// It is behind the same authentication as the Flight service (Basic or
// Bearer in the request's Authorization header) and shows each principal
// what the system tables would: its own statements, or every one and the
// workers to an admin. A cancel is a POST that must come from the page
// itself: same origin, and a token only the page carries.
package status
