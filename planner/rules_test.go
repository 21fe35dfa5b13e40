package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestRules runs each rule's cases, testdata/rules/<rule> (the rule's name
// with underscores for spaces), in the manner of CockroachDB's optimizer
// rule tests:
//
//	plan expect=<rule> [workers=N] [shuffle] [broadcast=B] [shuffle_bytes=S] [worker_memory=M]
//	<query>
//	----
//	<the verdict of the rule that applied, and the plan tree>
//
// expect names the rule that must apply; expect-not one that must not.
// A case whose plan comes from another rule fails whatever its output.
// `go test -run TestRules ./planner/ -rewrite` rewrites the outputs.
func TestRules(t *testing.T) {
	datadriven.Walk(t, "testdata/rules", func(t *testing.T, path string) {
		fx := newPlanFixture(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "plan" {
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			plan, err := fx.plan(t, d)
			if err != nil {
				if d.HasArg("expect") {
					d.Fatalf(t, "expected a plan: %v", err)
				}
				return "error: " + err.Error() + "\n"
			}
			fired := ""
			for _, v := range plan.tree.Verdicts {
				if v.Applied {
					fired = ruleFile(v.Rule)
				}
			}
			for _, a := range d.CmdArgs {
				switch {
				case a.Key == "expect" && (len(a.Vals) != 1 || a.Vals[0] != fired):
					d.Fatalf(t, "expected %v to apply, %s did", a.Vals, fired)
				case a.Key == "expect-not" && len(a.Vals) == 1 && a.Vals[0] == fired:
					d.Fatalf(t, "expected %s not to apply", fired)
				}
			}
			var b strings.Builder
			for _, l := range planLines(plan) {
				k, v, _ := strings.Cut(l, "\t")
				if k == "plan" || k == "rule" && strings.HasPrefix(v, plan.tree.Verdicts[len(plan.tree.Verdicts)-1].Rule+": ") {
					b.WriteString(v + "\n")
				}
			}
			return b.String()
		})
	})
}

// ruleFile is the name of a rule's test file.
func ruleFile(rule string) string { return strings.ReplaceAll(rule, " ", "_") }

// TestEveryRuleHasCases: a rule without a file of cases that expect it
// fails here, so no rule goes untested.
func TestEveryRuleHasCases(t *testing.T) {
	for _, r := range rules {
		path := filepath.Join("testdata/rules", ruleFile(r.Name()))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("rule %s: %v", r.Name(), err)
			continue
		}
		if !strings.Contains(string(b), "expect="+ruleFile(r.Name())) {
			t.Errorf("rule %s: %s has no case with expect=%s", r.Name(), path, ruleFile(r.Name()))
		}
	}
}
