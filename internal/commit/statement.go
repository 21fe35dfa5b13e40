package commit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// StatementIDProp is the snapshot summary property every commit records:
// the id of the statement that made the snapshot, the client's own (see
// WithStatementID) or one icefloe chose. A statement retried under the
// same id commits at most once.
const StatementIDProp = "icefloe.statement-id"

// StatementPrincipalProp is the snapshot summary property that scopes a
// client's statement id to the principal that sent it: a digest of the
// principal's name (absent for a call without authentication). An id
// matches an earlier run only when both agree, so one user's id never
// stops another's statement.
const StatementPrincipalProp = "icefloe.statement-principal"

// MaxStatementIDLen bounds a client's statement id.
const MaxStatementIDLen = 128

// Errors of statement ids.
var (
	// ErrAlreadyCommitted: a statement under the same id already
	// committed on the table; nothing was committed again (AlreadyExists).
	ErrAlreadyCommitted = errors.New("commit: already exists: the statement already committed")
	// ErrStatementID: a client's statement id that is not one
	// (InvalidArgument).
	ErrStatementID = errors.New("commit: invalid statement")
)

// stmtRun is what the commits of one statement share.
type stmtRun struct {
	id     string
	client bool
	owner  string // digest of the client's principal ("" without one)
	mu     sync.Mutex
	own    map[int64]bool // snapshots this run of the statement committed
}

type statementKey struct{}

// WithStatementID returns ctx carrying the client's statement id, scoped
// to principal, the name of who sent it ("" without authentication):
// every snapshot the statement
// commits records both, and a commit that finds the table already
// holding a snapshot of that id and principal from an earlier run fails
// with ErrAlreadyCommitted. An id is 1 to MaxStatementIDLen letters,
// digits or ._:- characters; anything else is ErrStatementID.
func WithStatementID(ctx context.Context, id, principal string) (context.Context, error) {
	if err := checkStatementID(id); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, statementKey{}, &stmtRun{id: id, client: true, owner: principalDigest(principal)}), nil
}

// principalDigest is what a snapshot records of a principal's name: not
// the name itself, which every reader of the table's snapshots would
// see. "" stays "".
func principalDigest(name string) string {
	if name == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

func checkStatementID(id string) error {
	if id == "" || len(id) > MaxStatementIDLen {
		return fmt.Errorf("%w: a statement id has 1 to %d characters, not %d", ErrStatementID, MaxStatementIDLen, len(id))
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == ':' || r == '-'
		if !ok {
			return fmt.Errorf("%w: a statement id holds only letters, digits and . _ : -, not %q", ErrStatementID, r)
		}
	}
	return nil
}

// WithStatement returns ctx carrying a statement: the client's if it
// named one, else a fresh one with an id of icefloe's choosing.
func WithStatement(ctx context.Context) context.Context {
	if statementOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, statementKey{}, &stmtRun{id: uuid.NewString()})
}

func statementOf(ctx context.Context) *stmtRun {
	s, _ := ctx.Value(statementKey{}).(*stmtRun)
	return s
}

// stamp returns updates with every added snapshot's summary recording the
// statement's id.
func (s *stmtRun) stamp(updates []table.Update) ([]table.Update, error) {
	out := make([]table.Update, len(updates))
	for i, u := range updates {
		out[i] = u
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		snaps, ok := AddedSnapshots([]table.Update{u})
		if !ok || len(snaps) != 1 {
			return nil, fmt.Errorf("record the statement id: unreadable snapshot update")
		}
		snap := snaps[0]
		if snap.Summary == nil {
			continue
		}
		props := maps.Clone(snap.Summary.Properties)
		if props == nil {
			props = iceberg.Properties{}
		}
		props[StatementIDProp] = s.id
		if s.owner != "" {
			props[StatementPrincipalProp] = s.owner
		}
		snap.Summary.Properties = props
		out[i] = table.NewAddSnapshotUpdate(&snap)
	}
	return out, nil
}

// committedBefore returns a snapshot of meta that an earlier run of the
// statement committed: one recording its id and principal that this run
// did not make. Only a client's id can have earlier runs.
func (s *stmtRun) committedBefore(meta table.Metadata) *table.Snapshot {
	if !s.client {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, snap := range meta.Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[StatementIDProp] == s.id &&
			snap.Summary.Properties[StatementPrincipalProp] == s.owner && !s.own[snap.SnapshotID] {
			return &snap
		}
	}
	return nil
}

// committedIn notes the snapshots updates added in this run; s may be
// nil.
func (s *stmtRun) committedIn(updates []table.Update) {
	if s == nil {
		return
	}
	snaps, _ := AddedSnapshots(updates)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own == nil {
		s.own = map[int64]bool{}
	}
	for _, snap := range snaps {
		s.own[snap.SnapshotID] = true
	}
}
