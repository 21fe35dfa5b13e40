package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/credentials"
)

// Defaults.
const (
	// DefaultSampleRatio samples every statement.
	DefaultSampleRatio = 1.0
	// DefaultShutdownTimeout bounds the flush of the spans still queued
	// when a role stops.
	DefaultShutdownTimeout = 5 * time.Second
)

// ErrOptions: the tracing options are not valid; the message names the
// key (sample_ratio, ca_file, endpoint).
var ErrOptions = errors.New("tracing")

// Options configure tracing. The zero value is off: no exporter, the
// global no-op tracer.
type Options struct {
	// Endpoint is the host:port of an OTLP/gRPC trace collector; empty
	// turns tracing off.
	Endpoint string
	// SampleRatio is the fraction of statements traced, in (0, 1]; 0 means
	// DefaultSampleRatio. Workers follow the coordinator's decision.
	SampleRatio float64
	// Insecure sends spans in plaintext; otherwise over TLS, verified
	// against CAFile or the system's roots.
	Insecure bool
	CAFile   string
	// Service is the service.name of the process's spans.
	Service string
}

// Enabled says whether the options turn tracing on.
func (o Options) Enabled() bool { return o.Endpoint != "" }

// Validate reports every problem at once, naming the config key.
func (o Options) Validate() error {
	var errs []error
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("%w: sample_ratio: must be in [0, 1], got %v", ErrOptions, o.SampleRatio))
	}
	if o.Insecure && o.CAFile != "" {
		errs = append(errs, fmt.Errorf("%w: ca_file: set with insecure, which sends in plaintext: give one of them", ErrOptions))
	}
	if !o.Enabled() && (o.Insecure || o.CAFile != "" || o.SampleRatio != 0) {
		errs = append(errs, fmt.Errorf("%w: endpoint: required when other tracing keys are set", ErrOptions))
	}
	return errors.Join(errs...)
}

// enabled is set once Install turned tracing on: the gRPC options are
// empty until then, so a process without tracing pays nothing per call.
var enabled atomic.Bool

// Enabled says whether this process traces.
func Enabled() bool { return enabled.Load() }

// Install turns tracing on for the process when o has an endpoint: spans
// go in batches to the collector, statements are sampled at o's ratio
// (a fragment follows its statement's decision). It returns the func that
// flushes and stops the exporter; with tracing off it does nothing. Call
// it before the role dials or serves.
func Install(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(o.Endpoint)}
	switch {
	case o.Insecure:
		opts = append(opts, otlptracegrpc.WithInsecure())
	case o.CAFile != "":
		creds, err := credentials.NewClientTLSFromFile(o.CAFile, "")
		if err != nil {
			return nil, fmt.Errorf("%w: ca_file: %v", ErrOptions, err)
		}
		opts = append(opts, otlptracegrpc.WithTLSCredentials(creds))
	default:
		opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewClientTLSFromCert(nil, "")))
	}
	// The exporter connects lazily: a collector that is down costs dropped
	// spans, never a failed start or statement.
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	ratio := o.SampleRatio
	if ratio == 0 {
		ratio = DefaultSampleRatio
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", o.Service))),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	enabled.Store(true)
	return tp.Shutdown, nil
}

// tracer is the global provider's: the no-op one until Install.
var tracer = otel.Tracer("github.com/icefloe/icefloe")

// Span starts a span named name under ctx's; the caller ends it (End).
func Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// Statement starts the span of one client statement on the coordinator: a
// root (or the child of a traceparent the client sent), whose trace id the
// call's error message and log lines carry.
func Statement(ctx context.Context, kind string) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "statement", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("icefloe.kind", kind)))
	remember(ctx, span.SpanContext())
	return ctx, span
}

// End ends span, recording err (when not nil) as its status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// TraceID is ctx's trace id in hex, "" without a trace.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	if h, ok := ctx.Value(holderKey{}).(*holder); ok {
		if id := h.id.Load(); id != nil {
			return id.String()
		}
	}
	return ""
}
