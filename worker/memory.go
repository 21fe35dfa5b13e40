package worker

import (
	"fmt"
	"strings"

	"context"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/internal/engine"
)

// account puts the allocator of a fragment of queryID in ctx (where
// iceberg-go's scans find it too): an account of Options.Budget, or
// Options.Allocator without a budget. The caller calls the returned
// function once the fragment's buffers are released.
func (s *Server) account(ctx context.Context, queryID string) (context.Context, func()) {
	if s.opts.Budget == nil {
		return compute.WithAllocator(ctx, s.opts.Allocator), func() {}
	}
	a := s.opts.Budget.Account(queryID)
	return compute.WithAllocator(ctx, a), a.Close
}

// alloc is the allocator of the fragment ctx runs (account).
func alloc(ctx context.Context) memory.Allocator { return compute.GetAllocator(ctx) }

// namedResourceError names the query and the limit's config key in
// DuckDB's running out of memory or spill disk; other errors pass as
// they are.
func namedResourceError(queryID string, err error) error {
	if err == nil || !engine.IsResourceError(err) {
		return err
	}
	key := engine.ResourceKey(err)
	if key == "" || strings.Contains(err.Error(), "(limit key ") {
		return fmt.Errorf("query %s: %w", queryID, err)
	}
	return fmt.Errorf("query %s: %w (limit key %s)", queryID, err, key)
}
