package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
)

func TestLogLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{File: path, Node: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	var none *Record
	none.Read("x", 1) // a context without a record keeps nothing
	none.Wrote("x", 1)
	ctx, rec := WithRecord(context.Background())
	From(ctx).Read("local.s.t", 7)
	From(ctx).Read("local.s.t", 7)
	From(ctx).Wrote("local.s.u", 9)
	From(ctx).AddBytes(100)
	From(ctx).QueryID("q1")
	e := Entry{Event: EventStatement, Principal: "alice", SQL: "SELECT 1", Rows: 3}
	rec.Fill(&e)
	l.Write(e, nil)
	l.WithNode("worker w1").Write(Entry{Event: EventFetch}, status.Error(codes.PermissionDenied, "no"))
	l.Login(ctx, auth.LoginEvent{User: "bob", Method: auth.MethodPassword, Err: errors.New("wrong user name or password")})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode %v, %v", fi.Mode(), err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var lines []Entry
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, e)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	s := lines[0]
	if s.QueryID != "q1" || len(s.Read) != 1 || s.Read[0].Snapshot != 7 || len(s.Written) != 1 || s.Bytes != 100 || s.Outcome != OutcomeOK || s.Code != "OK" || s.Node != "coordinator" {
		t.Errorf("statement line %+v", s)
	}
	if f := lines[1]; f.Code != "PermissionDenied" || f.Error != "no" || f.Outcome != OutcomeError || f.Node != "worker w1" {
		t.Errorf("fetch line %+v", f)
	}
	if g := lines[2]; g.Event != EventLogin || g.Principal != "bob" || g.Code != "Unauthenticated" {
		t.Errorf("login line %+v", g)
	}
}

func TestRedaction(t *testing.T) {
	plain, _ := Open(Options{})
	if plain.SQL(parse.Must("SELECT 'x'")) != "SELECT 'x'" {
		t.Error("SQL changed without redaction")
	}
	red, _ := Open(Options{RedactLiterals: true})
	for in, want := range map[string]string{
		"SELECT * FROM t WHERE pw = 'hunter2' AND n > 42":              "SELECT * FROM t WHERE pw = ? AND n > ?",
		"INSERT INTO t VALUES (E'a\\'b', $x$sec;ret$x$, 1.5e3, X'ff')": "INSERT INTO t VALUES (?, ?, ?, ?)",
		"SELECT 1 -- the card 4111\rFROM t":                            "SELECT ? FROM t",
		"SELECT /* key=abc */ a FROM t WHERE b = ?":                    "SELECT a FROM t WHERE b = ?",
		"SELECT 'unterminated":                                         "",
	} {
		st, _ := parse.Parse(in)
		if got := red.SQL(st); got != want {
			t.Errorf("redact %q: %q, want %q", in, got, want)
		}
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	var nilLog *Log
	nilLog.Write(Entry{}, nil) // no log: nothing happens
}
