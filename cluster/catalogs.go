package cluster

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/datacache"
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

// CacheLogInterval is how often a worker logs its cache counters when
// they changed.
const CacheLogInterval = time.Minute

// logCachesEvery logs the worker's cache counters every interval while
// they change, until the worker closes.
func (w *Worker) logCachesEvery(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last workerCacheStats
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if s := w.cacheStats(); s != last {
				last = s
				w.logCaches()
			}
		}
	}
}

type workerCacheStats struct {
	meta catalog.CacheStats
	data datacache.Stats
}

func (w *Worker) cacheStats() workerCacheStats {
	s := workerCacheStats{meta: w.cache.Snapshot()}
	if w.data != nil {
		s.data = w.data.Stats()
	}
	return s
}

// logCaches logs the worker's metadata and data cache counters.
func (w *Worker) logCaches() {
	if w.log == nil {
		return
	}
	s := w.cacheStats()
	w.log.Info("metadata cache",
		zap.Uint64("hits", s.meta.Hits), zap.Uint64("misses", s.meta.Misses),
		zap.Int("entries", s.meta.Entries), zap.Int64("bytes", s.meta.Bytes),
		zap.Int64("max_bytes", s.meta.MaxBytes), zap.Uint64("evictions", s.meta.Evictions))
	if w.data != nil {
		d := s.data
		w.log.Info("data cache",
			zap.Uint64("hits", d.Hits), zap.Uint64("misses", d.Misses), zap.Uint64("uncached", d.Uncached),
			zap.Uint64("fetched_bytes", d.FetchedBytes), zap.Uint64("hit_bytes", d.HitBytes),
			zap.Uint64("evictions", d.Evictions), zap.Uint64("invalidations", d.Invalidations),
			zap.Int("entries", d.Entries), zap.Int64("bytes", d.Bytes), zap.Int64("max_bytes", d.MaxBytes))
	}
}

// CacheStats returns the worker's metadata cache counters.
func (w *Worker) CacheStats() catalog.CacheStats { return w.cache.Snapshot() }

// DataCacheStats returns the worker's data cache counters; ok is false
// when it has no data cache.
func (w *Worker) DataCacheStats() (s datacache.Stats, ok bool) {
	if w.data == nil {
		return s, false
	}
	return w.data.Stats(), true
}
