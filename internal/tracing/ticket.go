package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the propagator of tickets and call metadata alike.
var w3c = propagation.TraceContext{}

// traceparentKey is the W3C header (and gRPC metadata key).
const traceparentKey = "traceparent"

// Traceparent is ctx's span as a W3C traceparent, "" without a valid span.
// The planner seals it into each ticket, so a fragment a client fetches
// straight from a worker continues the statement's trace; it never leaves
// a ticket in clear.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c[traceparentKey]
}

// parent is the remote span context of a traceparent; invalid when empty
// or malformed.
func parent(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{traceparentKey: traceparent})
	return trace.SpanContextFromContext(ctx)
}

// Continue starts the span of serving a ticket (a worker's fragment, the
// coordinator's single-endpoint proxy), named name. Its parent is the
// caller's span when the call carried one of the statement's trace (the
// coordinator's or a peer's pull), else the span the ticket was planned
// under (planned, its sealed traceparent: a client's DoGet), the caller's
// span of another trace then only linked. Its trace id is the call's.
func Continue(ctx context.Context, name, planned string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	caller := trace.SpanContextFromContext(ctx)
	plan := parent(planned)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	if plan.IsValid() && (!caller.IsValid() || caller.TraceID() != plan.TraceID()) {
		if caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, plan)
	}
	ctx, span := tracer.Start(ctx, name, opts...)
	remember(ctx, span.SpanContext())
	return ctx, span
}
