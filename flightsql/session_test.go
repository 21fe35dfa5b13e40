package flightsql

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/planner"
)

func setOptions(t *testing.T, e *env, opts map[string]any) *flight.SetSessionOptionsResult {
	t.Helper()
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.client.SetSessionOptions(context.Background(), &flight.SetSessionOptionsRequest{SessionOptions: vals})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func getOptions(t *testing.T, e *env) map[string]string {
	t.Helper()
	res, err := e.client.GetSessionOptions(context.Background(), &flight.GetSessionOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range res.GetSessionOptions() {
		out[k] = v.GetStringValue()
	}
	return out
}

// planSession runs a query and returns the session the planner got.
func planSession(t *testing.T, e *env) planner.Session {
	t.Helper()
	if _, err := e.client.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	return e.planner.last(t, "Plan").session
}

func TestSessionOptions(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	def := planner.Session{Catalog: "local", Schema: "default"}
	if got := planSession(t, e); got != def {
		t.Fatalf("default session = %+v", got)
	}
	if got := getOptions(t, e); got["catalog"] != "local" || got["schema"] != "default" {
		t.Errorf("default options = %v", got)
	}

	res := setOptions(t, e, map[string]any{"catalog": "other", "schema": "sales"})
	if len(res.GetErrors()) != 0 {
		t.Fatalf("errors = %v", res.GetErrors())
	}
	want := planner.Session{Catalog: "other", Schema: "sales"}
	if got := planSession(t, e); got != want {
		t.Errorf("session after set = %+v", got)
	}
	if got := getOptions(t, e); got["catalog"] != "other" || got["schema"] != "sales" {
		t.Errorf("options after set = %v", got)
	}
	// Updates and prepared statements see the session too.
	if _, err := e.client.ExecuteUpdate(ctx, "DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	if got := e.planner.last(t, "Exec").session; got != want {
		t.Errorf("exec session = %+v", got)
	}
	prep, err := e.client.Prepare(ctx, "SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if got := e.planner.last(t, "Bind").session; got != want {
		t.Errorf("bind session = %+v", got)
	}

	// Unknown names, wrong types and unknown catalogs are per-option
	// errors, and leave the session as it was.
	res = setOptions(t, e, map[string]any{"catalog": "nope", "colour": "blue", "schema": int64(3)})
	errs := res.GetErrors()
	if errs["catalog"].GetValue() != flight.SetSessionOptionsResultErrorInvalidValue ||
		errs["colour"].GetValue() != flight.SetSessionOptionsResultErrorInvalidName ||
		errs["schema"].GetValue() != flight.SetSessionOptionsResultErrorInvalidValue || len(errs) != 3 {
		t.Errorf("errors = %v", errs)
	}
	if got := planSession(t, e); got != want {
		t.Errorf("session after failed set = %+v", got)
	}

	// The prepared handle carries the session it was prepared under.
	setOptions(t, e, map[string]any{"catalog": "local"})
	if got := planSession(t, e); got != (planner.Session{Catalog: "local", Schema: "sales"}) {
		t.Errorf("session after catalog change = %+v", got)
	}
	if _, err := prep.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.planner.last(t, "Plan").session; got != want {
		t.Errorf("prepared statement planned under %+v, want %+v", got, want)
	}

	// Closing the session returns to the defaults.
	cres, err := e.client.CloseSession(ctx, &flight.CloseSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cres.GetStatus() != flight.CloseSessionResultClosed {
		t.Errorf("close status = %v", cres.GetStatus())
	}
	if got := planSession(t, e); got != def {
		t.Errorf("session after close = %+v", got)
	}
}

// A session is per client: another connection without the cookie sees
// the defaults.
func TestSessionIsPerClient(t *testing.T) {
	e := start(t)
	setOptions(t, e, map[string]any{"schema": "sales"})
	other := e.dial(t, true)
	if _, err := other.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if got := e.planner.last(t, "Plan").session; got != (planner.Session{Catalog: "local", Schema: "default"}) {
		t.Errorf("other client's session = %+v", got)
	}
	if got := planSession(t, e); got.Schema != "sales" {
		t.Errorf("first client's session = %+v", got)
	}
}

// A cookie the server cannot decode starts a fresh session instead of
// crashing the server (arrow-go's middleware panics on it).
func TestSessionBadCookie(t *testing.T) {
	e := start(t)
	cl := e.dial(t, false)
	for _, cookie := range []string{"arrow_flight_session=!!notbase64!!", "arrow_flight_session=AAAA", "arrow_flight_session="} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "cookie", cookie)
		if _, err := cl.Execute(ctx, "SELECT 1"); err != nil {
			t.Fatalf("cookie %q: %v", cookie, err)
		}
		if got := e.planner.last(t, "Plan").session; got != (planner.Session{Catalog: "local", Schema: "default"}) {
			t.Errorf("cookie %q: session = %+v", cookie, got)
		}
	}
}

// staleClient sends the cookie it is given and captures what the server
// sets, to play a client whose cookie middleware dropped a Set-Cookie.
type staleClient struct {
	t  *testing.T
	cl *flightsql.Client
}

// call runs f with cookie (none when empty) and returns the cookie the
// server set, or "" when it set none.
func (c staleClient) call(cookie string, f func(ctx context.Context, opts ...grpc.CallOption) error) string {
	c.t.Helper()
	ctx := context.Background()
	if cookie != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "cookie", cookie)
	}
	var hdr, trl metadata.MD
	if err := f(ctx, grpc.Header(&hdr), grpc.Trailer(&trl)); err != nil {
		c.t.Fatal(err)
	}
	set := ""
	for _, v := range append(hdr.Get("set-cookie"), trl.Get("set-cookie")...) {
		set = strings.SplitN(v, ";", 2)[0]
	}
	return set
}

func (c staleClient) execute(cookie string) string {
	return c.call(cookie, func(ctx context.Context, opts ...grpc.CallOption) error {
		_, err := c.cl.Execute(ctx, "SELECT 1", opts...)
		return err
	})
}

// TestSessionStaleCookie: a client that lost the cookie of a session
// change (arrow-go's cookie middleware can drop a streaming call's
// Set-Cookie) and sends its older cookie is served with the session as
// changed, and is sent the newer cookie again; a session closed since
// starts afresh.
func TestSessionStaleCookie(t *testing.T) {
	e := start(t)
	c := staleClient{t: t, cl: e.dial(t, false)}
	first := c.execute("")
	if first == "" {
		t.Fatal("the first call set no cookie")
	}
	set := func(cookie string, opts map[string]any) string {
		vals, err := flight.NewSessionOptionValues(opts)
		if err != nil {
			t.Fatal(err)
		}
		return c.call(cookie, func(ctx context.Context, o ...grpc.CallOption) error {
			_, err := c.cl.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: vals}, o...)
			return err
		})
	}
	sales := set(first, map[string]any{"schema": "sales"})
	if sales == "" || sales == first {
		t.Fatalf("SetSessionOptions set cookie %q after %q", sales, first)
	}
	// The client lost that cookie and sends its first one again.
	again := c.execute(first)
	if got := e.planner.last(t, "Plan").session; got != (planner.Session{Catalog: "local", Schema: "sales"}) {
		t.Fatalf("a call with the older cookie ran under %+v", got)
	}
	if again == "" {
		t.Fatal("the older cookie was not replaced")
	}
	c.execute(again)
	if got := e.planner.last(t, "Plan").session; got.Schema != "sales" {
		t.Fatalf("the resent cookie carries %+v", got)
	}
	// A later change wins over the earlier one; the newest cookie is
	// served as it is.
	set(sales, map[string]any{"schema": "hr"})
	for _, cookie := range []string{first, sales} {
		c.execute(cookie)
		if got := e.planner.last(t, "Plan").session; got.Schema != "hr" {
			t.Fatalf("cookie %q ran under %+v after the second change", cookie, got)
		}
	}
	// USE changes the session as SetSessionOptions does.
	c.call(sales, func(ctx context.Context, o ...grpc.CallOption) error {
		_, err := c.cl.ExecuteUpdate(ctx, "USE local.ops", o...)
		return err
	})
	c.execute(first)
	if got := e.planner.last(t, "Plan").session; got.Schema != "ops" {
		t.Fatalf("after USE, an older cookie ran under %+v", got)
	}
	// Closed here: an older cookie starts a fresh session.
	c.call(sales, func(ctx context.Context, o ...grpc.CallOption) error {
		_, err := c.cl.CloseSession(ctx, &flight.CloseSessionRequest{}, o...)
		return err
	})
	fresh := c.execute(sales)
	if got := e.planner.last(t, "Plan").session; got != (planner.Session{Catalog: "local", Schema: "default"}) {
		t.Fatalf("a cookie of a closed session ran under %+v", got)
	}
	if fresh == "" || fresh == first {
		t.Fatalf("a closed session's cookie got %q", fresh)
	}
	// Another client's session is its own.
	c.execute(fresh)
	if got := e.planner.last(t, "Plan").session; got.Schema != "default" {
		t.Fatalf("the fresh session runs under %+v", got)
	}
}

// A client cannot set the session's internal id or generation.
func TestSessionInternalOptions(t *testing.T) {
	e := start(t)
	res := setOptions(t, e, map[string]any{optSessionID: "x", optSessionGen: int64(9)})
	errs := res.GetErrors()
	if errs[optSessionID].GetValue() != flight.SetSessionOptionsResultErrorInvalidName ||
		errs[optSessionGen].GetValue() != flight.SetSessionOptionsResultErrorInvalidName {
		t.Fatalf("errors = %v", errs)
	}
	if got := getOptions(t, e); len(got) != 2 {
		t.Fatalf("GetSessionOptions shows %v", got)
	}
}

// cookieOf is the arrow_flight_session cookie of options, as a client
// could write it.
func cookieOf(t *testing.T, opts map[string]any) string {
	t.Helper()
	vals, err := flight.NewSessionOptionValues(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&flight.GetSessionOptionsResult{SessionOptions: vals})
	if err != nil {
		t.Fatal(err)
	}
	return session.StatelessSessionCookieName + "=" + base64.StdEncoding.EncodeToString(b)
}

// TestSessionOptionSize: a session option's value is bounded: setting a
// larger one fails with InvalidArgument naming the option and the limit
// and sets nothing, and a cookie carrying one (or a name icefloe never
// sets) starts a fresh session.
func TestSessionOptionSize(t *testing.T) {
	e := start(t)
	big := strings.Repeat("s", 1<<20)
	vals, err := flight.NewSessionOptionValues(map[string]any{"schema": big, "catalog": "other"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.SetSessionOptions(context.Background(), &flight.SetSessionOptionsRequest{SessionOptions: vals})
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "session option too large: schema") || !strings.Contains(st.Message(), "1024 bytes") {
		t.Fatalf("a 1 MiB schema: %v, want InvalidArgument naming the option and the limit", err)
	}
	if got := getOptions(t, e); got["catalog"] != "local" || got["schema"] != "default" {
		t.Fatalf("a refused call set options: %v", got)
	}
	cl := e.dial(t, false)
	for what, opts := range map[string]map[string]any{
		"a 1 MiB schema":  {"schema": big, optSessionID: "0123"},
		"an unknown name": {"catalog": "other", "x-big": "v"},
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "cookie", cookieOf(t, opts))
		if _, err := cl.Execute(ctx, "SELECT 1"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := e.planner.last(t, "Plan").session; got != (planner.Session{Catalog: "local", Schema: "default"}) {
			t.Errorf("a cookie with %s ran under %+v, want a fresh session", what, got.Catalog)
		}
	}
}

// TestRecentSessionsBoundedByBytes: the sessions a coordinator remembers
// for repair are bounded by the bytes of their options, not only by
// their count.
func TestRecentSessionsBoundedByBytes(t *testing.T) {
	r := newRecentSessions()
	val := strings.Repeat("v", 1000)
	for i := range 16384 {
		opts, _ := flight.NewSessionOptionValues(map[string]any{"catalog": val, "schema": val, "icefloe.wap_branch": val,
			optSessionID: strconv.Itoa(i)})
		r.add(strconv.Itoa(i), sessionState{gen: 1, options: opts})
	}
	var total int
	for _, st := range r.lru.Values() {
		for k, v := range st.options {
			total += len(k) + proto.Size(v)
		}
	}
	if total > 16<<20 {
		t.Fatalf("%d sessions hold %d bytes of options, want at most 16 MiB", r.lru.Len(), total)
	}
	if _, ok := r.lru.Peek("16383"); !ok {
		t.Fatal("the newest session was forgotten")
	}
	if _, ok := r.lru.Peek("0"); ok {
		t.Fatal("the oldest session is still remembered")
	}
}

// TestSessionRepairIsThePrincipals: a cookie carrying the id of another
// principal's session neither reads that session's newer options nor,
// with its generation raised, replaces them.
func TestSessionRepairIsThePrincipals(t *testing.T) {
	r := newRecentSessions()
	alice := auth.NewContext(context.Background(), &auth.Principal{Name: "alice"})
	mallory := auth.NewContext(context.Background(), &auth.Principal{Name: "mallory"})
	opts, _ := flight.NewSessionOptionValues(map[string]any{"schema": "alice_private", optSessionID: "s1", optSessionGen: int64(3)})
	r.add(repairKey(alice, "s1"), sessionState{gen: 3, options: opts})
	forged := session.NewStatelessServerSession(map[string]*flight.SessionOptionValue{optSessionID: stringValue("s1")})
	if got, _ := r.repair(mallory, forged); got.GetSessionOption(OptionSchema) != nil {
		t.Fatalf("mallory's cookie with alice's session id was served alice's options: %v", got.GetSessionOptions())
	}
	if got, _ := r.repair(alice, forged); stringValueOf(got.GetSessionOption(OptionSchema)) != "alice_private" {
		t.Fatalf("alice's own stale cookie was not repaired: %v", got.GetSessionOptions())
	}
	// mallory's change under alice's id, generation raised, is mallory's.
	mine, _ := flight.NewSessionOptionValues(map[string]any{"schema": "mallory_schema", optSessionID: "s1", optSessionGen: int64(9)})
	r.add(repairKey(mallory, "s1"), sessionState{gen: 9, options: mine})
	if got, _ := r.repair(alice, forged); stringValueOf(got.GetSessionOption(OptionSchema)) != "alice_private" {
		t.Fatalf("mallory's change replaced alice's session: %v", got.GetSessionOptions())
	}
}

func stringValueOf(v *flight.SessionOptionValue) string { s, _ := stringOption(v); return s }
