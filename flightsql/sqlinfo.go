package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
)

// bits builds an int32 bitmask from enum ordinals.
func bits[T ~int32](ords ...T) int32 {
	var m int32
	for _, o := range ords {
		m |= 1 << o
	}
	return m
}

// sqlInfo answers every SqlInfo key of the Flight SQL enum. Each value uses
// the union arm the protocol and the JDBC driver expect: strings, bools,
// int32 bitmasks and ordinals, int64 maximum lengths (and
// SQL_DEFAULT_TRANSACTION_ISOLATION, which the JDBC driver reads as a
// Long), string lists for keywords and functions, and a map for
// SQL_SUPPORTS_CONVERT. SQL semantics are DuckDB's, icefloe's engine.
func sqlInfo(o Options) map[flightsql.SqlInfo]any {
	const none int32 = 0
	return map[flightsql.SqlInfo]any{
		// Server.
		flightsql.SqlInfoFlightSqlServerName:                        ServerName,
		flightsql.SqlInfoFlightSqlServerVersion:                     o.Version,
		flightsql.SqlInfoFlightSqlServerArrowVersion:                arrow.PkgVersion,
		flightsql.SqlInfoFlightSqlServerReadOnly:                    false,
		flightsql.SqlInfoFlightSqlServerSql:                         true,
		flightsql.SqlInfoFlightSqlServerSubstrait:                   false,
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion:         "",
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion:         "",
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:                      false,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               canIngest(o),
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		flightsql.SqlInfoFlightSqlServerStatementTimeout:            int32(o.PreparedTTL.Milliseconds()),
		flightsql.SqlInfoFlightSqlServerTransactionTimeout:          none,

		// SQL syntax.
		flightsql.SqlInfoDDLCatalog:                             false, // catalogs are mounted by configuration
		flightsql.SqlInfoDDLSchema:                              true,
		flightsql.SqlInfoDDLTable:                               true,
		flightsql.SqlInfoIdentifierCase:                         int32(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierQuoteChar:                    `"`,
		flightsql.SqlInfoQuotedIdentifierCase:                   int32(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoAllTablesAreASelectable:                true,
		flightsql.SqlInfoNullOrdering:                           int32(flightsql.SqlNullOrderingSortAtEnd),
		flightsql.SqlInfoKeywords:                               keywords,
		flightsql.SqlInfoNumericFunctions:                       numericFunctions,
		flightsql.SqlInfoStringFunctions:                        stringFunctions,
		flightsql.SqlInfoSystemFunctions:                        systemFunctions,
		flightsql.SqlInfoDateTimeFunctions:                      datetimeFunctions,
		flightsql.SqlInfoSearchStringEscape:                     `\`,
		flightsql.SqlInfoExtraNameChars:                         "",
		flightsql.SqlInfoSupportsColumnAliasing:                 true,
		flightsql.SqlInfoNullPlusNullIsNull:                     true,
		flightsql.SqlInfoSupportsConvert:                        supportsConvert(),
		flightsql.SqlInfoSupportsTableCorrelationNames:          true,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames: false,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:           true,
		flightsql.SqlInfoSupportsOrderByUnrelated:               true,
		flightsql.SqlInfoSupportedGroupBy: bits(pb.SqlSupportedGroupBy_SQL_GROUP_BY_UNRELATED,
			pb.SqlSupportedGroupBy_SQL_GROUP_BY_BEYOND_SELECT),
		flightsql.SqlInfoSupportsLikeEscapeClause:   true,
		flightsql.SqlInfoSupportsNonNullableColumns: true,
		flightsql.SqlInfoSupportedGrammar: bits(pb.SupportedSqlGrammar_SQL_MINIMUM_GRAMMAR,
			pb.SupportedSqlGrammar_SQL_CORE_GRAMMAR),
		flightsql.SqlInfoANSI92SupportedLevel: bits(pb.SupportedAnsi92SqlGrammarLevel_ANSI92_ENTRY_SQL,
			pb.SupportedAnsi92SqlGrammarLevel_ANSI92_INTERMEDIATE_SQL),
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility: false,
		flightsql.SqlInfoOuterJoinsSupportLevel:               int32(pb.SqlOuterJoinsSupportLevel_SQL_FULL_OUTER_JOINS),
		flightsql.SqlInfoSchemaTerm:                           "schema",
		flightsql.SqlInfoProcedureTerm:                        "procedure",
		flightsql.SqlInfoCatalogTerm:                          "catalog",
		flightsql.SqlInfoCatalogAtStart:                       true,
		flightsql.SqlInfoSchemasSupportedActions:              none,
		flightsql.SqlInfoCatalogsSupportedActions:             none,
		flightsql.SqlInfoSupportedPositionedCommands:          none,
		flightsql.SqlInfoSelectForUpdateSupported:             false,
		flightsql.SqlInfoStoredProceduresSupported:            false,
		flightsql.SqlInfoSupportedSubqueries: bits(pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_COMPARISONS,
			pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_EXISTS, pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_INS,
			pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_QUANTIFIEDS),
		flightsql.SqlInfoCorrelatedSubqueriesSupported: true,
		flightsql.SqlInfoSupportedUnions:               bits(pb.SqlSupportedUnions_SQL_UNION, pb.SqlSupportedUnions_SQL_UNION_ALL),

		// Limits: 0 is "no limit or unknown".
		flightsql.SqlInfoMaxBinaryLiteralLen:     int64(0),
		flightsql.SqlInfoMaxCharLiteralLen:       int64(0),
		flightsql.SqlInfoMaxColumnNameLen:        int64(0),
		flightsql.SqlInfoMaxColumnsInGroupBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInIndex:       int64(0),
		flightsql.SqlInfoMaxColumnsInOrderBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInSelect:      int64(0),
		flightsql.SqlInfoMaxColumnsInTable:       int64(0),
		flightsql.SqlInfoMaxConnections:          int64(0),
		flightsql.SqlInfoMaxCursorNameLen:        int64(0),
		flightsql.SqlInfoMaxIndexLen:             int64(0),
		flightsql.SqlInfoDBSchemaNameLen:         int64(0),
		flightsql.SqlInfoMaxProcedureNameLen:     int64(0),
		flightsql.SqlInfoMaxCatalogNameLen:       int64(0),
		flightsql.SqlInfoMaxRowSize:              int64(0),
		flightsql.SqlInfoMaxRowSizeIncludesBlobs: false,
		flightsql.SqlInfoMaxStatementLen:         int64(0),
		flightsql.SqlInfoMaxStatements:           int64(0),
		flightsql.SqlInfoMaxTableNameLen:         int64(0),
		flightsql.SqlInfoMaxTablesInSelect:       int64(0),
		flightsql.SqlInfoMaxUsernameLen:          int64(0),

		// Transactions: none; every statement commits on its own.
		flightsql.SqlInfoDefaultTransactionIsolation: int64(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_NONE),
		flightsql.SqlInfoTransactionsSupported:       false,
		flightsql.SqlInfoSupportedTransactionsIsolationlevels: bits(
			pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_NONE),
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit: false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:  false,

		// Result sets: forward-only, read-only.
		flightsql.SqlInfoSupportedResultSetTypes: bits(pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified: bits(
			pb.SqlSupportedResultSetConcurrency_SQL_RESULT_SET_CONCURRENCY_READ_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly: bits(
			pb.SqlSupportedResultSetConcurrency_SQL_RESULT_SET_CONCURRENCY_READ_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive:   none,
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive: none,
		flightsql.SqlInfoBatchUpdatesSupported:                               false,
		flightsql.SqlInfoSavePointsSupported:                                 false,
		flightsql.SqlInfoNamedParametersSupported:                            false,
		flightsql.SqlInfoLocatorsUpdateCopy:                                  false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported:             false,
	}
}

// canIngest tells whether the backend runs bulk ingest (ingest.go).
func canIngest(o Options) bool { return o.Capabilities.Ingest != nil }

// supportsConvert lists the CASTs DuckDB performs between the JDBC type
// groups: numbers among themselves and to text, text to everything it can
// be parsed as, dates and times among themselves and to text, binary to
// binary.
func supportsConvert() map[int32][]int32 {
	c := func(vs ...pb.SqlSupportsConvert) []int32 {
		out := make([]int32, len(vs))
		for i, v := range vs {
			out[i] = int32(v)
		}
		return out
	}
	numeric := []pb.SqlSupportsConvert{
		pb.SqlSupportsConvert_SQL_CONVERT_BIGINT, pb.SqlSupportsConvert_SQL_CONVERT_BIT,
		pb.SqlSupportsConvert_SQL_CONVERT_DECIMAL, pb.SqlSupportsConvert_SQL_CONVERT_FLOAT,
		pb.SqlSupportsConvert_SQL_CONVERT_INTEGER, pb.SqlSupportsConvert_SQL_CONVERT_NUMERIC,
		pb.SqlSupportsConvert_SQL_CONVERT_REAL, pb.SqlSupportsConvert_SQL_CONVERT_SMALLINT,
		pb.SqlSupportsConvert_SQL_CONVERT_TINYINT,
	}
	text := []pb.SqlSupportsConvert{
		pb.SqlSupportsConvert_SQL_CONVERT_CHAR, pb.SqlSupportsConvert_SQL_CONVERT_VARCHAR,
		pb.SqlSupportsConvert_SQL_CONVERT_LONGVARCHAR,
	}
	binary := []pb.SqlSupportsConvert{
		pb.SqlSupportsConvert_SQL_CONVERT_BINARY, pb.SqlSupportsConvert_SQL_CONVERT_VARBINARY,
		pb.SqlSupportsConvert_SQL_CONVERT_LONGVARBINARY,
	}
	date := pb.SqlSupportsConvert_SQL_CONVERT_DATE
	tm := pb.SqlSupportsConvert_SQL_CONVERT_TIME
	ts := pb.SqlSupportsConvert_SQL_CONVERT_TIMESTAMP
	intervals := []pb.SqlSupportsConvert{
		pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_DAY_TIME, pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_YEAR_MONTH,
	}

	m := map[int32][]int32{}
	cat := func(groups ...[]pb.SqlSupportsConvert) []pb.SqlSupportsConvert {
		var out []pb.SqlSupportsConvert
		for _, g := range groups {
			out = append(out, g...)
		}
		return out
	}
	for _, n := range numeric {
		m[int32(n)] = c(cat(numeric, text)...)
	}
	for _, t := range text {
		m[int32(t)] = c(cat(numeric, text, binary, []pb.SqlSupportsConvert{date, tm, ts}, intervals)...)
	}
	for _, b := range binary {
		m[int32(b)] = c(cat(binary, text)...)
	}
	m[int32(date)] = c(cat([]pb.SqlSupportsConvert{date, ts}, text)...)
	m[int32(tm)] = c(cat([]pb.SqlSupportsConvert{tm}, text)...)
	m[int32(ts)] = c(cat([]pb.SqlSupportsConvert{date, tm, ts}, text)...)
	for _, iv := range intervals {
		m[int32(iv)] = c(cat(intervals, text)...)
	}
	return m
}

// keywords are DuckDB's reserved keywords (duckdb_keywords() of category
// 'reserved'); the function lists name DuckDB functions of each JDBC
// group. TestSqlInfoListsAreDuckDBs checks both against the engine.
var (
	keywords = []string{
		"ALL", "ANALYSE", "ANALYZE", "AND", "ANY", "ARRAY", "AS", "ASC", "ASYMMETRIC", "BOTH",
		"CASE", "CAST", "CHECK", "COLLATE", "COLUMN", "CONSTRAINT", "CREATE", "DEFAULT",
		"DEFERRABLE", "DESC", "DESCRIBE", "DISTINCT", "DO", "ELSE", "END", "EXCEPT", "FALSE",
		"FETCH", "FOR", "FOREIGN", "FROM", "GROUP", "HAVING", "IN", "INITIALLY", "INTERSECT",
		"INTO", "LAMBDA", "LATERAL", "LEADING", "LIMIT", "NOT", "NULL", "OFFSET", "ON", "ONLY",
		"OR", "ORDER", "PIVOT", "PIVOT_LONGER", "PIVOT_WIDER", "PLACING", "PRIMARY", "QUALIFY",
		"REFERENCES", "RETURNING", "SELECT", "SHOW", "SOME", "SUMMARIZE", "SYMMETRIC", "TABLE",
		"THEN", "TO", "TRAILING", "TRUE", "UNION", "UNIQUE", "UNPIVOT", "USING", "VARIADIC",
		"WHEN", "WHERE", "WINDOW", "WITH",
	}

	// Function lists name the DuckDB functions of each JDBC group.
	numericFunctions = []string{
		"ABS", "ACOS", "ASIN", "ATAN", "ATAN2", "BIT_COUNT", "CBRT", "CEIL", "CEILING", "COS",
		"COT", "DEGREES", "EVEN", "EXP", "FACTORIAL", "FLOOR", "GAMMA", "GCD", "GREATEST",
		"ISFINITE", "ISINF", "ISNAN", "LCM", "LEAST", "LGAMMA", "LN", "LOG", "LOG10", "LOG2",
		"MOD", "NEXTAFTER", "PI", "POW", "POWER", "RADIANS", "RANDOM", "ROUND", "SIGN",
		"SIGNBIT", "SIN", "SQRT", "TAN", "TRUNC", "XOR",
	}
	stringFunctions = []string{
		"ASCII", "BAR", "BASE64", "CHR", "CONCAT", "CONCAT_WS", "CONTAINS", "ENDS_WITH",
		"FORMAT", "FROM_BASE64", "HASH", "INSTR", "JARO_SIMILARITY", "LCASE", "LEFT", "LENGTH",
		"LEVENSHTEIN", "LIKE_ESCAPE", "LOWER", "LPAD", "LTRIM", "MD5", "POSITION", "PRINTF",
		"REGEXP_EXTRACT", "REGEXP_MATCHES", "REGEXP_REPLACE", "REPEAT", "REPLACE", "REVERSE",
		"RIGHT", "RPAD", "RTRIM", "SHA256", "SPLIT_PART", "STARTS_WITH", "STRING_SPLIT",
		"STRIP_ACCENTS", "STRLEN", "STRPOS", "SUBSTR", "SUBSTRING", "TO_BASE64", "TRANSLATE",
		"TRIM", "UCASE", "UNICODE", "UPPER",
	}
	// CURRENT_CATALOG/CURRENT_SCHEMA are left out: inside DuckDB they name
	// the engine's own database, not the session's catalog and schema.
	systemFunctions = []string{
		"COALESCE", "CURRENT_SETTING", "CURRENT_USER", "GEN_RANDOM_UUID", "IFNULL", "NULLIF",
		"TYPEOF", "USER", "UUID", "VERSION",
	}
	datetimeFunctions = []string{
		"AGE", "CENTURY", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "DATE_ADD",
		"DATE_DIFF", "DATE_PART", "DATE_SUB", "DATE_TRUNC", "DATEDIFF", "DATEPART", "DATESUB",
		"DATETRUNC", "DAY", "DAYNAME", "DAYOFMONTH", "DAYOFWEEK", "DAYOFYEAR", "EPOCH",
		"EPOCH_MS", "EPOCH_NS", "EPOCH_US", "ERA", "EXTRACT", "HOUR", "ISODOW", "ISOYEAR",
		"LAST_DAY", "MAKE_DATE", "MAKE_TIME", "MAKE_TIMESTAMP", "MICROSECOND", "MILLENNIUM",
		"MILLISECOND", "MINUTE", "MONTH", "MONTHNAME", "NOW", "QUARTER", "SECOND", "STRFTIME",
		"STRPTIME", "TIME_BUCKET", "TIMEZONE", "TO_TIMESTAMP", "TODAY", "WEEK", "WEEKDAY",
		"WEEKOFYEAR", "YEAR", "YEARWEEK",
	}
)
