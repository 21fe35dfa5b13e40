package restcatalog

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/audit"
)

// TestAuditLines: every REST request writes an audit line, as a Flight
// statement does: who, the request's kind, the tables it read or wrote
// and at which snapshot, how it ended with its HTTP status; never a
// password, token or the request's body.
func TestAuditLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(audit.Options{File: file, Node: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f := newFixture(t, func(o *Options) { o.Audit = log })
	f.create("a")
	code, ans := f.call("creator", http.MethodGet, "/v1/local/namespaces/s/tables/a", nil)
	f.want("load", code, ans, http.StatusOK)
	code, ans = f.call("creator", http.MethodPost, "/v1/local/namespaces/s/tables/a", map[string]any{
		"requirements": []any{}, "updates": []any{setProp("secret-looking", "s3cr3t-value")}})
	f.want("commit", code, ans, http.StatusOK)
	code, ans = f.call("creator", http.MethodGet, "/v1/local/namespaces/other/tables/x", nil)
	f.want("a denied load", code, ans, http.StatusForbidden)

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"creator:creator", "Basic ", "s3cr3t-value"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the audit log holds %q:\n%s", secret, raw)
		}
	}
	var lines []audit.Entry
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Event == audit.EventREST && e.Principal == "creator" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d REST lines of creator, want 3:\n%s", len(lines), raw)
	}
	load, cm, denied := lines[0], lines[1], lines[2]
	if load.Kind != "rest.loadTable" || load.Outcome != audit.OutcomeOK || load.Code != "200" || len(load.Read) != 1 || load.Read[0].Table != "local.s.a" || load.Method != "password" {
		t.Fatalf("the load's line: %+v", load)
	}
	if cm.Kind != "rest.updateTable" || cm.Outcome != audit.OutcomeOK || len(cm.Written) != 1 || cm.Written[0].Table != "local.s.a" {
		t.Fatalf("the commit's line: %+v", cm)
	}
	if denied.Kind != "rest.loadTable" || denied.Outcome != audit.OutcomeError || denied.Code != "403" || !strings.Contains(denied.Error, "SELECT") || len(denied.Read) != 0 {
		t.Fatalf("the denied load's line: %+v", denied)
	}
}
