// Recipes runs the date and time recipe of docs/types.md ("Dates and times
// in any time zone": the java block of class TimeRecipes) as it is written
// there, in JVMs of several time zones, and checks that each prints the
// output block that follows it in the docs. A recipe that reads or binds a
// value through the JVM's zone prints another value in one of them.
//
//   java -cp flight-sql-jdbc-driver.jar:CLASSES Recipes HOST PORT DOCS/types.md DRIVER.jar
//
// It prints one line per zone and ends with "N passed, M failed"; the exit
// code is non-zero when any check failed.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

public class Recipes {

  /** The zones the recipe must hold in: far from UTC both ways, half-hour offsets and half-hour DST. */
  static final String[] ZONES = {"America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Kiritimati", "UTC"};

  static final String DOC_ADDR = "127.0.0.1:32010";

  public static void main(String[] args) throws Exception {
    String addr = args[0] + ":" + args[1];
    List<String> doc = Files.readAllLines(Path.of(args[2]), StandardCharsets.UTF_8);
    String jar = args[3];
    String[] block = javaBlock(doc, "public class TimeRecipes");
    Path dir = Files.createTempDirectory("icefloe-recipes");
    Path src = dir.resolve("TimeRecipes.java");
    Files.writeString(src, block[0].replace(DOC_ADDR, addr));
    for (String zone : ZONES) {
      Checks.check("docs/types.md's TimeRecipes prints what the docs show, in a JVM in " + zone, () -> {
        Process p = new ProcessBuilder("java", "-Duser.timezone=" + zone, "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "-cp", jar, src.toString()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Checks.expect(p.waitFor(2, TimeUnit.MINUTES), "TimeRecipes did not finish in 2 minutes");
        Checks.eq(p.exitValue(), 0, "exit code (stdout: " + out + ")");
        Checks.eq(lines(out), lines(block[1]), "the lines printed");
      });
    }
    Checks.exit();
  }

  /**
   * The java block of doc holding marker, and the output block right
   * after it (annotated {@code <!-- snippet: output -->}), as texts.
   */
  static String[] javaBlock(List<String> doc, String marker) {
    for (int i = 0; i < doc.size(); i++) {
      if (!doc.get(i).strip().equals("```java")) {
        continue;
      }
      int end = close(doc, i);
      String code = String.join("\n", doc.subList(i + 1, end)) + "\n";
      if (!code.contains(marker)) {
        i = end;
        continue;
      }
      int j = end + 1;
      while (j < doc.size() && doc.get(j).isBlank()) {
        j++;
      }
      if (j >= doc.size() || !doc.get(j).strip().equals("<!-- snippet: output -->")) {
        throw new IllegalStateException("the block with " + marker + " has no output block after it");
      }
      j++;
      while (doc.get(j).isBlank()) {
        j++;
      }
      int outEnd = close(doc, j);
      return new String[] {code, String.join("\n", doc.subList(j + 1, outEnd)) + "\n"};
    }
    throw new IllegalStateException("no java block with " + marker);
  }

  /** The line of the fence closing the block opened at line open. */
  static int close(List<String> doc, int open) {
    for (int k = open + 1; k < doc.size(); k++) {
      if (doc.get(k).strip().equals("```")) {
        return k;
      }
    }
    throw new IllegalStateException("the block at line " + (open + 1) + " is never closed");
  }

  static List<String> lines(String s) {
    List<String> out = new ArrayList<>();
    for (String l : s.split("\n")) {
      if (!l.isBlank()) {
        out.add(l.stripTrailing());
      }
    }
    return out;
  }
}
