// Cancel checks through the Arrow Flight SQL JDBC driver that a client's
// cancel or early stop stops the work on every worker before the first
// batch: Statement.cancel() of a two-phase aggregate whose partial
// fragments would compute for tens of seconds, and setMaxRows on a
// scatter query of 100 million rows (a join with a broadcast table). It
// counts the fragments the server log says were cancelled (EXPLAIN names
// them) and measures the server's CPU going idle; it asserts no times.
//
// The run script compiles the suite's programs with Checks.java (javac -cp
// flight-sql-jdbc-driver.jar -d CLASSES *.java) and runs them on JDK 17:
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar:CLASSES Cancel HOST PORT SERVER_PID SERVER_LOG
//
// It prints one line per check and ends with "N passed, M failed".

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Properties;

public class Cancel {
  static long pid;
  static Path log;

  /**
   * md5 nested depth times over each row: CPU for every row, little memory. At most 4 deep: the
   * planner refuses repeat() nested deeper (each level's value-size guard copies its argument).
   */
  static String heavy(int depth) {
    String e = "status || id";
    for (int i = 0; i < depth; i++) {
      e = "md5(repeat(" + e + ", 800))";
    }
    return e;
  }

  // 4 md5 calls over 25 kB per row of the 50,000 demo orders: some 30 s of
  // CPU here, spread over the fragments. DuckDB notices an interrupt
  // between tasks (a data file's row group here), so a cancel ends the
  // work within one task.
  static final String HEAVY = heavy(4);

  public static void main(String[] args) throws Exception {
    String url = "jdbc:arrow-flight-sql://" + args[0] + ":" + args[1] + "/?useEncryption=false";
    pid = Long.parseLong(args[2]);
    log = Path.of(args[3]);
    Class.forName("org.apache.arrow.driver.jdbc.ArrowFlightJdbcDriver");
    try (Connection conn = DriverManager.getConnection(url, new Properties())) {
      long start = System.nanoTime();
      Checks.check("Statement.cancel() stops a two-phase query's final and partial fragments", () -> cancelTwoPhase(conn));
      System.out.printf("  %.1f s%n", (System.nanoTime() - start) / 1e9);
      Checks.check("setMaxRows(200) stops a scatter query's endpoints", () -> maxRows(conn));
      System.out.printf("  %.1f s%n", (System.nanoTime() - start) / 1e9);
    }
    Checks.exit();
  }

  /** CPU seconds the server process has used (utime + stime). */
  static double cpu() throws Exception {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
  }

  static long cancelledLines() throws Exception {
    return Files.readAllLines(log).stream().filter(l -> l.contains("\tworker: DoGet cancelled\t")).count();
  }

  /** Waits until the log holds want more cancelled DoGets than before. */
  static void waitCancelled(long before, long want) throws Exception {
    long got = 0;
    for (int i = 0; i < 200; i++) {
      got = cancelledLines() - before;
      if (got >= want) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError(got + " fragments logged a cancelled DoGet, want " + want);
  }

  /** The server goes idle: under half a CPU second in two seconds. */
  static void idle() throws Exception {
    Thread.sleep(500);
    double c0 = cpu();
    Thread.sleep(2000);
    double busy = cpu() - c0;
    Checks.expect(busy < 0.5, String.format("the server still used %.2f s of CPU in 2 s after the stop", busy));
  }

  /** Waits until the server has burnt some CPU on the query. */
  static void busy(double c0, Thread t) throws Exception {
    for (int i = 0; i < 600 && cpu() - c0 < 1.0; i++) {
      Checks.expect(t.isAlive(), "the query ended early");
      Thread.sleep(100);
    }
    Checks.expect(cpu() - c0 >= 1.0, "the query never got going");
  }

  /** The number of lines of EXPLAIN q whose key starts with prefix, and the children they name. */
  static long[] plan(Connection c, String q) throws Exception {
    long endpoints = 0;
    long children = 0;
    String strategy = "";
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("EXPLAIN " + q)) {
      while (rs.next()) {
        String k = rs.getString(1);
        String v = rs.getString(2);
        if (k.equals("strategy")) {
          strategy = v;
        }
        if (k.startsWith("endpoint ")) {
          endpoints++;
          children += Long.parseLong(v.replaceAll(".*, (\\d+) children$", "$1"));
        }
      }
    }
    System.out.println("  plan: " + strategy + ", " + endpoints + " endpoints, " + children + " children");
    return new long[] {endpoints, children};
  }

  /** The CPU the server spends on q over the orders with id <= 5000, a tenth of them. */
  static double tenth(Connection conn, String q) throws Exception {
    double c0 = cpu();
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(q)) {
      while (rs.next()) {
      }
    }
    return cpu() - c0;
  }

  // The two-phase query, cancelled once the workers have burnt a second of
  // CPU on it, must cost less than half of what it takes in full: less
  // than five times its run over a tenth of the orders, measured here.
  static void cancelTwoPhase(Connection conn) throws Exception {
    String where = "WHERE " + HEAVY + " LIKE 'zz%'";
    String q = "SELECT status, count(*) AS n FROM orders " + where + " GROUP BY status";
    long[] p = plan(conn, q);
    Checks.expect(p[0] == 1 && p[1] >= 2, "a two-phase plan with partials");
    double tenth = tenth(conn, "SELECT status, count(*) AS n FROM orders " + where + " AND id <= 5000 GROUP BY status");
    Statement st = conn.createStatement();
    Object[] outcome = new Object[1];
    Thread t = new Thread(() -> {
      try (ResultSet rs = st.executeQuery(q)) {
        while (rs.next()) {
        }
        outcome[0] = "rows";
      } catch (Throwable e) {
        outcome[0] = e;
      }
    });
    long before = cancelledLines();
    double c0 = cpu();
    t.start();
    busy(c0, t);
    st.cancel();
    t.join(30_000);
    Checks.expect(!t.isAlive(), "executeQuery did not return after cancel()");
    Checks.expect(outcome[0] instanceof Exception, "executeQuery after cancel() ended with " + outcome[0]);
    // The final fragment and every partial it was pulling.
    waitCancelled(before, 1 + p[1]);
    idle();
    double used = cpu() - c0;
    System.out.printf("  CPU: %.2f s until cancelled and idle, %.2f s for a tenth of the query%n", used, tenth);
    Checks.expect(used < 5 * tenth, String.format("the cancelled query cost %.2f CPU s, half of all of it %.2f", used, 5 * tenth));
    st.close();
  }

  // The work a full read would take is measured in the same run: the
  // same join over a tenth of the orders, computed to its end on the
  // server. Stopping after 200 rows must cost less CPU than that tenth.
  static void maxRows(Connection conn) throws Exception {
    String q = "SELECT a.id, b.id AS c, md5(a.status || b.id) AS h FROM orders a, customers b";
    long[] p = plan(conn, q);
    Checks.expect(p[0] >= 2 && p[1] == 0, "a scatter plan over several endpoints");
    double r0 = cpu();
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*), max(md5(a.status || b.id)) FROM orders a, customers b WHERE a.id <= 5000")) {
      rs.next();
      Checks.expect(rs.getLong(1) == 5000L * 2000, "the reference join's rows");
    }
    double tenth = cpu() - r0;
    long before = cancelledLines();
    double c0 = cpu();
    int n = 0;
    try (Statement st = conn.createStatement()) {
      st.setMaxRows(200);
      try (ResultSet rs = st.executeQuery(q)) {
        while (rs.next()) {
          n++;
        }
      }
    }
    Checks.expect(n == 200, "rows with setMaxRows(200): " + n);
    waitCancelled(before, p[0]);
    idle();
    double used = cpu() - c0;
    System.out.printf("  CPU: %.2f s for 200 rows, %.2f s for a tenth of the join%n", used, tenth);
    Checks.expect(used < tenth, String.format("200 rows cost %.2f CPU s, a tenth of the whole join %.2f", used, tenth));
  }
}
