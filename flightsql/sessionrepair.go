package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/auth"
)

// Session repair. A session's options travel in its cookie, and a client
// may keep sending a cookie older than the session: arrow-go's client
// cookie middleware (every Go Flight SQL client, and Python ADBC, which
// embeds it) reads a streaming call's Set-Cookie only when it sees the
// stream end, and a goroutine that watches the stream's context, which
// gRPC cancels as the stream ends, can finish the call first as cancelled
// and drop the cookie. SetSessionOptions is such a streaming call
// (DoAction), so a client's next statements would intermittently run
// under its old catalog and schema; and a call still streaming under an
// old cookie can set that cookie again after a newer one.
//
// So every session carries an id, given on its first call, and a
// generation, raised by every call that changes it. A coordinator keeps
// the newest options of the sessions changed on it (bounded by count and
// bytes, expiring) and serves a call whose cookie is older with those,
// which also sends the client the newer cookie again. A client's calls
// travel on one connection, hence to one coordinator, so that is the one
// that knows. The id is random and unguessable, but the cookie is the
// client's to write: the state is kept under the principal that changed
// the session as well as its id, so a cookie carrying another
// principal's session id neither reads nor changes that session's state
// (without authentication every caller is the same nobody). The options
// hold nothing secret (sessionMiddleware), and no client can set either
// name.

// Internal session option names; SetSessionOptions refuses them.
const (
	optSessionID  = "icefloe.session"
	optSessionGen = "icefloe.session_gen"
)

// Bounds of the repair memo: sessions changed on this coordinator are
// remembered for a day, at most recentSessionsMax of them and
// recentSessionsMaxBytes of their options (each under
// maxSessionOptionBytes a value), the least recently used forgotten
// first.
const (
	recentSessionsMax      = 16384
	recentSessionsMaxBytes = 16 << 20
	recentSessionsTTL      = 24 * time.Hour
	// sessionStateOverhead is what one remembered state costs besides its
	// key and options: the LRU's entry, the map, the times.
	sessionStateOverhead = 256
)

// sessionState is the newest state of a session this coordinator changed.
type sessionState struct {
	gen     int64
	options map[string]*flight.SessionOptionValue
	closed  bool
	at      time.Time
	size    int64 // bytes counted against recentSessionsMaxBytes
}

// recentSessions remembers the newest state of the sessions changed here,
// keyed by principal and session id (repairKey).
type recentSessions struct {
	mu    sync.Mutex // keeps bytes in step with lru
	lru   *lru.Cache[string, sessionState]
	bytes int64
}

func newRecentSessions() *recentSessions {
	r := &recentSessions{}
	// The callback runs inside Add and RemoveOldest, under r.mu.
	r.lru, _ = lru.NewWithEvict(recentSessionsMax, func(_ string, st sessionState) { r.bytes -= st.size }) // errs only on a size <= 0
	return r
}

// repairKey is where the state of ctx's principal's session id is kept.
func repairKey(ctx context.Context, id string) string { return auth.Name(ctx) + "\x00" + id }

func (r *recentSessions) add(key string, st sessionState) {
	st.at = time.Now()
	st.size = int64(len(key)) + sessionStateOverhead + optionsSize(st.options)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.lru.Peek(key); ok { // replaced, not evicted: no callback
		r.bytes -= old.size
	}
	r.lru.Add(key, st)
	r.bytes += st.size
	for r.bytes > recentSessionsMaxBytes && r.lru.Len() > 1 {
		r.lru.RemoveOldest()
	}
}

func (r *recentSessions) get(key string) (sessionState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Get(key)
}

// optionsSize is the bytes options take, names and encoded values.
func optionsSize(opts map[string]*flight.SessionOptionValue) int64 {
	var n int64
	for k, v := range opts {
		n += int64(len(k) + proto.Size(v))
	}
	return n
}

// newSession is a fresh session with its id.
func newSession() session.ServerSession {
	s := session.NewStatelessServerSession(nil)
	s.SetSessionOption(optSessionID, stringValue(newSessionID()))
	return s
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func stringValue(v string) *flight.SessionOptionValue {
	return &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_StringValue{StringValue: v}}
}

func genOf(opts map[string]*flight.SessionOptionValue) int64 {
	if v, ok := opts[optSessionGen].GetOptionValue().(*pb.SessionOptionValue_Int64Value); ok {
		return v.Int64Value
	}
	return 0
}

// repair returns the session to serve a call of ctx whose cookie decoded
// to s: the newer state its principal left for its id, if any. closed
// reports that the session was closed here since (the call starts a
// fresh one).
func (r *recentSessions) repair(ctx context.Context, s session.ServerSession) (out session.ServerSession, closed bool) {
	id, ok := stringOption(s.GetSessionOption(optSessionID))
	if !ok {
		return s, false
	}
	st, ok := r.get(repairKey(ctx, id))
	if !ok || st.gen <= genOf(s.GetSessionOptions()) || time.Since(st.at) > recentSessionsTTL {
		return s, false
	}
	if st.closed {
		return nil, true
	}
	return session.NewStatelessServerSession(cloneOptions(st.options)), false
}

// record notes the state of the call's session if the call changed it
// from before (its options when the call started): the generation is
// raised in the session, so in the cookie the call sends back.
func (r *recentSessions) record(ctx context.Context, before map[string]*flight.SessionOptionValue) {
	s, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return
	}
	gen := genOf(before) + 1
	if s.Closed() {
		if id, ok := stringOption(before[optSessionID]); ok {
			r.add(repairKey(ctx, id), sessionState{gen: gen, closed: true})
		}
		return
	}
	if sameOptions(before, s.GetSessionOptions()) {
		return
	}
	id, ok := stringOption(s.GetSessionOption(optSessionID))
	if !ok { // a cookie from before sessions had ids
		id = newSessionID()
		s.SetSessionOption(optSessionID, stringValue(id))
	}
	s.SetSessionOption(optSessionGen, &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_Int64Value{Int64Value: gen}})
	r.add(repairKey(ctx, id), sessionState{gen: gen, options: s.GetSessionOptions()})
}

// optionsOf is the options of the call's session, nil without one.
func optionsOf(ctx context.Context) map[string]*flight.SessionOptionValue {
	s, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil
	}
	return s.GetSessionOptions()
}

func sameOptions(a, b map[string]*flight.SessionOptionValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !proto.Equal(v, w) {
			return false
		}
	}
	return true
}

func cloneOptions(opts map[string]*flight.SessionOptionValue) map[string]*flight.SessionOptionValue {
	out := make(map[string]*flight.SessionOptionValue, len(opts))
	for k, v := range opts {
		out[k] = proto.Clone(v).(*flight.SessionOptionValue)
	}
	return out
}
