package planner

import (
	"fmt"
	"strings"
)

// What client SQL may not reach in the engine that runs it. Table
// references never reach DuckDB's catalog (resolve renames every one of
// them); this file refuses the rest: table functions, and the scalar
// functions and macros that read the session, the settings or DuckDB's
// catalog, or write outside the statement.

// refuseEscapes refuses what would let client SQL reach past its tables:
// table functions but the pure ones (read_csv, read_parquet, glob,
// duckdb_settings(), …; see tablefunc.go),
// and functions that read DuckDB's state (deniedFunction) under any
// schema.
func refuseEscapes(ast *parsed) error {
	var err error
	walk(ast.root, func(n node) bool {
		if err != nil {
			return false
		}
		if isTableRef(n) {
			switch t := str(n, "type"); t {
			case "TABLE_FUNCTION":
				err = refuseTableFunction(n)
			case "SHOW_REF":
				// SUMMARIZE <query> runs DuckDB's summary over the query,
				// whose tables resolve like any other; the other SHOW
				// forms would read DuckDB's catalog (show.go answers them).
				if str(n, "show_type") != "SUMMARY" || n["query"] == nil {
					err = fmt.Errorf("%w: %s in FROM", ErrUnsupported, "show_ref")
				}
			case "PIVOT", "COLUMN_DATA", "DELIM_GET", "BOUND_TABLE_REF":
				err = fmt.Errorf("%w: %s in FROM", ErrUnsupported, strings.ToLower(t))
			}
			return true
		}
		err = refuseFunction(n)
		return true
	})
	return err
}

// refuseFunction refuses a function call clients may not make.
func refuseFunction(n node) error {
	switch str(n, "class") {
	case "FUNCTION", "WINDOW":
	default:
		return nil
	}
	name := str(n, "function_name")
	if sch := strings.ToLower(str(n, "schema")); sch == "pg_catalog" || sch == "information_schema" {
		return fmt.Errorf("%w: function %s.%s is DuckDB's catalog, which clients cannot read", ErrRefused, str(n, "schema"), name)
	}
	if deniedFunction(name) {
		return fmt.Errorf("%w: function %s reads the engine's own state, which clients cannot see", ErrRefused, name)
	}
	return nil
}

// deniedFunctions read DuckDB's settings, session, catalog or log, or
// change state beyond the statement. (DuckDB's table functions, e.g.
// duckdb_settings(), are refused as table functions; version() only tells
// the engine's release, which GetSqlInfo's semantics name anyway.)
var deniedFunctions = map[string]bool{
	"current_setting": true, "getvariable": true, "current_query": true,
	"current_query_id": true, "current_connection_id": true, "current_transaction_id": true,
	"txid_current": true, "current_database": true, "current_catalog": true,
	"current_schema": true, "current_schemas": true, "current_role": true,
	"current_user": true, "session_user": true, "user": true, "in_search_path": true,
	"currval": true, "nextval": true, "write_log": true,
	"json_serialize_plan": true, "get_block_size": true, "col_description": true,
	"obj_description": true, "shobj_description": true, "format_type": true,
	"format_pg_type": true, "map_to_pg_oid": true,
}

// deniedFunction tells DuckDB's state-reading functions by name: the list
// above, and the PostgreSQL-compatibility macros of its pg_catalog schema
// (pg_*, has_*_privilege, inet_*).
func deniedFunction(name string) bool {
	name = strings.ToLower(name)
	return deniedFunctions[name] || strings.HasPrefix(name, "pg_") || strings.HasPrefix(name, "inet_") ||
		strings.HasPrefix(name, "has_") && strings.HasSuffix(name, "_privilege")
}

// refuseDuckDBCatalog refuses a table reference into the schemas of
// DuckDB's own catalog views. (Other names resolve in the mounted catalogs
// or not at all: never in DuckDB's catalog.)
func refuseDuckDBCatalog(cat, sch, name string) error {
	for _, s := range []string{cat, sch} {
		switch strings.ToLower(s) {
		case "information_schema", "pg_catalog":
			return fmt.Errorf("%w: %s is DuckDB's catalog, which clients cannot read; browse tables with Flight SQL's GetCatalogs, GetDbSchemas and GetTables",
				ErrRefused, strings.Trim(cat+"."+sch+"."+name, "."))
		}
	}
	return nil
}
