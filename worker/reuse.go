package worker

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// Reusing a ticket's connection. Each ticket used to get a fresh DuckDB
// connection, make a view per scan over its files and prepare the
// fragment's SQL over them: per ticket, though a dashboard sends the same
// fragment over the same files again and again. DuckDB's temp views and
// prepared statements live per connection, so what is reused is the
// connection: after a ticket that read only direct views (local Parquet
// files, read in place) ends cleanly, its connection goes into the
// worker's fragment cache, idle, with its views and the prepared fragment
// kept, under a key that holds everything they depend on — the exact
// fragment SQL, the result schema and, per scan, its table's metadata
// location and snapshot and the exact statement of its view, which names
// every file, the field ids, types and names read, the files' row counts
// and the NaN rule. Data files are immutable, so equal keys read equal
// data. The next ticket with that key takes the connection (one ticket at
// a time: a connection is used by one ticket only, and a concurrent
// ticket of the same key makes its own) and runs the kept statement
// without making a view or preparing. Tickets that load tables, stream
// children, read through the data cache or iceberg-go, write or
// exchange never reuse. The cache is bounded by its count of idle
// connections (DefaultFragmentCacheConns), least recently used first
// out; a failed ticket's connection is closed, never kept.

// DefaultFragmentCacheConns bounds the idle connections the fragment cache
// keeps when Options.FragmentCacheConns is 0.
const DefaultFragmentCacheConns = 16

// connCache is the fragment cache: idle connections by key. It is safe for
// concurrent use.
type connCache struct {
	max int

	mu     sync.Mutex
	order  *list.List // of *idleConn, front = most recently put
	byKey  map[string]*list.Element
	closed bool

	hits, misses, evictions uint64
}

type idleConn struct {
	key  string
	conn *engine.Conn
}

func newConnCache(max int) *connCache {
	return &connCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// take returns the idle connection of key, which the caller now owns, or
// nil (a miss).
func (c *connCache) take(key string) *engine.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		c.misses++
		return nil
	}
	c.hits++
	c.order.Remove(el)
	delete(c.byKey, key)
	return el.Value.(*idleConn).conn
}

// put keeps conn idle under key, or closes it when the key has one
// already or the cache is closed; the least recently put go past max.
func (c *connCache) put(key string, conn *engine.Conn) {
	var closing []*engine.Conn
	c.mu.Lock()
	if _, dup := c.byKey[key]; dup || c.closed || c.max <= 0 {
		closing = append(closing, conn)
	} else {
		c.byKey[key] = c.order.PushFront(&idleConn{key: key, conn: conn})
		for c.order.Len() > c.max {
			el := c.order.Back()
			ic := el.Value.(*idleConn)
			c.order.Remove(el)
			delete(c.byKey, ic.key)
			c.evictions++
			closing = append(closing, ic.conn)
		}
	}
	c.mu.Unlock()
	for _, cn := range closing {
		cn.Close()
	}
}

// close closes every idle connection; later puts close theirs.
func (c *connCache) close() {
	c.mu.Lock()
	c.closed = true
	var closing []*engine.Conn
	for el := c.order.Front(); el != nil; el = el.Next() {
		closing = append(closing, el.Value.(*idleConn).conn)
	}
	c.order.Init()
	clear(c.byKey)
	c.mu.Unlock()
	for _, cn := range closing {
		cn.Close()
	}
}

// Stats reports the cache as system.runtime.caches lists it ("fragment").
func (c *connCache) Stats() []cachestats.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []cachestats.Stats{{Name: "fragment", Entries: c.order.Len(), MaxEntries: c.max,
		Hits: c.hits, Misses: c.misses, Evictions: c.evictions}}
}

// reuseKey is the fragment cache key of t with the statements that make
// its views, when t may reuse a connection: a fragment over scans that
// all read local files in place (the direct path), no children, writes,
// partitions or metadata tables. ok false leaves t to the usual path
// (which also reports any error met here).
func (s *Server) reuseKey(ctx context.Context, t *wire.Ticket) (key string, views []string, ok bool) {
	if s.reuse == nil || t.Write != nil || t.Partition != nil || len(t.Children) > 0 || len(t.Scans) == 0 ||
		len(s.opts.Engine.ReadDirs()) == 0 {
		return "", nil, false
	}
	var b strings.Builder
	b.WriteString(t.SQL)
	b.WriteString("\x00")
	b.Write(t.Schema)
	for _, sc := range t.Scans {
		if sc.MetadataTable != "" {
			return "", nil, false
		}
		name := scanName(sc)
		tbl, err := s.opts.Cache.Open(ctx, strings.Split(name, "."), sc.MetadataLocation, sc.Props)
		if err != nil || encrypted(tbl) {
			return "", nil, false
		}
		schema, tasks, err := scanTasks(tbl, name, sc)
		if err != nil {
			return "", nil, false
		}
		// Local files only: directFiles reads a path in place only when
		// the engine may (the data cache's copies are localized by the
		// usual path, which holds them for the connection).
		paths, fields, ok := s.directFiles(schema, tbl.Metadata(), tasks, sc.Columns)
		if !ok {
			return "", nil, false
		}
		view := directView(sc.View, paths, fields, tasks)
		// The table version (its metadata, the snapshot read) besides
		// the files, types and names the view's statement names.
		fmt.Fprintf(&b, "\x00%s\x00%d\x00%s", sc.MetadataLocation, sc.SnapshotID, view)
		views = append(views, view)
	}
	return b.String(), views, true
}

// answerReusing answers t on a connection of the fragment cache when t
// may reuse one (reuseKey): the idle connection of its key, or *conn with
// the views made on it. It reports handled false when t may not, leaving
// *conn as it was (or, with err, failing to replace it). On success the connection goes (back) into the cache
// and *conn is nil; on failure *conn is the connection to close.
func (s *Server) answerReusing(ctx context.Context, conn **engine.Conn, t *wire.Ticket, schema *arrow.Schema, stream flight.DataStreamWriter) (rows int64, batches int, handled bool, err error) {
	key, views, ok := s.reuseKey(ctx, t)
	if !ok {
		return 0, 0, false, nil
	}
	if idle := s.reuse.take(key); idle != nil {
		(*conn).Close()
		*conn = idle
	} else {
		for _, v := range views {
			if err := (*conn).Exec(ctx, v); err != nil {
				// A file may have gone since its footer was read: the usual
				// path on a fresh connection says what is wrong.
				return 0, 0, false, s.freshConn(ctx, conn)
			}
		}
		s.directScans.Add(int64(len(views)))
	}
	rows, batches, err = s.queryKept(ctx, *conn, t.SQL, schema, stream)
	if err != nil || (*conn).Holds() {
		return rows, batches, true, err
	}
	s.reuse.put(key, *conn)
	*conn = nil
	return rows, batches, true, nil
}

// freshConn replaces *conn with a new connection.
func (s *Server) freshConn(ctx context.Context, conn **engine.Conn) error {
	(*conn).Close()
	c, err := s.opts.Engine.Conn(ctx)
	*conn = c
	return err
}

// queryKept is query with the fragment's statement kept on conn.
func (s *Server) queryKept(ctx context.Context, conn *engine.Conn, sql string, schema *arrow.Schema, stream flight.DataStreamWriter) (rows int64, batches int, err error) {
	return s.runQuery(ctx, conn, sql, schema, stream, true)
}
