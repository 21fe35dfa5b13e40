package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A doc snippet is one fenced block of README.md or docs/*.md. Each runs
// as written against one `serve --demo` the test starts, in the order the
// files and blocks come (README.md first, then docs/ by name), so a later
// block may use what an earlier one of the same walk made:
//
//	sh, shell, bash  bash -e -o pipefail in a scratch directory holding
//	                 bin/icefloe (also on PATH), with $ICEFLOE_ADDR set
//	sql              icefloe sql, the block as its script on stdin
//	python           integration/.venv's Python (the Python suite's)
//	java             java File.java with the Flight SQL JDBC driver
//	yaml             icefloe config check, every ${VAR} set to a sample
//	text             not code (grammar, a transcript): counted, not run
//
// The one change made to a block's text is the coordinator's address:
// 127.0.0.1:32010 becomes the test server's, and so does the REST
// catalog's http://127.0.0.1:8181. An HTML comment on the line
// right before a fence changes what is done with the block:
//
//	<!-- snippet: skip reason="needs a Kubernetes cluster" -->
//	<!-- snippet: output -->   the block is what the block before it
//	                           prints (… in a line matches anything)
//
// A block with no language and no annotation fails the test.
type docSnippet struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	lang   string
	text   string
	kind   string // "", "skip" or "output"
	reason string
}

var (
	snippetFence = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	snippetNote  = regexp.MustCompile(`^\s*<!--\s*snippet:\s*(\w+)(?:\s+reason="([^"]*)")?\s*-->\s*$`)
	snippetVar   = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	javaClass    = regexp.MustCompile(`public\s+class\s+(\w+)`)
)

const docAddr = "127.0.0.1:32010"

// docREST is the REST catalog's URI in the docs; blocks get the test
// server's.
const docREST = "http://127.0.0.1:8181"

// docSample is what every ${VAR} of a YAML snippet is set to: base64 of
// 32 bytes, so it serves as a key, a password or a name alike.
const docSample = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// docFiles are README.md and docs/*.md, relative to root.
func docFiles(root string) []string {
	files := []string{"README.md"}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	return files
}

// parseSnippets reads the fenced blocks of one Markdown file.
func parseSnippets(t *testing.T, root, rel string) []docSnippet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docSnippet
	for i := 0; i < len(lines); i++ {
		m := snippetFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		s := docSnippet{file: rel, line: i + 1, lang: m[3]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if n := snippetNote.FindStringSubmatch(lines[j]); n != nil {
				s.kind, s.reason = n[1], n[2]
			}
			break
		}
		var body []string
		for i++; i < len(lines); i++ {
			if c := snippetFence.FindStringSubmatch(lines[i]); c != nil && c[2] == m[2] && c[3] == "" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], m[1]))
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: the block is never closed", rel, s.line)
		}
		s.text = strings.Join(body, "\n") + "\n"
		out = append(out, s)
	}
	return out
}

type snippetRun struct {
	t       *testing.T
	root    string
	dir     string // the scratch directory every block runs in
	addr    string
	rest    string // the REST catalog's URI
	env     []string
	python  string
	jdbcJar string
	n       int
}

// TestDocSnippets runs every snippet of README.md and docs/*.md (see
// docSnippet) and checks the output blocks; it lists what it skipped.
func TestDocSnippets(t *testing.T) {
	bin := icefloeBin(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := docFiles(root)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "icefloe")); err != nil {
		t.Fatal(err)
	}
	f := startRole(t, bin, nil, "serve", "--demo", "--listen", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "icefloe-data"), "--workers", "2")
	r := &snippetRun{t: t, root: root, dir: dir, addr: strings.TrimPrefix(f["coordinator"].(string), "grpc://")}
	r.rest, _ = f["rest"].(string)
	r.env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "ICEFLOE_ADDR="+r.addr)

	counts := map[string]int{}
	var skipped, text []string
	for _, file := range files {
		var last string // stdout of the block before, for an output block
		lastRan := false
		for _, s := range parseSnippets(t, root, file) {
			where := fmt.Sprintf("%s:%d", s.file, s.line)
			switch {
			case s.kind == "skip":
				if strings.TrimSpace(s.reason) == "" {
					t.Errorf("%s: a skipped block must say why: <!-- snippet: skip reason=\"…\" -->", where)
				}
				skipped = append(skipped, where+": "+s.reason)
				lastRan = false
				continue
			case s.kind == "output":
				if !lastRan {
					t.Errorf("%s: an output block must follow a block that runs", where)
				} else if msg := matchOutput(s.text, last); msg != "" {
					t.Errorf("%s: the output shown is not what the block before printed:\n%s", where, msg)
				}
				counts["output checked"]++
				lastRan = false
				continue
			case s.kind != "":
				t.Errorf("%s: unknown annotation %q (skip or output)", where, s.kind)
				continue
			case s.lang == "text":
				text = append(text, where)
				lastRan = false
				continue
			case s.lang == "recipe": // TestContributorRecipes checks these
				counts["recipe"]++
				lastRan = false
				continue
			}
			out, ok := r.run(where, s)
			last, lastRan = out, ok
			if ok {
				counts[s.lang]++
			}
		}
	}
	t.Logf("doc snippets: ran %v; %d text blocks not run: %s", counts, len(text), strings.Join(text, " "))
	t.Logf("doc snippets: %d skipped:\n  %s", len(skipped), strings.Join(skipped, "\n  "))
}

// run runs one block and returns its stdout; a failure is reported.
func (r *snippetRun) run(where string, s docSnippet) (string, bool) {
	t := r.t
	r.n++
	text := strings.ReplaceAll(strings.ReplaceAll(s.text, docAddr, r.addr), docREST, r.rest)
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch s.lang {
	case "sh", "shell", "bash":
		cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", text)
	case "sql":
		cmd = exec.CommandContext(ctx, filepath.Join(r.dir, "bin", "icefloe"), "sql")
		cmd.Stdin = strings.NewReader(text)
	case "python":
		path := r.write(fmt.Sprintf("snippet%d.py", r.n), text)
		cmd = exec.CommandContext(ctx, r.pythonBin(), path)
	case "java":
		m := javaClass.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s: a java block must declare a public class", where)
			return "", false
		}
		path := r.write(filepath.Join(fmt.Sprintf("java%d", r.n), m[1]+".java"), text)
		cmd = exec.CommandContext(ctx, "java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", r.jar(), path)
	case "yaml":
		path := r.write(fmt.Sprintf("snippet%d.yaml", r.n), text)
		cmd = exec.CommandContext(ctx, filepath.Join(r.dir, "bin", "icefloe"), "config", "check", path)
		for _, m := range snippetVar.FindAllStringSubmatch(yamlUncommented(text), -1) {
			cmd.Env = append(cmd.Env, m[1]+"="+docSample)
		}
	case "":
		t.Errorf("%s: a block without a language: give it one (sh, sql, python, java, yaml or text) or annotate it <!-- snippet: skip reason=\"…\" -->", where)
		return "", false
	default:
		t.Errorf("%s: no runner for language %q: annotate it <!-- snippet: skip reason=\"…\" --> or use text", where, s.lang)
		return "", false
	}
	cmd.Dir = r.dir
	cmd.Env = append(append([]string{}, r.env...), cmd.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if err == nil && s.lang == "python" && strings.Contains(stderr.String(), "ERROR") {
		err = fmt.Errorf("it printed an error on stderr")
	}
	if err == nil && s.lang == "yaml" {
		err = checkEffectiveConfig(stdout.String())
	}
	if err != nil {
		t.Errorf("%s: the %s block fails as written: %v\n--- block\n%s--- stdout\n%s--- stderr\n%s", where, s.lang, err, s.text, stdout.String(), stderr.String())
		return "", false
	}
	t.Logf("%s: %s ran in %s", where, s.lang, time.Since(start).Round(time.Millisecond))
	return stdout.String(), true
}

// yamlUncommented is text without its YAML comments (a # at a line's
// start or after a space), whose ${VAR}s are not expanded.
func yamlUncommented(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i] = ""
		} else if j := strings.Index(l, " #"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// checkEffectiveConfig: config check printed the effective config, and
// none of the values the ${VAR}s were given (each a stand-in secret).
func checkEffectiveConfig(out string) error {
	if !strings.HasPrefix(out, "# effective config") {
		return fmt.Errorf("config check did not print the effective config")
	}
	if strings.Contains(out, docSample) {
		return fmt.Errorf("config check printed a value from the environment unredacted")
	}
	return nil
}

func (r *snippetRun) write(name, text string) string {
	path := filepath.Join(r.dir, "snippets", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// pythonBin is the Python suite's virtualenv, made or brought up to date
// by scripts/ensure-venv (quick when it is).
func (r *snippetRun) pythonBin() string {
	if r.python == "" {
		venv := filepath.Join(r.root, "integration", ".venv")
		ensure := exec.Command(filepath.Join(r.root, "scripts", "ensure-venv"), venv, filepath.Join(r.root, "integration", "python", "requirements.txt"))
		if out, err := ensure.CombinedOutput(); err != nil {
			r.t.Fatalf("ensure-venv: %v\n%s", err, out)
		}
		r.python = filepath.Join(venv, "bin", "python")
	}
	return r.python
}

// jar is the JDBC suite's driver jar, fetched once into integration/.m2.
func (r *snippetRun) jar() string {
	if r.jdbcJar == "" {
		out, err := exec.Command(filepath.Join(r.root, "scripts", "fetch-maven"),
			"org.apache.arrow:flight-sql-jdbc-driver:18.3.0", filepath.Join(r.root, "integration", ".m2", "jars")).Output()
		if err != nil {
			r.t.Fatalf("fetch-maven: %v", err)
		}
		r.jdbcJar = strings.TrimSpace(string(out))
	}
	return r.jdbcJar
}

// matchOutput compares an output block with what was printed, line by
// line, trailing spaces aside: … in a shown line matches any text, a line
// of … alone any number of lines. It returns "" when they match, else
// both texts.
func matchOutput(shown, got string) string {
	want, have := outputLines(shown), outputLines(got)
	var re strings.Builder
	re.WriteString("^")
	for _, line := range want {
		if line == "…" {
			re.WriteString(`(?:[^\n]*\n)*`)
			continue
		}
		parts := strings.Split(line, "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		re.WriteString(strings.Join(parts, `[^\n]*`) + `\n`)
	}
	re.WriteString("$")
	if regexp.MustCompile(re.String()).MatchString(strings.Join(have, "\n") + "\n") {
		return ""
	}
	return "--- shown\n" + strings.Join(want, "\n") + "\n--- printed\n" + strings.Join(have, "\n")
}

func outputLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), " \t"))
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// TestDocSnippetChecks: the parser and the output check the snippet test
// relies on, on a made-up page.
func TestDocSnippetChecks(t *testing.T) {
	dir := t.TempDir()
	page := "# P\n\n<!-- snippet: skip reason=\"needs a cluster\" -->\n```sh\nkubectl get pods\n```\n\n" +
		"  ```sql\n  SELECT 1;\n  ```\n\n<!-- snippet: output -->\n```text\n x\n```\n\n```\nbare\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	got := parseSnippets(t, dir, "p.md")
	want := []docSnippet{
		{file: "p.md", line: 4, lang: "sh", text: "kubectl get pods\n", kind: "skip", reason: "needs a cluster"},
		{file: "p.md", line: 8, lang: "sql", text: "SELECT 1;\n"},
		{file: "p.md", line: 13, lang: "text", text: " x\n", kind: "output"},
		{file: "p.md", line: 17, lang: "", text: "bare\n"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parsed\n%v\nwant\n%v", got, want)
	}
	for _, c := range []struct {
		shown, printed string
		ok             bool
	}{
		{" a | b\n(1 row)\n", " a | b   \n(1 row)\n\n", true},
		{" a | b\n(1 row)\n", " a | c\n(1 row)\n", false},
		{"(… rows)\n", "(12 rows)\n", true},
		{"name\n…\n(… rows)\n", "name\nx\ny\n(2 rows)\n", true},
		{"name\n…\n(… rows)\n", "name\nx\n", false},
		{"one\n", "one\ntwo\n", false},
	} {
		if msg := matchOutput(c.shown, c.printed); (msg == "") != c.ok {
			t.Errorf("matchOutput(%q, %q) = %q, want match %v", c.shown, c.printed, msg, c.ok)
		}
	}
}
