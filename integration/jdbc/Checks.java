// Checks is the harness the JDBC suite's programs (Probe, Params, Cancel)
// share: one "PASS name" or "FAIL name: why" line per check, and a last
// line "N passed, M failed" whose outcome is the exit code.

import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

final class Checks {
  private static int passed = 0;
  private static int failed = 0;

  private Checks() {}

  interface Check {
    void run() throws Exception;
  }

  static void check(String name, Check c) {
    try {
      c.run();
      passed++;
      System.out.println("PASS " + name);
    } catch (Throwable t) {
      failed++;
      System.out.println("FAIL " + name + ": " + t);
      t.printStackTrace(System.out);
    }
  }

  static void expect(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError(what);
    }
  }

  static void eq(Object got, Object want, String what) {
    if (!Objects.deepEquals(got, want)) {
      throw new AssertionError(what + ": got " + str(got) + ", want " + str(want));
    }
  }

  private static String str(Object o) {
    return o instanceof byte[] ? Arrays.toString((byte[]) o) : String.valueOf(o);
  }

  /** The values of column col of every row of rs, which it closes. */
  static List<String> column(ResultSet rs, String col) throws Exception {
    List<String> out = new ArrayList<>();
    try (rs) {
      while (rs.next()) {
        out.add(rs.getString(col));
      }
    }
    return out;
  }

  /** Prints the summary and exits, non-zero when any check failed. */
  static void exit() {
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 ? 0 : 1);
  }
}
