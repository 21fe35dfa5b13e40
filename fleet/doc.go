// Package fleet is the coordinator's view of its workers: which are live
// (WorkerPool, checking each with the standard gRPC health protocol and the
// key check of internal/membership, and taking the workers' announcements;
// StaticWorkers, a fixed list), their health, and the calls the coordinator
// makes to all of them at once (QueryWorkers: query progress, cancellation,
// counters) for the runtime tables (Runtime).
//
// It sits above planner (it answers planner.Workers and planner.Runtime)
// and below flightsql and the composition root, which wires a pool into
// both.
package fleet
