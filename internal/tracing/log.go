package tracing

import (
	"context"

	"go.uber.org/zap"
)

// LogKey is the field of the trace id in log lines.
const LogKey = "trace_id"

// Logger is log with the trace id of ctx's statement or fragment as a
// field: every line logged for a statement goes through it.
func Logger(ctx context.Context, log *zap.Logger) *zap.Logger {
	if id := TraceID(ctx); id != "" {
		return log.With(zap.String(LogKey, id))
	}
	return log
}
