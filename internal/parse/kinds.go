package parse

import (
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Kind is a kind of statement: an index into the kind table.
type Kind uint8

// The statement kinds icefloe runs.
const (
	KindInvalid Kind = iota
	KindSelect
	KindSummarize
	KindExplain
	KindCall
	KindShow
	KindUse
	KindCreateSchema
	KindDropSchema
	KindCreateTable
	KindReplaceTable
	KindDropTable
	KindCreateView
	KindDropView
	KindInsert
	KindUpdate
	KindDelete
	KindMerge
	KindTruncate
	KindAlterTable
	KindSet
	// refused and unsupported name the table's entries for statements
	// clients may not run; no Statement has them.
	refused
	unsupported
	numKinds
)

// Runner says what runs a kind of statement.
type Runner uint8

const (
	// RunPlanner: statement.Executor's Bind and Plan (the kind returns
	// rows, answered as a FlightInfo): planner registers a runner per
	// kind, but for CALL, which the executor runs and has planned as rows.
	RunPlanner Runner = iota + 1
	// RunExecutor: statement.Executor's Exec (the kind returns an update
	// count; statement registers a runner per kind).
	RunExecutor
	// RunSession: the Flight SQL session itself (flightsql; USE).
	RunSession
)

// Audit kinds of the statements (the audit log's and
// system.runtime.queries' kind).
const (
	AuditQuery  = "query"
	AuditUpdate = "update"
)

// Info is one entry of the kind table.
type Info struct {
	Kind Kind
	// Name names the kind in messages and docs.
	Name string
	// Starts are the keyword sequences that start a statement of the
	// kind ("(" for a parenthesised query); the longest match wins.
	Starts [][]string
	// Query: DuckDB parses the whole statement (its body is a *Query).
	Query bool
	// Rows: the statement returns rows (a FlightInfo with a schema),
	// else an update count.
	Rows bool
	// Audit is its kind in the audit log (AuditQuery, AuditUpdate).
	Audit string
	// Slot: it takes one of the coordinator's admission slots, unless
	// it is cheap (Statement.Cheap).
	Slot bool
	// Runner runs it.
	Runner Runner
	// Params: it takes parameter values (placeholders).
	Params bool
	// DryRun: EXPLAIN runs it as a dry run that stops before the first
	// change (a write).
	DryRun bool
	// parse reads the statement after its Starts words into its body.
	parse func(c *cursor) (Body, error)
	// refuse is the error of an entry for statements clients may not
	// run (n is how many tokens its Starts matched).
	refuse func(toks []sqltok.Token, n int) error
}

// Info is the kind table's entry of k.
func (k Kind) Info() *Info {
	if int(k) < len(kinds) {
		return &kinds[k]
	}
	return &kinds[KindInvalid]
}

func (k Kind) String() string { return k.Info().Name }

// words makes Starts from space-separated keyword sequences.
func words(seqs ...string) [][]string {
	out := make([][]string, len(seqs))
	for i, s := range seqs {
		out[i] = strings.Fields(s)
	}
	return out
}

// table is the kind table, indexed by Kind. Adding a kind adds its
// constant above, an entry here, its parser (a file of this package) and
// its runner (registered in the package its Runner names): nothing else.
var table = [numKinds]Info{
	KindInvalid: {Kind: KindInvalid, Name: "invalid"},
	KindSelect: {Kind: KindSelect, Name: "SELECT", Starts: words("SELECT", "WITH", "VALUES", "FROM", "TABLE", "("),
		Query: true, Rows: true, Audit: AuditQuery, Slot: true, Runner: RunPlanner, Params: true, parse: parseQuery},
	KindSummarize: {Kind: KindSummarize, Name: "SUMMARIZE", Starts: words("SUMMARIZE"),
		Query: true, Rows: true, Audit: AuditQuery, Slot: true, Runner: RunPlanner, Params: true, parse: parseQuery},
	KindExplain: {Kind: KindExplain, Name: "EXPLAIN", Starts: words("EXPLAIN"),
		Rows: true, Audit: AuditQuery, Slot: true, Runner: RunPlanner, Params: true, parse: parseExplain},
	KindCall: {Kind: KindCall, Name: "CALL", Starts: words("CALL"),
		Rows: true, Audit: AuditQuery, Slot: true, Runner: RunPlanner, parse: parseCall},
	KindShow: {Kind: KindShow, Name: "SHOW", Starts: words("SHOW", "DESCRIBE", "DESC"),
		Rows: true, Audit: AuditQuery, Slot: true, Runner: RunPlanner, parse: parseShow},
	KindUse: {Kind: KindUse, Name: "USE", Starts: words("USE"),
		Audit: AuditUpdate, Slot: true, Runner: RunSession, parse: parseUse},
	KindCreateSchema: {Kind: KindCreateSchema, Name: "CREATE SCHEMA", Starts: words("CREATE SCHEMA"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseCreateSchema},
	KindDropSchema: {Kind: KindDropSchema, Name: "DROP SCHEMA", Starts: words("DROP SCHEMA"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseDropSchema},
	KindCreateTable: {Kind: KindCreateTable, Name: "CREATE TABLE", Starts: words("CREATE TABLE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, DryRun: true, parse: parseCreateTable},
	KindReplaceTable: {Kind: KindReplaceTable, Name: "CREATE OR REPLACE TABLE", Starts: words("CREATE OR REPLACE TABLE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseCreateTable},
	KindDropTable: {Kind: KindDropTable, Name: "DROP TABLE", Starts: words("DROP TABLE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseDropTable},
	KindCreateView: {Kind: KindCreateView, Name: "CREATE VIEW", Starts: words("CREATE VIEW", "CREATE OR REPLACE VIEW"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseCreateView},
	KindDropView: {Kind: KindDropView, Name: "DROP VIEW", Starts: words("DROP VIEW"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseDropView},
	KindInsert: {Kind: KindInsert, Name: "INSERT", Starts: words("INSERT"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, Params: true, DryRun: true, parse: parseInsert},
	KindUpdate: {Kind: KindUpdate, Name: "UPDATE", Starts: words("UPDATE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, Params: true, DryRun: true, parse: parseUpdate},
	KindDelete: {Kind: KindDelete, Name: "DELETE", Starts: words("DELETE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, Params: true, DryRun: true, parse: parseDelete},
	KindMerge: {Kind: KindMerge, Name: "MERGE", Starts: words("MERGE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, DryRun: true, parse: parseMerge},
	KindTruncate: {Kind: KindTruncate, Name: "TRUNCATE", Starts: words("TRUNCATE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, DryRun: true, parse: parseTruncate},
	KindAlterTable: {Kind: KindAlterTable, Name: "ALTER TABLE", Starts: words("ALTER TABLE"),
		Audit: AuditUpdate, Slot: true, Runner: RunExecutor, parse: parseAlterTable},
	KindSet: {Kind: KindSet, Name: "SET", Starts: words("SET RESULT_CACHE", "RESET RESULT_CACHE"),
		Audit: AuditUpdate, Runner: RunSession, parse: parseSet},
	refused: {Kind: refused, Name: "refused", Starts: words("COPY", "ATTACH", "DETACH", "INSTALL", "LOAD", "SET", "RESET",
		"PRAGMA", "EXPORT", "IMPORT", "CHECKPOINT", "FORCE", "VACUUM", "EXECUTE", "PREPARE", "DEALLOCATE"),
		refuse: func(toks []sqltok.Token, _ int) error {
			return fmt.Errorf("%w: %s statements are not allowed", ErrRefused, firstWord(toks))
		}},
	unsupported: {Kind: unsupported, Name: "unsupported", Starts: words("BEGIN", "COMMIT", "ROLLBACK", "START", "ABORT", "END",
		"ANALYZE", "COMMENT", "UNPIVOT", "PIVOT", "CREATE", "DROP", "ALTER"),
		refuse: func(toks []sqltok.Token, _ int) error {
			return fmt.Errorf("%w: %s statements", ErrUnsupported, kindWords(toks))
		}},
}

// kinds is the table, for the parsers: EXPLAIN's parses its statement
// by the table (an initialization cycle if they read table itself).
var kinds []Info

func init() { kinds = table[:] }

// Kinds are the statement kinds icefloe runs, in table order.
func Kinds() []*Info {
	var out []*Info
	for i := range kinds {
		if e := &kinds[i]; e.parse != nil {
			out = append(out, e)
		}
	}
	return out
}

// lookup finds the entry whose Starts match the most leading tokens, and
// how many tokens they are.
func lookup(toks []sqltok.Token) (*Info, int) {
	var best *Info
	n := 0
	for i := range kinds {
		e := &kinds[i]
		for _, start := range e.Starts {
			if len(start) > n && startsWith(toks, start) {
				best, n = e, len(start)
			}
		}
	}
	return best, n
}

func startsWith(toks []sqltok.Token, kws []string) bool {
	if len(toks) < len(kws) {
		return false
	}
	for i, kw := range kws {
		if kw == "(" {
			if !toks[i].IsOp("(") {
				return false
			}
		} else if !toks[i].Is(kw) {
			return false
		}
	}
	return true
}

// kindWords names a statement icefloe does not run: its first keyword,
// two for CREATE, DROP and ALTER (CREATE MACRO, ALTER VIEW).
func kindWords(toks []sqltok.Token) string {
	first := strings.ToUpper(toks[0].Value)
	if (first == "CREATE" || first == "DROP" || first == "ALTER") && len(toks) > 1 && toks[1].Kind == sqltok.Word {
		return first + " " + strings.ToUpper(toks[1].Value)
	}
	return first
}
