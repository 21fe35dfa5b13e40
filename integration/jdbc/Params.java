// Params binds every parameter type the planner infers through the Arrow
// Flight SQL JDBC driver and checks that the values round-trip exactly:
// INSERT … VALUES, WHERE, UPDATE SET, DELETE, CAST, IN, BETWEEN, LIKE,
// NULLs, ResultSetMetaData precision and scale, and executeBatch of many
// rows in one commit. The run script starts it in a UTC JVM and again in
// one whose default zone is America/Los_Angeles (-Duser.timezone=…).
//
// The run script compiles the suite's programs with Checks.java (javac -cp
// flight-sql-jdbc-driver.jar -d CLASSES *.java) and runs them on JDK 17:
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar:CLASSES Params HOST PORT
//
// It prints one line per check and ends with "N passed, M failed"; the
// exit code is non-zero when any check failed.

import java.math.BigDecimal;
import java.sql.Connection;
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
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.Arrays;
import java.util.Calendar;
import java.util.Properties;
import java.util.TimeZone;

public class Params {

  interface Setter {
    void set(PreparedStatement ps, int i) throws Exception;
  }

  interface Getter {
    Object get(ResultSet rs) throws Exception;
  }

  /** One column type: how a value binds, its text in DuckDB, how it reads back. */
  record Type(String col, String ddl, int sqlType, Setter set, String text, Getter get, Object back) {}

  static final Calendar UTC = Calendar.getInstance(TimeZone.getTimeZone("UTC"));

  // Timestamps carry milliseconds through the driver (it sends a
  // Timestamp's epoch milliseconds), so the sub-second values are .5 and
  // .123.
  static final Timestamp WALL = Timestamp.valueOf("2024-02-29 23:59:58.5");
  static final Timestamp INSTANT = Timestamp.from(Instant.parse("2024-01-22T12:00:00.123Z"));
  static final Time TIME = new Time(Time.valueOf("13:14:15").getTime() + 123);
  static final byte[] BYTES = {0, -1, 'a', 'b'};

  static final Type[] TYPES = {
    new Type("c_int", "INTEGER", Types.INTEGER, (p, i) -> p.setInt(i, -7), "-7", r -> r.getInt(1), -7),
    new Type("c_long", "BIGINT", Types.BIGINT, (p, i) -> p.setLong(i, 9007199254740993L), "9007199254740993",
        r -> r.getLong(1), 9007199254740993L),
    new Type("c_bool", "BOOLEAN", Types.BOOLEAN, (p, i) -> p.setBoolean(i, true), "true", r -> r.getBoolean(1), true),
    new Type("c_float", "FLOAT", Types.FLOAT, (p, i) -> p.setFloat(i, 1.5f), "1.5", r -> r.getFloat(1), 1.5f),
    new Type("c_double", "DOUBLE", Types.DOUBLE, (p, i) -> p.setDouble(i, 2.25), "2.25", r -> r.getDouble(1), 2.25),
    new Type("c_dec", "DECIMAL(12,2)", Types.DECIMAL, (p, i) -> p.setBigDecimal(i, new BigDecimal("1234567890.12")),
        "1234567890.12", r -> r.getBigDecimal(1), new BigDecimal("1234567890.12")),
    new Type("c_date", "DATE", Types.DATE, (p, i) -> p.setDate(i, Date.valueOf("2024-02-29")), "2024-02-29",
        r -> r.getDate(1), Date.valueOf("2024-02-29")),
    // Driver 18.3 reads a TIME as a java.sql.Time of that time of day in
    // UTC, whatever the JVM's zone.
    new Type("c_time", "TIME", Types.TIME, (p, i) -> p.setTime(i, TIME), "13:14:15.123",
        r -> LocalTime.ofNanoOfDay(r.getTime(1).getTime() * 1_000_000L), LocalTime.of(13, 14, 15, 123_000_000)),
    // TIMESTAMP is a wall-clock time: the JVM's zone does not move it.
    // (Driver 18.3's getTimestamp shifts it by the JVM's offset, with a
    // UTC calendar too; a LocalDateTime reads it as it is: see Recipes.)
    new Type("c_ts", "TIMESTAMP", Types.TIMESTAMP, (p, i) -> p.setTimestamp(i, WALL), "2024-02-29 23:59:58.5",
        r -> r.getObject(1, LocalDateTime.class), WALL.toLocalDateTime()),
    // TIMESTAMPTZ bound with a UTC calendar is the exact instant in any
    // JVM, and reads back as an Instant.
    new Type("c_tz", "TIMESTAMPTZ", Types.TIMESTAMP_WITH_TIMEZONE, (p, i) -> p.setTimestamp(i, INSTANT, UTC),
        "2024-01-22 12:00:00.123+00", r -> r.getObject(1, Instant.class), INSTANT.toInstant()),
    new Type("c_str", "VARCHAR", Types.VARCHAR, (p, i) -> p.setString(i, "it's; -- é"), "it's; -- é",
        r -> r.getString(1), "it's; -- é"),
    new Type("c_uuid", "UUID", Types.VARCHAR, (p, i) -> p.setString(i, "0193c1b4-7e25-7c4f-9a52-000000000001"),
        "0193c1b4-7e25-7c4f-9a52-000000000001", r -> r.getString(1), "0193c1b4-7e25-7c4f-9a52-000000000001"),
    new Type("c_bin", "BLOB", Types.VARBINARY, (p, i) -> p.setBytes(i, BYTES), "\\x00\\xFFab", r -> r.getBytes(1), BYTES),
    // Nested types bind as DuckDB's literal text.
    new Type("c_list", "INTEGER[]", Types.VARCHAR, (p, i) -> p.setString(i, "[1, 2, NULL]"), "[1, 2, NULL]",
        r -> r.getString(1), "[1,2,null]"),
    new Type("c_map", "MAP(VARCHAR, BIGINT)", Types.VARCHAR, (p, i) -> p.setString(i, "{a=1, b=2}"), "{a=1, b=2}",
        r -> String.valueOf(r.getObject(1)), "{\"a\":1,\"b\":2}"),
    new Type("c_struct", "STRUCT(a INTEGER, b VARCHAR)", Types.VARCHAR, (p, i) -> p.setString(i, "{'a': 5, 'b': 'x, y'}"),
        "{'a': 5, 'b': 'x, y'}", r -> String.valueOf(r.getObject(1)), "{\"a\":5,\"b\":\"x, y\"}"),
  };

  public static void main(String[] args) throws Exception {
    String url = "jdbc:arrow-flight-sql://" + args[0] + ":" + args[1] + "/?useEncryption=false";
    Class.forName("org.apache.arrow.driver.jdbc.ArrowFlightJdbcDriver");
    String zone = TimeZone.getDefault().getID();
    System.out.println("JVM zone " + zone);
    String schema = "jdbc_params_" + (zone.equals("UTC") ? "utc" : "la");
    Connection conn = DriverManager.getConnection(url, new Properties());
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      st.executeUpdate("CREATE SCHEMA " + schema);
    }
    for (Type t : TYPES) {
      Checks.check(t.col + " round-trips (" + zone + ")", () -> roundTrip(conn, schema, t));
    }
    for (Type t : FIXTURE_TYPES) {
      Checks.check(t.ddl + " (" + t.col + ", made by the fixture) round-trips (" + zone + ")", () -> fixture(conn, t));
    }
    Checks.check("TIMESTAMPTZ bound without a calendar is the JVM's wall-clock time (" + zone + ")", () -> zoned(conn, schema));
    Checks.check("parameters in CAST, IN, BETWEEN, LIKE and WHERE on the demo orders (" + zone + ")", () -> positions(conn));
    Checks.check("ResultSetMetaData precision and scale (" + zone + ")", () -> metadata(conn));
    Checks.check("executeBatch of 10000 rows commits once (" + zone + ")", () -> batch(conn, schema));
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DROP SCHEMA " + schema + " CASCADE");
    }
    conn.close();
    Checks.exit();
  }

  static long count(Connection c, String q, Setter... params) throws Exception {
    try (PreparedStatement ps = c.prepareStatement(q)) {
      for (int i = 0; i < params.length; i++) {
        params[i].set(ps, i + 1);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  static long update(Connection c, String q, Setter... params) throws Exception {
    try (PreparedStatement ps = c.prepareStatement(q)) {
      for (int i = 0; i < params.length; i++) {
        params[i].set(ps, i + 1);
      }
      return ps.executeUpdate();
    }
  }

  static Object read(Connection c, String q, Getter g) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(q)) {
      if (!rs.next()) {
        throw new AssertionError("no row: " + q);
      }
      return g.get(rs);
    }
  }

  static void roundTrip(Connection c, String schema, Type t) throws Exception {
    String tbl = schema + "." + t.col;
    try (Statement st = c.createStatement()) {
      st.executeUpdate("CREATE TABLE " + tbl + " (id BIGINT NOT NULL, v " + t.ddl + ")");
    }
    roundTrip(c, tbl, "v", t);
    try (PreparedStatement ps = c.prepareStatement("SELECT CAST(? AS " + t.ddl + ") AS x")) {
      t.set.set(ps, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        Checks.eq(t.get.get(rs), t.back, "CAST(? AS " + t.ddl + ")");
      }
    }
  }

  /** roundTrip binds t's value into column v of tbl, which holds no other rows. */
  static void roundTrip(Connection c, String tbl, String v, Type t) throws Exception {
    Setter id1 = (p, i) -> p.setLong(i, 1);
    Setter id2 = (p, i) -> p.setLong(i, 2);
    Setter none = (p, i) -> p.setNull(i, t.sqlType);
    String into = "INSERT INTO " + tbl + " (id, " + v + ") VALUES (?, ?)";
    Checks.eq(update(c, into, id1, t.set), 1L, "insert");
    Checks.eq(update(c, into, id2, none), 1L, "insert NULL");
    // What was stored, in DuckDB's words, and what the getter returns.
    Checks.eq(read(c, "SELECT CAST(" + v + " AS VARCHAR) FROM " + tbl + " WHERE id = 1", r -> r.getString(1)), t.text, "stored");
    Checks.eq(read(c, "SELECT " + v + " FROM " + tbl + " WHERE id = 1", t.get), t.back, "read back");
    Checks.eq(read(c, "SELECT " + v + " FROM " + tbl + " WHERE id = 2", r -> r.getString(1)), null, "NULL read back");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE " + v + " = ?", t.set), 1L, "WHERE v = ?");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE " + v + " IS NOT DISTINCT FROM ?", none), 1L,
        "WHERE v IS NOT DISTINCT FROM NULL");
    Checks.eq(update(c, "UPDATE " + tbl + " SET " + v + " = ? WHERE id = ?", t.set, id2), 1L, "UPDATE SET v = ?");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE " + v + " = ?", t.set), 2L, "rows after UPDATE");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE " + v + " IN (?, ?)", t.set, none), 2L, "WHERE v IN (?, ?)");
    if (!t.ddl.endsWith(")") && !t.ddl.endsWith("]")) { // DuckDB has no BETWEEN for lists, structs, maps
      Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE " + v + " BETWEEN ? AND ?", t.set, t.set), 2L, "WHERE v BETWEEN ? AND ?");
    }
    Checks.eq(update(c, "DELETE FROM " + tbl + " WHERE " + v + " = ? AND id = ?", t.set, id1), 1L, "DELETE WHERE v = ?");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl), 1L, "rows after DELETE");
  }

  // The Iceberg types SQL cannot create, in tables the run script's fixture
  // made: fixed[4] (a BLOB whose length is checked) and timestamp_ns
  // (format version 3), whose parameters bind as the driver's milliseconds.
  // Here col names the table and ddl its column.
  static final Type[] FIXTURE_TYPES = {
    new Type("fixed_t", "c_fixed", Types.VARBINARY, (p, i) -> p.setBytes(i, BYTES), "\\x00\\xFFab", r -> r.getBytes(1), BYTES),
    new Type("ns_t", "c_ns", Types.TIMESTAMP, (p, i) -> p.setTimestamp(i, WALL), "2024-02-29 23:59:58.5",
        r -> r.getObject(1, LocalDateTime.class), WALL.toLocalDateTime()),
  };

  static void fixture(Connection c, Type t) throws Exception {
    String tbl = "fixture." + t.col;
    try (Statement st = c.createStatement()) {
      st.executeUpdate("DELETE FROM " + tbl);
    }
    roundTrip(c, tbl, t.ddl, t);
  }

  // Without a calendar the driver binds a Timestamp as its wall-clock
  // time in the JVM's zone, unscaled milliseconds the server cannot tell
  // from an instant: a TIMESTAMPTZ then stores that wall-clock time as
  // UTC. (A UTC calendar binds the instant; see c_tz.) Pinned so that a
  // driver that changes this is noticed.
  static void zoned(Connection c, String schema) throws Exception {
    String tbl = schema + ".zoned";
    try (Statement st = c.createStatement()) {
      st.executeUpdate("CREATE TABLE " + tbl + " (id BIGINT, v TIMESTAMPTZ)");
    }
    Checks.eq(update(c, "INSERT INTO " + tbl + " VALUES (?, ?)", (p, i) -> p.setLong(i, 1), (p, i) -> p.setTimestamp(i, INSTANT)), 1L, "insert");
    String wall = INSTANT.toString(); // the JVM's wall-clock time, e.g. 2024-01-22 04:00:00.123
    Checks.eq(read(c, "SELECT CAST(v AS VARCHAR) FROM " + tbl, r -> r.getString(1)), wall + "+00", "stored");
    Checks.eq(count(c, "SELECT count(*) FROM " + tbl + " WHERE v = ?", (p, i) -> p.setTimestamp(i, INSTANT)), 1L, "WHERE v = ? bound the same way");
  }

  static void positions(Connection c) throws Exception {
    Setter dec = (p, i) -> p.setBigDecimal(i, new BigDecimal("12.34"));
    Checks.eq(read2(c, "SELECT CAST(? AS DECIMAL(12,2)) AS x", dec), new BigDecimal("12.34"), "CAST(? AS DECIMAL(12,2))");
    Checks.eq(count(c, "SELECT count(*) FROM orders WHERE amount > ?", (p, i) -> p.setBigDecimal(i, new BigDecimal("100.50"))),
        count(c, "SELECT count(*) FROM orders WHERE amount > 100.5"), "amount > ?");
    Checks.eq(count(c, "SELECT count(*) FROM orders WHERE id IN (?, ?, ?)",
        (p, i) -> p.setLong(i, 3), (p, i) -> p.setLong(i, 5), (p, i) -> p.setLong(i, 7)), 3L, "IN (?, ?, ?)");
    Checks.eq(count(c, "SELECT count(*) FROM orders WHERE ordered_on BETWEEN ? AND ?",
        (p, i) -> p.setDate(i, Date.valueOf("2024-01-03")), (p, i) -> p.setDate(i, Date.valueOf("2024-01-09"))),
        count(c, "SELECT count(*) FROM orders WHERE ordered_on BETWEEN DATE '2024-01-03' AND DATE '2024-01-09'"), "BETWEEN ? AND ?");
    Checks.eq(count(c, "SELECT count(*) FROM orders WHERE status LIKE ?", (p, i) -> p.setString(i, "sh%")),
        count(c, "SELECT count(*) FROM orders WHERE status LIKE 'sh%'"), "LIKE ?");
    long literal = count(c, "SELECT count(*) FROM orders WHERE ordered_at < TIMESTAMPTZ '2024-01-22 12:00:00+00'");
    if (literal == 0) {
      throw new AssertionError("the literal query finds no rows");
    }
    Timestamp noon = Timestamp.from(Instant.parse("2024-01-22T12:00:00Z"));
    Checks.eq(count(c, "SELECT count(*) FROM orders WHERE ordered_at < ?", (p, i) -> p.setTimestamp(i, noon, UTC)), literal,
        "ordered_at < ? (UTC calendar)");
  }

  static Object read2(Connection c, String q, Setter s) throws Exception {
    try (PreparedStatement ps = c.prepareStatement(q)) {
      s.set(ps, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBigDecimal(1);
      }
    }
  }

  static void metadata(Connection c) throws Exception {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT amount, id, amount * 2 AS twice, sum(id) OVER () AS total FROM orders LIMIT 1")) {
      ResultSetMetaData md = rs.getMetaData();
      Checks.eq(md.getColumnType(1), Types.DECIMAL, "amount type");
      Checks.eq(md.getPrecision(1) + "," + md.getScale(1), "12,2", "amount precision, scale");
      Checks.eq(md.getPrecision(2) + "," + md.getScale(2), "19,0", "id precision, scale");
      Checks.eq(md.getPrecision(3) + "," + md.getScale(3), "18,2", "amount * 2 (DuckDB: DECIMAL(18,2)) precision, scale");
      Checks.eq(md.getPrecision(4) + "," + md.getScale(4), "38,0", "sum(id) precision, scale");
      rs.next();
      Checks.eq(rs.getBigDecimal(1).scale(), 2, "value scale");
    }
  }

  static void batch(Connection c, String schema) throws Exception {
    String tbl = schema + ".batch";
    try (Statement st = c.createStatement()) {
      st.executeUpdate("CREATE TABLE " + tbl + " (id BIGINT NOT NULL, label VARCHAR, price DECIMAL(10,2), made TIMESTAMP)");
    }
    int n = 10_000;
    long start = System.nanoTime();
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tbl + " VALUES (?, ?, ?, ?)")) {
      for (int i = 0; i < n; i++) {
        ps.setLong(1, i);
        ps.setString(2, "label " + i);
        ps.setBigDecimal(3, BigDecimal.valueOf(i, 2));
        ps.setTimestamp(4, new Timestamp(WALL.getTime() + i));
        ps.addBatch();
      }
      long[] counts = ps.executeLargeBatch();
      Checks.eq(Arrays.stream(counts).sum(), (long) n, "update count");
    }
    double took = (System.nanoTime() - start) / 1e9;
    System.out.printf("executeBatch of %d rows: %.2f s (%.0f rows/s)%n", n, took, n / took);
    Checks.eq(read(c, "SELECT count(*) || ',' || sum(id) || ',' || sum(price) || ',' || max(made) FROM " + tbl, r -> r.getString(1)),
        n + "," + ((long) n * (n - 1) / 2) + ",499950.00,2024-03-01 00:00:08.499", "rows");
    Checks.eq(count(c, "SELECT count(*) FROM \"" + schema + "\".\"batch$snapshots\""), 1L, "snapshots");
    // A NULL in a NOT NULL column names its row and commits nothing.
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + tbl + " VALUES (?, ?, ?, ?)")) {
      for (int i = 0; i < 5; i++) {
        if (i == 3) {
          ps.setNull(1, Types.BIGINT);
        } else {
          ps.setLong(1, i);
        }
        ps.setString(2, "x");
        ps.setNull(3, Types.DECIMAL);
        ps.setNull(4, Types.TIMESTAMP);
        ps.addBatch();
      }
      String msg = "";
      try {
        ps.executeBatch();
      } catch (Exception e) {
        msg = String.valueOf(e.getMessage());
      }
      if (!msg.contains("parameter row 4") || !msg.contains("NOT NULL")) {
        throw new AssertionError("error of a NULL id in row 4: " + msg);
      }
    }
    Checks.eq(count(c, "SELECT count(*) FROM \"" + schema + "\".\"batch$snapshots\""), 1L, "snapshots after a failed batch");
  }
}
