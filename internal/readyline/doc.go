// Package readyline reads the line a server role (`icefloe serve`,
// `coordinator`, `worker`) logs once it is ready: the message, a tab,
// then its fields as JSON, e.g.
//
//	2026-12-01T21:22:35.616Z	info	icefloe coordinator ready	{"coordinator": "grpc://127.0.0.1:34869", …}
//
// Tests and benchmarks that start the binary wait for it to learn the
// addresses the process listens on.
package readyline
