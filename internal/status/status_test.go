package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
)

type fakeRuntime struct{ cancelled []string }

func (f *fakeRuntime) Queries(context.Context) []queryreg.Info {
	return []queryreg.Info{{ID: "q1", Principal: "", State: queryreg.Running, SQL: "SELECT <b>?</b>", Start: time.Now(),
		PlannedFiles: 4, ReadFiles: 1, PlannedBytes: 4000, ReadBytes: 1000, Rows: 1200, Bytes: 2500000}}
}

func (f *fakeRuntime) Workers(context.Context) []planner.RuntimeWorker {
	return []planner.RuntimeWorker{{Location: "grpc://w1", Health: "live", Slots: 2}}
}

func (f *fakeRuntime) CancelQuery(_ context.Context, id string, may func(string) bool) (queryreg.Info, error) {
	if !may("") {
		return queryreg.Info{}, queryreg.ErrNotYours
	}
	f.cancelled = append(f.cancelled, id)
	return queryreg.Info{ID: id, State: queryreg.Cancelled}, nil
}

func TestPageAndCancel(t *testing.T) {
	rt := &fakeRuntime{}
	h, err := New(Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `data-query="q1"`) || !strings.Contains(body, "grpc://w1") {
		t.Fatalf("page %d:\n%s", rec.Code, body)
	}
	if strings.Contains(body, "<b>?</b>") {
		t.Fatal("SQL is not escaped")
	}
	// The running query's progress: the bar and percent of the bytes
	// read, the files and bytes read of those planned, rows and bytes.
	for _, want := range []string{`<progress max="100" value="25">`, "25%", "1/4 files, 1.0 kB of 4.0 kB", "<td>1200</td>", "2.5 MB"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %q:\n%s", want, body)
		}
	}
	post := func(token, origin, site string) int {
		form := url.Values{"query_id": {"q1"}, "token": {token}}
		r := httptest.NewRequest("POST", "/cancel", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	tok := h.token("")
	for _, c := range []struct {
		token, origin, site string
		want                int
	}{
		{"forged", "http://example.com", "", http.StatusForbidden},
		{tok, "http://evil.test", "", http.StatusForbidden},
		{tok, "", "cross-site", http.StatusForbidden},
		{tok, "", "", http.StatusForbidden},
		{tok, "http://example.com", "", http.StatusSeeOther},
		{tok, "", "same-origin", http.StatusSeeOther},
	} {
		if got := post(c.token, c.origin, c.site); got != c.want {
			t.Errorf("token %.6s origin %q site %q: %d, want %d", c.token, c.origin, c.site, got, c.want)
		}
	}
	if len(rt.cancelled) != 2 {
		t.Fatalf("cancelled %v, want q1 twice", rt.cancelled)
	}
}
