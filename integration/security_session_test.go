package integration

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/flightclient"
)

// TestSessionOptionSizeThroughADBC: a session option a client sets is
// bounded in bytes; a 4 MiB schema fails with InvalidArgument naming
// the option and the limit, and the session keeps what it had.
func TestSessionOptionSizeThroughADBC(t *testing.T) {
	s := StartCluster(t, Workers(1))
	cnxn := adbcSessionConn(t, s.Addr())
	opts := cnxn.(adbc.PostInitOptions)
	err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, strings.Repeat("s", 4<<20))
	wantADBC(t, "a 4 MiB schema", err, adbc.StatusInvalidArgument, "session option too large: schema", "1024 bytes")
	if err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, "sales"); err != nil {
		t.Fatalf("a schema name: %v", err)
	}
}

// sessionCall is one Flight call of a raw client as user, sending the
// cookie given (none when ""), returning the cookie the server set (""
// for none).
func (e *secureEnv) sessionCall(t *testing.T, cl *flightsql.Client, user, cookie string, f func(ctx context.Context, o ...grpc.CallOption) error) string {
	t.Helper()
	ctx := call(basic(user, securePasswords[user]))
	if cookie != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "cookie", cookie)
	}
	var hdr, trl metadata.MD
	if err := f(ctx, grpc.Header(&hdr), grpc.Trailer(&trl)); err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	set := ""
	for _, v := range append(hdr.Get("set-cookie"), trl.Get("set-cookie")...) {
		set = strings.SplitN(v, ";", 2)[0]
	}
	return set
}

// sessionCookie decodes a session cookie's options and encodes them again
// with changes, as a client forging one would.
func sessionCookie(t *testing.T, cookie string, change func(map[string]*flight.SessionOptionValue)) string {
	t.Helper()
	name, val, _ := strings.Cut(cookie, "=")
	raw, err := base64.StdEncoding.DecodeString(val)
	if err != nil {
		t.Fatal(err)
	}
	var res flight.GetSessionOptionsResult
	if err := proto.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	change(res.SessionOptions)
	out, err := proto.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	return name + "=" + base64.StdEncoding.EncodeToString(out)
}

// TestForgedSessionCookie: bob forges a session cookie carrying alice's
// session id (what a stolen or guessed id gives). It neither reads the
// schema alice set since her cookie was made nor, with the generation
// raised, replaces what her own stale cookie is repaired with.
func TestForgedSessionCookie(t *testing.T) {
	e := startSecure(t)
	fc, err := flightclient.Dial("grpc+tls://"+e.s.Addr(), e.client)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	cl := &flightsql.Client{Client: fc}
	set := func(user, cookie, schema string) string {
		vals, _ := flight.NewSessionOptionValues(map[string]any{"schema": schema})
		return e.sessionCall(t, cl, user, cookie, func(ctx context.Context, o ...grpc.CallOption) error {
			res, err := cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: vals}, o...)
			if err == nil && len(res.GetErrors()) > 0 {
				t.Fatalf("%s sets schema: %v", user, res.GetErrors())
			}
			return err
		})
	}
	schema := func(user, cookie string) string {
		var got string
		e.sessionCall(t, cl, user, cookie, func(ctx context.Context, o ...grpc.CallOption) error {
			res, err := cl.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{}, o...)
			got = res.GetSessionOptions()["schema"].GetStringValue()
			return err
		})
		return got
	}
	// alice's first cookie carries her session's id; her change of
	// schema makes it stale, and the coordinator remembers the change.
	first := set("alice", "", "default")
	if first == "" {
		t.Fatal("no session cookie")
	}
	set("alice", first, "alice_private")
	if got := schema("alice", first); got != "alice_private" {
		t.Fatalf("alice's stale cookie is served schema %q, want her change", got)
	}
	stolen := sessionCookie(t, first, func(o map[string]*flight.SessionOptionValue) {
		for k := range o {
			if k != "icefloe.session" {
				delete(o, k)
			}
		}
	})
	if got := schema("bob", stolen); got == "alice_private" {
		t.Fatal("bob's forged cookie with alice's session id reads alice's schema")
	}
	bumped := sessionCookie(t, stolen, func(o map[string]*flight.SessionOptionValue) {
		o["icefloe.session_gen"] = &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_Int64Value{Int64Value: 50}}
	})
	set("bob", bumped, "bob_schema")
	if got := schema("alice", first); got != "alice_private" {
		t.Fatalf("after bob's forged change alice's cookie is served schema %q, want her own", got)
	}
}
