package main

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/tracing"
)

// TracingConfig sends OpenTelemetry spans to an OTLP/gRPC collector; off
// when absent (docs/operations.md, Tracing).
type TracingConfig struct {
	// Endpoint is the collector's host:port.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the fraction of statements traced; 0 means all.
	SampleRatio float64 `yaml:"sample_ratio,omitempty"`
	// Insecure sends spans in plaintext; otherwise TLS, verified against
	// CAFile or the system's roots.
	Insecure bool   `yaml:"insecure,omitempty"`
	CAFile   string `yaml:"ca_file,omitempty"`
}

func (t *TracingConfig) options(service string) tracing.Options {
	if t == nil {
		return tracing.Options{}
	}
	return tracing.Options{Endpoint: t.Endpoint, SampleRatio: t.SampleRatio, Insecure: t.Insecure, CAFile: t.CAFile, Service: service}
}

func (t *TracingConfig) validate() error {
	if t == nil {
		return nil
	}
	err := t.options("").Validate()
	if err == nil {
		return nil
	}
	// One line per problem, each naming the config.
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return fmt.Errorf("config: %w", err)
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		errs = append(errs, fmt.Errorf("config: %w", e))
	}
	return errors.Join(errs...)
}

// startTracing turns tracing on for the role when the config asks; the
// returned func flushes the spans still queued.
func (r *roleFlags) startTracing(ctx context.Context, service string, log *zap.Logger) (stop func(), err error) {
	o := r.cfg.Tracing.options(service)
	shutdown, err := tracing.Install(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracing.DefaultShutdownTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: spans not flushed at shutdown", zap.Error(err))
		}
	}, nil
}
