// Package colmeta builds the Flight SQL column metadata
// (ARROW:FLIGHT:SQL:TYPE_NAME, PRECISION, SCALE, …) that clients read for
// a column: JDBC's ResultSetMetaData and DatabaseMetaData.getColumns, ADBC's
// schemas. Query result schemas (planner) and table listings (flightsql)
// both build it here, so the two agree on every column.
package colmeta
