package cluster

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
)

// MountCatalogs opens each configured catalog and mounts it under its
// name. On error the catalogs mounted so far stay in mounts for the caller
// to close.
func MountCatalogs(ctx context.Context, mounts *catalog.Mounts, cfgs []catalog.Config) error {
	for _, c := range cfgs {
		cat, props, err := catalog.Open(ctx, c)
		if err != nil {
			return err
		}
		if err := mounts.Mount(c.Name, cat, props, c.AllowedLocations...); err != nil {
			if cl, ok := cat.(interface{ Close() error }); ok {
				cl.Close()
			}
			return fmt.Errorf("mount %s: %w", c, err)
		}
	}
	return nil
}

// CacheLogInterval is how often a worker logs its metadata cache counters
// when they changed.
const CacheLogInterval = time.Minute

// logCacheEvery logs the cache's counters every interval while they
// change, until stop is closed.
func logCacheEvery(log *zap.Logger, c *catalog.MetadataCache, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last catalog.CacheStats
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if s := c.Snapshot(); s != last {
				last = s
				logCacheStats(log, c)
			}
		}
	}
}

// logCacheStats logs the metadata cache's counters.
func logCacheStats(log *zap.Logger, c *catalog.MetadataCache) {
	if log == nil || c == nil {
		return
	}
	s := c.Snapshot()
	log.Info("metadata cache",
		zap.Uint64("hits", s.Hits), zap.Uint64("misses", s.Misses),
		zap.Int("entries", s.Entries), zap.Int64("bytes", s.Bytes),
		zap.Int64("max_bytes", s.MaxBytes), zap.Uint64("evictions", s.Evictions))
}

// CacheStats returns the worker's metadata cache counters.
func (w *Worker) CacheStats() catalog.CacheStats { return w.cache.Snapshot() }
