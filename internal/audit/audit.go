package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
)

// Events.
const (
	// EventStatement is a statement a coordinator ran (or refused).
	EventStatement = "statement"
	// EventFetch is a ticket a worker served, or a single-endpoint stream
	// the coordinator proxied.
	EventFetch = "fetch"
	// EventWrite is a write fragment or ingest share a worker ran.
	EventWrite = "write"
	// EventLogin is a failed authentication (or a password login).
	EventLogin = "login"
	// EventREST is a request the Iceberg REST catalog answered; its Code
	// is the HTTP status.
	EventREST = "rest"
)

// Outcomes.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// Entry is one line of the audit log.
type Entry struct {
	Time      time.Time `json:"time"`
	Event     string    `json:"event"`
	Node      string    `json:"node,omitempty"`
	Principal string    `json:"principal,omitempty"`
	// Method is how the principal authenticated (password, token, jwt).
	Method  string `json:"auth_method,omitempty"`
	Client  string `json:"client,omitempty"`
	QueryID string `json:"query_id,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Statement is the SQL's first keyword (SELECT, INSERT, CREATE, …).
	Statement string     `json:"statement,omitempty"`
	SQL       string     `json:"sql,omitempty"`
	Read      []TableUse `json:"read,omitempty"`
	Written   []TableUse `json:"written,omitempty"`
	// Rows and Bytes are returned (fetch) or written (statement, write);
	// -1 for a query's rows, which its workers stream (their fetch lines
	// carry the same query_id).
	Rows     int64   `json:"rows"`
	Bytes    int64   `json:"bytes"`
	Duration float64 `json:"duration_ms"`
	Outcome  string  `json:"outcome"`
	Code     string  `json:"code"`
	Error    string  `json:"error,omitempty"`
	// TraceID is the statement's trace, when tracing is on.
	TraceID string `json:"trace_id,omitempty"`
}

// TableUse is a table a statement read or wrote, at a snapshot (0: the
// table had none).
type TableUse struct {
	Table    string `json:"table"`
	Snapshot int64  `json:"snapshot"`
}

// Options configure a Log.
type Options struct {
	// File receives the lines; empty means only the server log.
	File string
	// RedactLiterals replaces the literals of logged SQL with ? (Redact).
	RedactLiterals bool
	// Node names the process in each line (coordinator, worker address).
	Node string
	// Logger receives every line at info; nil means zap.NewNop().
	Logger *zap.Logger
}

// Log writes audit lines. It is safe for concurrent use; a nil *Log
// writes nothing.
type Log struct {
	opts Options
	log  *zap.Logger
	out  *sink
}

// sink is the file every Log of one Open writes to.
type sink struct {
	mu sync.Mutex
	f  *os.File
}

// Open opens the audit file for appending.
func Open(o Options) (*Log, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	l := &Log{opts: o, log: o.Logger, out: &sink{}}
	if o.File != "" {
		f, err := os.OpenFile(o.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		l.out.f = f
	}
	return l, nil
}

// Close closes the file.
func (l *Log) Close() error {
	if l == nil || l.out.f == nil {
		return nil
	}
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	err := l.out.f.Close()
	l.out.f = nil
	return err
}

// WithNode returns a log writing to the same file that names another
// node (each in-process worker of serve).
func (l *Log) WithNode(node string) *Log {
	if l == nil {
		return nil
	}
	o := l.opts
	o.Node = node
	return &Log{opts: o, log: l.log, out: l.out}
}

// SQL is what the log records of a statement's text: the text, or with
// RedactLiterals its literals redacted.
func (l *Log) SQL(st *parse.Statement) string {
	if l == nil || !l.opts.RedactLiterals {
		return st.Text
	}
	return st.Redacted()
}

// Write writes one line; err, when set, gives the outcome and, unless e
// has a Code already (an HTTP status), the code.
func (l *Log) Write(e Entry, err error) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Node = l.opts.Node
	preset := e.Code
	e.Outcome, e.Code = OutcomeOK, "OK"
	if err != nil {
		e.Outcome, e.Error = OutcomeError, err.Error()
		e.Code = status.Code(err).String()
		if st, ok := status.FromError(err); ok {
			e.Error = st.Message()
		}
	}
	if preset != "" {
		e.Code = preset
	}
	line, jerr := json.Marshal(e)
	if jerr != nil {
		l.log.Warn("audit: encode", zap.Error(jerr))
		return
	}
	l.log.Info("audit", zap.String("event", e.Event), zap.ByteString("entry", line))
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	if l.out.f == nil {
		return
	}
	if _, err := l.out.f.Write(append(line, '\n')); err != nil {
		l.log.Warn("audit: write", zap.Error(err))
	}
}

// Login writes the line of a password login or a failed authentication
// (an auth.Options.OnLogin); the event never holds a password or token.
func (l *Log) Login(_ context.Context, ev auth.LoginEvent) {
	var err error
	if ev.Err != nil {
		err = status.Error(codes.Unauthenticated, ev.Err.Error())
	}
	l.Write(Entry{Event: EventLogin, Principal: ev.User, Method: ev.Method, Client: ev.Client, Kind: ev.RPC}, err)
}

// Since is the duration from start in milliseconds, as lines carry it.
func Since(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }

// Record collects what one statement touched; the planner adds to the
// Record of its context. It is safe for concurrent use; a nil *Record
// keeps nothing.
type Record struct {
	mu      sync.Mutex
	queryID string
	read    []TableUse
	written []TableUse
	bytes   int64
}

type recordKey struct{}

// WithRecord returns ctx carrying a fresh Record.
func WithRecord(ctx context.Context) (context.Context, *Record) {
	r := &Record{}
	return context.WithValue(ctx, recordKey{}, r), r
}

// From returns the Record of ctx, or nil.
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(recordKey{}).(*Record)
	return r
}

// QueryID sets the statement's query id.
func (r *Record) QueryID(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queryID = id
}

// Read notes a table read at a snapshot.
func (r *Record) Read(table string, snapshot int64) {
	if r != nil {
		r.add(&r.read, table, snapshot)
	}
}

// Wrote notes a table written, at the snapshot the commit made.
func (r *Record) Wrote(table string, snapshot int64) {
	if r != nil {
		r.add(&r.written, table, snapshot)
	}
}

// AddBytes notes bytes of data files written.
func (r *Record) AddBytes(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes += n
}

func (r *Record) add(to *[]TableUse, table string, snapshot int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := TableUse{Table: table, Snapshot: snapshot}
	for _, x := range *to {
		if x == u {
			return
		}
	}
	*to = append(*to, u)
}

// Fill copies what the record holds into e.
func (r *Record) Fill(e *Entry) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.QueryID == "" {
		e.QueryID = r.queryID
	}
	e.Read = append([]TableUse(nil), r.read...)
	e.Written = append([]TableUse(nil), r.written...)
	e.Bytes += r.bytes
}
