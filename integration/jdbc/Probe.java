// Probe replays what DBeaver does with the Arrow Flight SQL JDBC driver
// against a running icefloe, then exercises queries, updates, prepared
// statements, early close and every Iceberg type.
//
// The run script compiles the suite's programs with Checks.java (javac -cp
// flight-sql-jdbc-driver.jar -d CLASSES *.java) and runs them on JDK 17:
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar:CLASSES Probe HOST PORT
//
// It prints one line per check and ends with "N passed, M failed"; the exit
// code is non-zero when any check failed.

import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.sql.Time;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TimeZone;

public class Probe {


  static Set<String> csv(String s) {
    Set<String> out = new HashSet<>();
    for (String w : s.split(",")) {
      out.add(w.trim());
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
    String host = args[0];
    String port = args[1];
    String url = "jdbc:arrow-flight-sql://" + host + ":" + port + "/?useEncryption=false&catalog=local";
    Class.forName("org.apache.arrow.driver.jdbc.ArrowFlightJdbcDriver");
    Connection conn = DriverManager.getConnection(url, new Properties());
    run(conn);
    closeWithCatalog(conn);
    // A second connection: the catalog comes from Connection.setCatalog.
    Checks.check("setCatalog then unqualified names", () -> {
      String plain = "jdbc:arrow-flight-sql://" + host + ":" + port + "/?useEncryption=false";
      Connection c = DriverManager.getConnection(plain, new Properties());
      {
        c.setCatalog("local");
        Checks.eq(c.getCatalog(), "local", "getCatalog");
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT count(*) AS n FROM customers")) {
          Checks.expect(rs.next(), "a row");
          Checks.eq(rs.getLong(1), 2000L, "customers");
        }
        // An unknown catalog is refused per option (INVALID_VALUE in the
        // SetSessionOptions result, which driver 18.3 does not surface):
        // the session keeps the catalog it had.
        try {
          c.setCatalog("no_such_catalog");
        } catch (Exception e) {
          // a driver that reports the per-option error throws here
        }
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT count(*) AS n FROM orders")) {
          Checks.expect(rs.next(), "a row");
          Checks.eq(rs.getLong(1), 50000L, "orders after a refused catalog");
        }
      }
      closeWithCatalog(c);
    });
    Checks.check("USE sets the session's catalog and schema", () -> {
      String plain = "jdbc:arrow-flight-sql://" + host + ":" + port + "/?useEncryption=false";
      try (Connection c = DriverManager.getConnection(plain, new Properties());
          Statement st = c.createStatement()) {
        st.executeUpdate("CREATE SCHEMA IF NOT EXISTS local.JdbcUse");
        st.executeUpdate("CREATE TABLE IF NOT EXISTS local.jdbcuse.only_here (x INT)");
        st.execute("USE local.JDBCUSE");
        try (ResultSet rs = st.executeQuery("SELECT current_catalog(), current_schema()")) {
          Checks.expect(rs.next(), "a row");
          Checks.eq(rs.getString(1) + "." + rs.getString(2), "local.JdbcUse", "session after USE");
        }
        Checks.eq(Checks.column(st.executeQuery("SHOW TABLES"), "name"), List.of("only_here"), "SHOW TABLES after USE");
        st.execute("USE \"default\"");
        st.executeUpdate("DROP SCHEMA local.JdbcUse CASCADE");
      }
    });
    Checks.check("single-endpoint mode through a URL header", () -> {
      // Unknown URL parameters become call headers: the coordinator then
      // answers one endpoint and proxies the workers' streams.
      String proxied = "jdbc:arrow-flight-sql://" + host + ":" + port
          + "/?useEncryption=false&x-icefloe-single-endpoint=true";
      try (Connection c = DriverManager.getConnection(proxied, new Properties());
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT id FROM orders")) {
        long n = 0;
        long sum = 0;
        while (rs.next()) {
          n++;
          sum += rs.getLong(1);
        }
        Checks.eq(n, 50000L, "rows");
        Checks.eq(sum, 50000L * 50001L / 2, "sum of ids");
      }
    });
    Checks.exit();
  }

  // closeWithCatalog closes a connection that set a catalog. Driver 18.3
  // closes its client twice when a catalog is set and then reports the
  // second CloseSession as "Channel shutdown invoked" (apache/arrow-java#66,
  // fixed after 18.3): that one error is the driver's, anything else fails.
  static void closeWithCatalog(Connection c) throws Exception {
    try {
      c.close();
    } catch (java.sql.SQLException e) {
      if (!String.valueOf(e.getMessage()).contains("Channel shutdown invoked")) {
        throw e;
      }
    }
  }

  static void run(Connection conn) throws Exception {
    DatabaseMetaData md = conn.getMetaData();

    // DBeaver on connect: all-keys GetSqlInfo (through these getters) and
    // getTableTypes.
    Checks.check("GetSqlInfo through DatabaseMetaData", () -> {
      Checks.eq(md.getDatabaseProductName(), "icefloe", "product name");
      Checks.expect(!md.getDatabaseProductVersion().isEmpty(), "product version");
      Checks.eq(md.getIdentifierQuoteString(), "\"", "identifier quote");
      Checks.eq(md.getSearchStringEscape(), "\\", "search string escape");
      Checks.expect(!md.isReadOnly(), "not read-only");
      Checks.expect(!md.supportsTransactions(), "no transactions");
      Checks.eq(md.getDefaultTransactionIsolation(), Connection.TRANSACTION_NONE, "isolation");
      Set<String> kw = csv(md.getSQLKeywords());
      Checks.expect(kw.contains("QUALIFY") && kw.contains("PIVOT"), "DuckDB keywords: " + kw);
      Checks.expect(csv(md.getNumericFunctions()).contains("ABS"), "numeric functions");
      Checks.expect(csv(md.getStringFunctions()).contains("UPPER"), "string functions");
      Checks.expect(csv(md.getSystemFunctions()).contains("COALESCE"), "system functions");
      Checks.expect(csv(md.getTimeDateFunctions()).contains("DATE_TRUNC"), "time/date functions");
      Checks.expect(md.supportsConvert(Types.INTEGER, Types.VARCHAR), "INTEGER → VARCHAR");
      Checks.expect(md.supportsLikeEscapeClause(), "LIKE … ESCAPE");
    });
    Checks.check("getTableTypes", () -> Checks.expect(Checks.column(md.getTableTypes(), "TABLE_TYPE").contains("TABLE"), "TABLE"));
    Checks.check("getCatalogs", () -> Checks.expect(Checks.column(md.getCatalogs(), "TABLE_CAT").contains("local"), "local"));
    Checks.check("getSchemas(cat, %)", () -> {
      List<String> s = Checks.column(md.getSchemas("local", "%"), "TABLE_SCHEM");
      Checks.expect(s.contains("default"), "default in " + s);
    });
    Checks.check("getTables(cat, schema, %, null)", () -> {
      List<String> t = Checks.column(md.getTables("local", "default", "%", null), "TABLE_NAME");
      Checks.expect(t.containsAll(List.of("orders", "customers", "events")), "demo tables in " + t);
    });
    Checks.check("getTables with an escaped _ pattern", () -> {
      // DBeaver escapes _ with the search string escape.
      List<String> t = Checks.column(md.getTables("local", "default", "order\\_s", null), "TABLE_NAME");
      Checks.eq(t, List.of(), "order_s must not match orders");
    });
    Checks.check("getColumns(cat, schema, %, %)", () -> {
      Map<String, Integer> cols = new LinkedHashMap<>();
      try (ResultSet rs = md.getColumns("local", "default", "%", "%")) {
        while (rs.next()) {
          if (rs.getString("TABLE_NAME").equals("orders")) {
            cols.put(rs.getString("COLUMN_NAME"), rs.getInt("DATA_TYPE"));
          }
        }
      }
      Checks.eq(new ArrayList<>(cols.keySet()),
          List.of("id", "customer_id", "status", "amount", "ordered_at", "ordered_on"), "orders columns");
      Checks.eq(cols.get("id"), Types.BIGINT, "id type");
      Checks.eq(cols.get("amount"), Types.DECIMAL, "amount type");
    });
    Checks.check("getPrimaryKeys(cat, schema, %)", () -> Checks.eq(Checks.column(md.getPrimaryKeys("local", "default", "%"), "COLUMN_NAME"), List.of(), "no keys"));
    Checks.check("getImportedKeys(cat, schema, %)", () -> Checks.eq(Checks.column(md.getImportedKeys("local", "default", "%"), "FKCOLUMN_NAME"), List.of(), "no keys"));

    Checks.check("executeQuery of a multi-endpoint SELECT", () -> {
      try (Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT id, customer_id, status FROM orders")) {
        ResultSetMetaData rmd = rs.getMetaData();
        Checks.eq(rmd.getColumnCount(), 3, "columns");
        Checks.eq(rmd.getColumnType(1), Types.BIGINT, "id type");
        long n = 0;
        long sum = 0;
        Set<Long> seen = new HashSet<>();
        while (rs.next()) {
          n++;
          sum += rs.getLong(1);
          seen.add(rs.getLong(1));
        }
        Checks.eq(n, 50000L, "rows");
        Checks.eq(seen.size(), 50000, "distinct ids");
        Checks.eq(sum, 50000L * 50001L / 2, "sum of ids");
      }
    });

    Checks.check("executeUpdate of DDL and INSERT", () -> {
      try (Statement st = conn.createStatement()) {
        st.executeUpdate("DROP SCHEMA IF EXISTS jdbc_probe CASCADE");
        Checks.eq(st.executeUpdate("CREATE SCHEMA jdbc_probe"), 0, "create schema count");
        st.executeUpdate("CREATE TABLE jdbc_probe.t (id BIGINT NOT NULL, s VARCHAR)");
        Checks.eq(st.executeUpdate("INSERT INTO jdbc_probe.t VALUES (1, 'a'), (2, 'b'), (3, NULL)"), 3, "insert count");
        try (ResultSet rs = st.executeQuery("SELECT count(*) FROM jdbc_probe.t")) {
          rs.next();
          Checks.eq(rs.getLong(1), 3L, "rows after insert");
        }
      }
    });

    Checks.check("SHOW, DESCRIBE and information_schema as plain statements", () -> {
      try (Statement st = conn.createStatement()) {
        Checks.eq(Checks.column(st.executeQuery("SHOW CATALOGS"), "Catalog"), List.of("local"), "SHOW CATALOGS");
        Checks.expect(Checks.column(st.executeQuery("SHOW SCHEMAS"), "Schema").contains("default"), "SHOW SCHEMAS has default");
        Checks.eq(Checks.column(st.executeQuery("SHOW TABLES FROM jdbc_probe"), "name"), List.of("t"), "SHOW TABLES FROM");
        Checks.eq(Checks.column(st.executeQuery("DESCRIBE jdbc_probe.t"), "column_type"), List.of("BIGINT", "VARCHAR"), "DESCRIBE");
        Checks.eq(Checks.column(st.executeQuery("DESC jdbc_probe.T"), "null"), List.of("NO", "YES"), "DESC");
        Checks.eq(Checks.column(st.executeQuery("SHOW COLUMNS FROM jdbc_probe.t"), "Column"), List.of("id", "s"), "SHOW COLUMNS");
        String ddl = Checks.column(st.executeQuery("SHOW CREATE TABLE jdbc_probe.t"), "Create Table").get(0);
        Checks.expect(ddl.contains("\"id\" BIGINT NOT NULL"), "SHOW CREATE TABLE: " + ddl);
        Checks.eq(Checks.column(st.executeQuery("SELECT column_name FROM information_schema.columns "
            + "WHERE table_schema = 'jdbc_probe' AND table_name = 't' ORDER BY ordinal_position"), "column_name"),
            List.of("id", "s"), "information_schema.columns");
        Checks.eq(Checks.column(st.executeQuery("SELECT t.table_name FROM information_schema.tables t "
            + "JOIN information_schema.schemata s ON s.schema_name = t.table_schema WHERE s.schema_name = 'jdbc_probe'"), "table_name"),
            List.of("t"), "information_schema join");
      }
    });

    Checks.check("case-insensitive names, through statements and DatabaseMetaData", () -> {
      try (Statement st = conn.createStatement()) {
        st.executeUpdate("CREATE TABLE jdbc_probe.MixedCase (Id BIGINT)");
        st.executeUpdate("INSERT INTO JDBC_PROBE.mixedcase VALUES (5)");
        Checks.eq(Checks.column(st.executeQuery("SELECT id FROM jdbc_probe.MIXEDCASE"), "Id"), List.of("5"), "unquoted, any case");
        Checks.eq(Checks.column(md.getTables("local", "jdbc_probe", "MixedCase", null), "TABLE_NAME"), List.of("MixedCase"), "getTables keeps the case");
        try (ResultSet rs = st.executeQuery("SELECT * FROM jdbc_probe.\"mixedcase\"")) {
          throw new AssertionError("a quoted name matched another case");
        } catch (java.sql.SQLException e) {
          Checks.expect(e.getMessage().contains("table mixedcase does not exist in schema local.jdbc_probe; did you mean MixedCase?"), e.getMessage());
        }
        try (ResultSet rs = st.executeQuery("SELECT * FROM jdbc_probe.tt")) {
          throw new AssertionError("a missing table was found");
        } catch (java.sql.SQLException e) {
          String m = e.getMessage();
          Checks.expect(m.contains("did you mean t?") && !m.contains("planner:") && !m.contains("__icefloe"), m);
        }
      }
    });

    Checks.check("PreparedStatement with parameters", () -> {
      long want;
      try (Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM orders WHERE customer_id = 42 AND status = 'shipped'")) {
        rs.next();
        want = rs.getLong(1);
      }
      try (PreparedStatement ps = conn.prepareStatement("SELECT count(*) AS n FROM orders WHERE customer_id = ? AND status = ?")) {
        Checks.eq(ps.getParameterMetaData().getParameterCount(), 2, "parameter count");
        ps.setLong(1, 42);
        ps.setString(2, "shipped");
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          Checks.eq(rs.getLong(1), want, "count with parameters");
        }
        ps.setLong(1, 43);
        ps.setString(2, "it's");
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          Checks.eq(rs.getLong(1), 0L, "no status it's");
        }
      }
      try (PreparedStatement ps = conn.prepareStatement("INSERT INTO jdbc_probe.t VALUES (?, ?)")) {
        ps.setLong(1, 10);
        ps.setString(2, "ten");
        Checks.eq(ps.executeUpdate(), 1, "insert with parameters");
      }
      try (Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT s FROM jdbc_probe.t WHERE id = 10")) {
        Checks.expect(rs.next(), "inserted row");
        Checks.eq(rs.getString(1), "ten", "inserted value");
      }
    });

    Checks.check("setMaxRows(10) with early close", () -> {
      try (Statement st = conn.createStatement()) {
        st.setMaxRows(10);
        int n = 0;
        try (ResultSet rs = st.executeQuery("SELECT * FROM orders")) {
          while (rs.next()) {
            n++;
          }
        }
        Checks.eq(n, 10, "rows with setMaxRows(10)");
      }
      // And a result set closed after one row of a large result.
      try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM orders, customers LIMIT 200000")) {
        Checks.expect(rs.next(), "first row");
      }
      try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
        Checks.expect(rs.next(), "the connection still works");
      }
    });

    allTypes(conn, md);
  }

  // One column per Iceberg type: what getColumns reports and what the
  // ResultSet getters return. Kept in step with docs/types.md.
  static final String[][] TYPES = {
    // column, DDL type, JDBC type, TYPE_NAME, COLUMN_SIZE, DECIMAL_DIGITS, literal
    {"c_boolean", "BOOLEAN", "BOOLEAN", "BOOLEAN", "", "", "true"},
    {"c_int", "INTEGER", "INTEGER", "INTEGER", "10", "0", "-7"},
    {"c_long", "BIGINT", "BIGINT", "BIGINT", "19", "0", "9007199254740993"},
    {"c_float", "FLOAT", "FLOAT", "FLOAT", "", "", "1.5"},
    {"c_double", "DOUBLE", "DOUBLE", "DOUBLE", "", "", "2.25"},
    {"c_decimal", "DECIMAL(12,3)", "DECIMAL", "DECIMAL(12,3)", "12", "3", "123456789.012"},
    {"c_date", "DATE", "DATE", "DATE", "10", "0", "DATE '2024-02-29'"},
    {"c_time", "TIME", "TIME", "TIME", "15", "6", "TIME '13:14:15.123456'"},
    {"c_timestamp", "TIMESTAMP", "TIMESTAMP", "TIMESTAMP", "26", "6", "TIMESTAMP '2024-03-01 10:11:12.345678'"},
    {"c_timestamptz", "TIMESTAMPTZ", "TIMESTAMP_WITH_TIMEZONE", "TIMESTAMP WITH TIME ZONE", "26", "6", "TIMESTAMPTZ '2024-03-01 10:11:12.345678+00'"},
    {"c_string", "VARCHAR", "VARCHAR", "VARCHAR", "65536", "", "'héllo'"},
    {"c_uuid", "UUID", "VARCHAR", "UUID", "36", "0", "'0193c1b4-7e25-7c4f-9a52-000000000001'"},
    {"c_binary", "BLOB", "VARBINARY", "BLOB", "65536", "", "'\\x00\\xFFab'::BLOB"},
    {"c_list", "INTEGER[]", "ARRAY", "INTEGER[]", "", "", "[1, 2, NULL]"},
    {"c_map", "MAP(VARCHAR, BIGINT)", "JAVA_OBJECT", "MAP(VARCHAR, BIGINT)", "", "", "MAP {'a': 1, 'b': 2}"},
    {"c_struct", "STRUCT(a INTEGER, b VARCHAR)", "JAVA_OBJECT", "STRUCT(a INTEGER, b VARCHAR)", "", "", "{'a': 5, 'b': 'x'}"},
  };

  static int jdbcType(String name) throws Exception {
    return Types.class.getField(name).getInt(null);
  }

  static void allTypes(Connection conn, DatabaseMetaData md) throws Exception {
    Checks.check("CREATE TABLE with every Iceberg type and INSERT a row", () -> {
      StringBuilder ddl = new StringBuilder("CREATE TABLE jdbc_probe.all_types (");
      StringBuilder vals = new StringBuilder("INSERT INTO jdbc_probe.all_types VALUES (");
      for (int i = 0; i < TYPES.length; i++) {
        ddl.append(i > 0 ? ", " : "").append(TYPES[i][0]).append(' ').append(TYPES[i][1]);
        vals.append(i > 0 ? ", " : "").append(TYPES[i][6]);
      }
      try (Statement st = conn.createStatement()) {
        st.executeUpdate(ddl.append(")").toString());
        Checks.eq(st.executeUpdate(vals.append(")").toString()), 1, "insert");
      }
    });
    Checks.check("getColumns types, precision and scale for every Iceberg type", () -> {
      Map<String, String[]> got = new LinkedHashMap<>();
      try (ResultSet rs = md.getColumns("local", "jdbc_probe", "all\\_types", "%")) {
        while (rs.next()) {
          String size = rs.getObject("COLUMN_SIZE") == null ? "" : String.valueOf(rs.getInt("COLUMN_SIZE"));
          String digits = rs.getObject("DECIMAL_DIGITS") == null ? "" : String.valueOf(rs.getInt("DECIMAL_DIGITS"));
          got.put(rs.getString("COLUMN_NAME"), new String[] {
              String.valueOf(rs.getInt("DATA_TYPE")), rs.getString("TYPE_NAME"), size, digits});
        }
      }
      List<String> problems = new ArrayList<>();
      for (String[] t : TYPES) {
        String[] g = got.get(t[0]);
        String[] want = {String.valueOf(jdbcType(t[2])), t[3], t[4], t[5]};
        if (g == null || !Arrays.equals(g, want)) {
          problems.add(t[0] + ": got " + (g == null ? "nothing" : Arrays.toString(g)) + ", want " + Arrays.toString(want));
        }
      }
      Checks.expect(problems.isEmpty(), String.join("; ", problems));
    });
    Checks.check("ResultSet getters for every Iceberg type", () -> {
      try (Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT * FROM jdbc_probe.all_types")) {
        Checks.expect(rs.next(), "one row");
        Checks.eq(rs.getBoolean("c_boolean"), true, "boolean");
        Checks.eq(rs.getInt("c_int"), -7, "int");
        Checks.eq(rs.getLong("c_long"), 9007199254740993L, "long");
        Checks.eq(rs.getFloat("c_float"), 1.5f, "float");
        Checks.eq(rs.getDouble("c_double"), 2.25, "double");
        Checks.eq(rs.getBigDecimal("c_decimal"), new BigDecimal("123456789.012"), "decimal");
        Checks.eq(rs.getDate("c_date"), Date.valueOf("2024-02-29"), "date");
        Checks.eq(rs.getTime("c_time").getTime(), (13 * 3600 + 14 * 60 + 15) * 1000L + 123, "time (ms)");
        Checks.eq(rs.getTimestamp("c_timestamp"), Timestamp.valueOf("2024-03-01 10:11:12.345678"), "timestamp");
        Checks.eq(rs.getTimestamp("c_timestamptz").toInstant().toString(), "2024-03-01T10:11:12.345678Z", "timestamptz");
        // The getters docs/types.md gives, which read the same in any JVM zone.
        Checks.eq(rs.getObject("c_date", LocalDate.class), LocalDate.of(2024, 2, 29), "date as LocalDate");
        Checks.eq(rs.getObject("c_timestamp", LocalDateTime.class), LocalDateTime.parse("2024-03-01T10:11:12.345678"), "timestamp as LocalDateTime");
        Checks.eq(rs.getObject("c_timestamptz", Instant.class), Instant.parse("2024-03-01T10:11:12.345678Z"), "timestamptz as Instant");
        Checks.eq(rs.getObject("c_timestamptz", OffsetDateTime.class).toInstant(), Instant.parse("2024-03-01T10:11:12.345678Z"), "timestamptz as OffsetDateTime");
        Checks.eq(rs.getString("c_string"), "héllo", "string");
        Checks.eq(rs.getString("c_uuid"), "0193c1b4-7e25-7c4f-9a52-000000000001", "uuid");
        Checks.eq(rs.getMetaData().getColumnType(rs.findColumn("c_uuid")), Types.VARCHAR, "uuid result type");
        Checks.eq(Arrays.toString(rs.getBytes("c_binary")), Arrays.toString(new byte[] {0, -1, 'a', 'b'}), "binary");
        Array arr = rs.getArray("c_list");
        Checks.eq(Arrays.toString((Object[]) arr.getArray()), "[1, 2, null]", "list");
        Object m = rs.getObject("c_map");
        Checks.expect(m instanceof Map, "map is a java.util.Map: " + m.getClass());
        Checks.eq(((Map<?, ?>) m).size(), 2, "map entries");
        Checks.eq(String.valueOf(m), "{\"a\":1,\"b\":2}", "map");
        Object s = rs.getObject("c_struct");
        Checks.expect(s instanceof Map, "struct is a java.util.Map: " + s.getClass());
        Checks.eq(String.valueOf(s), "{\"a\":5,\"b\":\"x\"}", "struct");
        Checks.expect(!rs.next(), "only one row");
      }
    });
    // fixed[L]: SQL cannot create it; the run script made fixture.fixed_t.
    Checks.check("fixed[4]: INSERT, getColumns and getBytes", () -> {
      try (Statement st = conn.createStatement()) {
        Checks.eq(st.executeUpdate("INSERT INTO fixture.fixed_t VALUES (1, '\\x01\\x02\\x03\\x04'::BLOB)"), 1, "insert");
        boolean refused = false;
        try {
          st.executeUpdate("INSERT INTO fixture.fixed_t VALUES (2, 'abc'::BLOB)");
        } catch (Exception e) {
          refused = true;
        }
        Checks.expect(refused, "a value of the wrong length is refused");
      }
      try (ResultSet rs = md.getColumns("local", "fixture", "fixed\\_t", "%")) {
        Checks.expect(rs.next() && rs.next(), "id and c_fixed columns");
        Checks.eq(rs.getString("COLUMN_NAME"), "c_fixed", "second column");
        Checks.eq(rs.getInt("DATA_TYPE"), Types.BINARY, "DATA_TYPE");
        Checks.eq(rs.getString("TYPE_NAME"), "BLOB", "TYPE_NAME");
        Checks.eq(rs.getInt("COLUMN_SIZE"), 4, "COLUMN_SIZE");
      }
      try (Statement st = conn.createStatement();
          ResultSet rs = st.executeQuery("SELECT c_fixed FROM fixture.fixed_t")) {
        Checks.expect(rs.next(), "a row");
        Checks.eq(Arrays.toString(rs.getBytes(1)), "[1, 2, 3, 4]", "fixed bytes");
        Checks.eq(rs.getMetaData().getColumnType(1), Types.VARBINARY, "result column type (DuckDB BLOB)");
      }
    });
  }
}
