// Package tracing is icefloe's OpenTelemetry tracing: Install sets up the
// OTLP/gRPC exporter and the process's tracer provider (off unless an
// endpoint is configured: then every span is the global no-op), Span and
// the statement and fragment spans start the spans of a statement, the
// gRPC options carry the W3C traceparent in call metadata between the
// processes of a cluster, Traceparent and Fragment carry it through a
// sealed ticket to a worker a client calls, and Logger and the server
// interceptors put the trace id in log lines and in the messages of
// errors returned to clients.
package tracing
