// Answers checks, through the Arrow Flight SQL JDBC driver, that the
// statements whose answer needs no table data — SELECT 1, SHOW, count(*)
// from the manifests, result-cache hits — come back right and make no
// worker call: their one endpoint has no locations, which the driver reads
// over the connection it has. Worker calls are counted on the server's
// /metrics (icefloe_worker_tickets_total).
//
//   java --add-opens=java.base/java.nio=ALL-UNNAMED -cp flight-sql-jdbc-driver.jar:CLASSES Answers HOST PORT HTTP_ADDR

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public class Answers {
  static String metrics;

  /** The sum of the samples of a metric on the server's /metrics. */
  static double metric(String name) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient()
        .send(HttpRequest.newBuilder(URI.create(metrics)).build(), HttpResponse.BodyHandlers.ofString());
    double total = 0;
    for (String line : r.body().split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
        total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return total;
  }

  /** Every row of q, its columns joined by "|". */
  static List<String> rows(Connection conn, String q) throws Exception {
    List<String> out = new ArrayList<>();
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(q)) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
          b.append(i > 1 ? "|" : "").append(rs.getString(i));
        }
        out.add(b.toString());
      }
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    String url = "jdbc:arrow-flight-sql://" + args[0] + ":" + args[1] + "/?useEncryption=false";
    metrics = "http://" + args[2] + "/metrics";
    Class.forName("org.apache.arrow.driver.jdbc.ArrowFlightJdbcDriver");
    String dashboard = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status";
    try (Connection conn = DriverManager.getConnection(url, new Properties())) {
      List<String> count = rows(conn, "SELECT count(*) FROM (SELECT id FROM orders)");
      List<String> tiles = rows(conn, dashboard); // kept by the result cache
      double before = metric("icefloe_worker_tickets_total");
      Checks.check("reading orders called the workers (the metric counts)", () -> Checks.expect(before > 0, "no worker ticket counted"));
      Checks.check("SELECT 1", () -> Checks.eq(rows(conn, "SELECT 1 AS one"), List.of("1"), "rows"));
      Checks.check("count(*) from the manifests", () -> Checks.eq(rows(conn, "SELECT count(*) FROM orders"), count, "rows"));
      Checks.check("SHOW TABLES", () -> Checks.expect(rows(conn, "SHOW TABLES").contains("orders"), "orders listed"));
      Checks.check("a result-cache hit", () -> Checks.eq(rows(conn, dashboard), tiles, "rows"));
      Checks.check("no worker was called", () -> Checks.eq(metric("icefloe_worker_tickets_total"), before, "worker tickets"));
    }
    Checks.exit();
  }
}
