package tracing

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// record has the package's spans made by an SDK provider that records
// them, for the test; the global provider stays the no-op one.
func record(t *testing.T) *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	prev := tracer
	tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	t.Cleanup(func() { tracer = prev })
	return rec
}

func TestContinueChoosesParent(t *testing.T) {
	record(t)
	stmtCtx, stmt := Statement(context.Background(), "query")
	defer stmt.End()
	planned := Traceparent(stmtCtx)
	if !strings.HasPrefix(planned, "00-"+stmt.SpanContext().TraceID().String()+"-"+stmt.SpanContext().SpanID().String()) {
		t.Fatalf("traceparent %q does not name the statement span", planned)
	}
	_, other := Span(context.Background(), "elsewhere")
	defer other.End()
	pullCtx, pull := Span(stmtCtx, "pull")
	defer pull.End()

	// A call's metadata as a server sees it, after the interceptor.
	called := func(from context.Context) context.Context {
		md, _ := metadata.FromOutgoingContext(outgoing(from))
		ctx, _ := incoming(metadata.NewIncomingContext(context.Background(), md))
		return ctx
	}
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		planned    string
		wantParent trace.SpanContext
		wantLink   bool
	}{
		{"client DoGet without traceparent: the ticket's", context.Background(), planned, stmt.SpanContext(), false},
		{"peer pull of the same trace: the caller's", called(pullCtx), planned, pull.SpanContext(), false},
		{"caller of another trace: the ticket's, linked", called(trace.ContextWithSpan(context.Background(), other)), planned, stmt.SpanContext(), true},
		{"ticket without a trace: the caller's", called(pullCtx), "", pull.SpanContext(), false},
		{"malformed traceparent: the caller's", called(pullCtx), "00-zz", pull.SpanContext(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := Continue(tc.ctx, "fragment", tc.planned)
			s.End()
			ro := s.(sdktrace.ReadOnlySpan)
			if p := ro.Parent(); p.TraceID() != tc.wantParent.TraceID() || p.SpanID() != tc.wantParent.SpanID() {
				t.Errorf("parent %s/%s, want %s/%s", p.TraceID(), p.SpanID(), tc.wantParent.TraceID(), tc.wantParent.SpanID())
			}
			if got := len(ro.Links()) == 1; got != tc.wantLink {
				t.Errorf("links %v, want a link: %v", ro.Links(), tc.wantLink)
			}
		})
	}
}

func TestAnnotateNamesTraceOnce(t *testing.T) {
	record(t)
	ctx, h := incoming(context.Background())
	if got := annotate(h, status.Error(codes.NotFound, "table t not found")); status.Convert(got).Message() != "table t not found" {
		t.Fatalf("annotated before a statement span: %v", got)
	}
	ctx, span := Statement(ctx, "query")
	defer span.End()
	id := span.SpanContext().TraceID().String()
	got := annotate(h, status.Error(codes.NotFound, "table t not found"))
	want := "table t not found (trace " + id + ")"
	if st := status.Convert(got); st.Code() != codes.NotFound || st.Message() != want {
		t.Fatalf("annotate: %v, want NotFound %q", got, want)
	}
	if again := annotate(h, got); status.Convert(again).Message() != want {
		t.Errorf("annotated twice: %v", again)
	}
	if annotate(h, nil) != nil {
		t.Error("annotate made an error of nil")
	}
	if got := annotate(h, errors.New("plain")); status.Convert(got).Code() != codes.Unknown || !strings.HasSuffix(status.Convert(got).Message(), "(trace "+id+")") {
		t.Errorf("plain error: %v", got)
	}

	core, logs := observer.New(zap.InfoLevel)
	Logger(ctx, zap.New(core)).Info("statement failed")
	Logger(context.Background(), zap.New(core)).Info("no statement")
	entries := logs.All()
	if f := entries[0].ContextMap()[LogKey]; f != id {
		t.Errorf("log field %s = %v, want %s", LogKey, f, id)
	}
	if _, ok := entries[1].ContextMap()[LogKey]; ok {
		t.Error("a line outside any trace has a trace id")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{Endpoint: "collector:4317", Insecure: true, SampleRatio: 0.1}, ""},
		{Options{Endpoint: "collector:4317", SampleRatio: 1.5}, "tracing: sample_ratio: must be in [0, 1], got 1.5"},
		{Options{Endpoint: "collector:4317", Insecure: true, CAFile: "ca.pem"}, "tracing: ca_file: set with insecure"},
		{Options{Insecure: true}, "tracing: endpoint: required"},
	} {
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrOptions) {
			t.Errorf("%v is not ErrOptions", err)
		}
	}
}

func TestOffIsFree(t *testing.T) {
	if Enabled() || ServerOptions() != nil || DialOptions() != nil {
		t.Fatal("tracing is on without Install")
	}
	stop, err := Install(context.Background(), Options{})
	if err != nil || Enabled() {
		t.Fatalf("Install without an endpoint: %v, enabled %v", err, Enabled())
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, span := Statement(context.Background(), "query")
	defer span.End()
	if TraceID(ctx) != "" || Traceparent(ctx) != "" {
		t.Error("the no-op tracer made a trace")
	}
}
