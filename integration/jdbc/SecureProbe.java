// SecureProbe drives the Arrow Flight SQL JDBC driver as DBeaver does
// against an icefloe that runs TLS on every listener and authenticates
// every call: useEncryption=true with a trust store holding the server's
// CA (or tlsRootCerts= with the CA file), user/password (and token=)
// logins, and a user granted one schema who sees only that schema, is
// refused the others and runs its queries.
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar SecureProbe.java HOST PORT TRUSTSTORE STOREPASS TOKEN CA_PEM
//
// It prints one line per check and ends with "N passed, M failed"; the exit
// code is non-zero when any check failed.

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Properties;

public class SecureProbe {
  static long count(Connection c, String sql) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      Checks.expect(rs.next(), "a row from " + sql);
      return rs.getLong(1);
    }
  }

  static String url;

  static Connection login(String user, String password) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", user);
    p.setProperty("password", password);
    return DriverManager.getConnection(url, p);
  }

  // causes joins the messages of an exception and its causes.
  static String causes(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (; t != null; t = t.getCause()) {
      b.append(t.getMessage()).append(" | ");
    }
    return b.toString();
  }

  public static void main(String[] args) throws Exception {
    String host = args[0];
    String port = args[1];
    url = "jdbc:arrow-flight-sql://" + host + ":" + port + "/?useEncryption=true&useSystemTrustStore=false"
        + "&trustStore=" + args[2] + "&trustStorePassword=" + args[3] + "&threadPoolSize=4";
    String token = args[4];
    Class.forName("org.apache.arrow.driver.jdbc.ArrowFlightJdbcDriver");

    Checks.check("admin sets up a schema over TLS", () -> {
      try (Connection c = login("root", "root-pw"); Statement st = c.createStatement()) {
        st.executeUpdate("CREATE SCHEMA IF NOT EXISTS sales");
        st.executeUpdate("CREATE TABLE IF NOT EXISTS sales.orders AS SELECT id, status, amount FROM orders");
        Checks.expect(count(c, "SELECT count(*) FROM sales.orders") == 50000L, "rows copied");
      }
    });
    Checks.check("a wrong password is refused", () -> {
      try (Connection c = login("ana", "wrong")) {
        count(c, "SELECT 1");
        throw new AssertionError("logged in with a wrong password");
      } catch (SQLException e) {
        Checks.expect(causes(e).contains("wrong user name or password"), "message: " + causes(e));
      }
    });
    Checks.check("no credentials are refused", () -> {
      try (Connection c = DriverManager.getConnection(url, new Properties())) {
        count(c, "SELECT 1");
        throw new AssertionError("a query ran without credentials");
      } catch (SQLException e) {
        Checks.expect(causes(e).contains("authentication required"), "message: " + causes(e));
      }
    });

    Connection ana = login("ana", "ana-pw");
    DatabaseMetaData md = ana.getMetaData();
    // DBeaver on connect and in its navigator tree.
    Checks.check("GetSqlInfo and getTableTypes", () -> {
      Checks.expect(md.getDatabaseProductName().equals("icefloe"), "product name");
      Checks.expect(Checks.column(md.getTableTypes(), "TABLE_TYPE").contains("TABLE"), "TABLE");
    });
    Checks.check("getCatalogs", () -> Checks.expect(Checks.column(md.getCatalogs(), "TABLE_CAT").equals(List.of("local")), "local only"));
    Checks.check("getSchemas shows only the granted schema", () -> {
      List<String> s = Checks.column(md.getSchemas("local", "%"), "TABLE_SCHEM");
      Checks.expect(s.equals(List.of("sales")), "schemas " + s);
    });
    Checks.check("getTables shows only the granted schema's tables", () -> {
      List<String> all = Checks.column(md.getTables("local", "%", "%", null), "TABLE_SCHEM");
      Checks.expect(!all.isEmpty() && all.stream().allMatch("sales"::equals), "table schemas " + all);
      List<String> none = Checks.column(md.getTables("local", "default", "%", null), "TABLE_NAME");
      Checks.expect(none.isEmpty(), "default tables " + none);
    });
    Checks.check("getColumns and getPrimaryKeys(%)", () -> {
      List<String> cols = Checks.column(md.getColumns("local", "sales", "orders", "%"), "COLUMN_NAME");
      Checks.expect(cols.equals(List.of("id", "status", "amount")), "columns " + cols);
      Checks.expect(Checks.column(md.getPrimaryKeys("local", "sales", "%"), "COLUMN_NAME").isEmpty(), "no keys");
    });
    Checks.check("queries of the granted schema pull from the TLS workers", () -> {
      Checks.expect(count(ana, "SELECT count(*) FROM sales.orders") == 50000L, "count");
      long n = 0;
      try (Statement st = ana.createStatement(); ResultSet rs = st.executeQuery("SELECT id FROM sales.orders")) {
        while (rs.next()) {
          n++;
        }
      }
      Checks.expect(n == 50000L, "rows " + n);
    });
    Checks.check("another schema is PermissionDenied naming the table and privilege", () -> {
      try {
        count(ana, "SELECT count(*) FROM local.default.orders");
        throw new AssertionError("read a table of another schema");
      } catch (SQLException e) {
        String m = causes(e);
        Checks.expect(m.contains("permission denied") && m.contains("SELECT") && m.contains("local.default.orders"), "message: " + m);
      }
      try (Statement st = ana.createStatement()) {
        st.executeUpdate("DROP TABLE sales.orders");
        throw new AssertionError("dropped without the privilege");
      } catch (SQLException e) {
        Checks.expect(causes(e).contains("no DROP privilege"), "message: " + causes(e));
      }
    });
    Checks.check("still runs its queries after a denial", () -> Checks.expect(count(ana, "SELECT count(*) FROM sales.orders WHERE id <= 10") == 10L, "count"));
    ana.close();

    Checks.check("token= logs in at the coordinator and the workers", () -> {
      Properties p = new Properties();
      p.setProperty("token", token);
      try (Connection c = DriverManager.getConnection(url, p)) {
        long n = 0;
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT id FROM sales.orders")) {
          while (rs.next()) {
            n++;
          }
        }
        Checks.expect(n == 50000L, "rows " + n);
      }
    });
    Checks.check("tlsRootCerts instead of a trust store", () -> {
      String pem = "jdbc:arrow-flight-sql://" + host + ":" + port + "/?useEncryption=true&tlsRootCerts=" + args[5];
      Properties p = new Properties();
      p.setProperty("user", "ana");
      p.setProperty("password", "ana-pw");
      try (Connection c = DriverManager.getConnection(pem, p)) {
        Checks.expect(count(c, "SELECT count(*) FROM sales.orders WHERE id <= 10") == 10L, "count");
      }
    });
    Checks.exit();
  }
}
