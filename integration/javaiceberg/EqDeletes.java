import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.encryption.EncryptedFiles;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.types.Types;

/**
 * Writes Iceberg tables with equality delete files the way Flink does (the
 * Iceberg Java API's generic writers), into icefloe's SQLite catalog, and
 * reads tables back with Iceberg Java's own reader.
 *
 * <pre>
 * java -cp JARS EqDeletes.java write CATALOG_DB WAREHOUSE
 * java -cp JARS EqDeletes.java read CATALOG_DB WAREHOUSE TABLE[@REF]...
 * </pre>
 *
 * write creates default.eq_v2, default.eq_v2p (partitioned by p) and
 * default.eq_v3; read prints the rows of main or of a branch or tag, one
 * "table|id|p|s" line each, and how many snapshots each table keeps.
 */
public class EqDeletes {
  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "p", Types.IntegerType.get()),
          Types.NestedField.optional(3, "s", Types.StringType.get()));

  public static void main(String[] args) throws Exception {
    JdbcCatalog cat = new JdbcCatalog();
    Map<String, String> props = new HashMap<>();
    props.put("uri", "jdbc:sqlite:" + args[1]);
    props.put("jdbc.schema-version", "V1");
    props.put("warehouse", "file:" + args[2]);
    cat.initialize("local", props);
    if (args[0].equals("write")) {
      if (!((SupportsNamespaces) cat).namespaceExists(Namespace.of("default"))) {
        ((SupportsNamespaces) cat).createNamespace(Namespace.of("default"));
      }
      write(cat, "eq_v2", "2", PartitionSpec.unpartitioned());
      write(cat, "eq_v2p", "2", PartitionSpec.builderFor(SCHEMA).identity("p").build());
      write(cat, "eq_v3", "3", PartitionSpec.unpartitioned());
    } else {
      for (int i = 3; i < args.length; i++) {
        read(cat, args[i]);
      }
    }
    cat.close();
  }

  /**
   * Prints the rows of "table" (main) or "table@ref" (a branch or tag), then
   * one "table@ref|snapshots|n" line: how many snapshots the table keeps.
   */
  static void read(JdbcCatalog cat, String arg) throws IOException {
    String[] nameRef = arg.split("@", 2);
    Table t = cat.loadTable(TableIdentifier.of("default", nameRef[0]));
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(t);
    if (nameRef.length == 2) {
      if (t.refs().get(nameRef[1]) == null) {
        throw new IllegalArgumentException(arg + ": no such ref");
      }
      scan = scan.useSnapshot(t.refs().get(nameRef[1]).snapshotId());
    }
    try (CloseableIterable<Record> rows = scan.build()) {
      for (Record r : rows) {
        System.out.println(arg + "|" + r.getField("id") + "|" + r.getField("p") + "|" + r.getField("s"));
      }
    }
    int n = 0;
    for (var s : t.snapshots()) {
      n++;
    }
    System.out.println(arg + "|snapshots|" + n);
  }

  static Record row(long id) {
    GenericRecord r = GenericRecord.create(SCHEMA);
    r.setField("id", id);
    r.setField("p", (int) (id % 4));
    r.setField("s", "s" + id);
    return r;
  }

  /**
   * Rows 1..100 in one commit, equality deletes by id (3, 10, 50, 77, and in
   * a partitioned table 6 put in the wrong partition, which deletes nothing),
   * rows 101..120 plus id 10 again (newer than the delete, so it stays), then
   * an equality delete by s ('s20', 's105').
   */
  static void write(JdbcCatalog cat, String name, String version, PartitionSpec spec) throws IOException {
    TableIdentifier ident = TableIdentifier.of("default", name);
    Map<String, String> props = new HashMap<>();
    props.put(TableProperties.FORMAT_VERSION, version);
    props.put(TableProperties.PARQUET_COMPRESSION, "uncompressed");
    props.put(TableProperties.DELETE_PARQUET_COMPRESSION, "uncompressed");
    Table t = cat.buildTable(ident, SCHEMA).withPartitionSpec(spec).withProperties(props).create();

    List<Record> first = new ArrayList<>();
    for (long id = 1; id <= 100; id++) {
      first.add(row(id));
    }
    appendRows(t, first);

    List<Record> byID = new ArrayList<>();
    for (long id : new long[] {3, 10, 50, 77}) {
      byID.add(row(id));
    }
    Record wrong = row(6);
    wrong.setField("p", 1); // row 6 lives in partition p=2
    if (spec.isPartitioned()) {
      byID.add(wrong);
    }
    deleteRows(t, new int[] {1}, byID);

    List<Record> second = new ArrayList<>();
    for (long id = 101; id <= 120; id++) {
      second.add(row(id));
    }
    second.add(row(10));
    appendRows(t, second);

    deleteRows(t, new int[] {3}, List.of(row(20), row(105)));
  }

  /** Appends rows, one data file per partition, in one commit. */
  static void appendRows(Table t, List<Record> rows) throws IOException {
    GenericAppenderFactory factory = new GenericAppenderFactory(t.schema(), t.spec());
    var append = t.newAppend();
    for (Map.Entry<StructLike, List<Record>> part : byPartition(t, rows).entrySet()) {
      DataWriter<Record> w = factory.newDataWriter(output(t), FileFormat.PARQUET, part.getKey());
      try (w) {
        for (Record r : part.getValue()) {
          w.write(r);
        }
      }
      DataFile f = w.toDataFile();
      append.appendFile(f);
    }
    append.commit();
  }

  /** Commits equality deletes of rows on the given field ids, one file per partition. */
  static void deleteRows(Table t, int[] fieldIds, List<Record> rows) throws IOException {
    List<String> names = new ArrayList<>();
    for (int id : fieldIds) {
      names.add(t.schema().findColumnName(id));
    }
    Schema deleteSchema = t.schema().select(names);
    GenericAppenderFactory factory = new GenericAppenderFactory(t.schema(), t.spec(), fieldIds, deleteSchema, null);
    var delta = t.newRowDelta();
    for (Map.Entry<StructLike, List<Record>> part : byPartition(t, rows).entrySet()) {
      EqualityDeleteWriter<Record> w = factory.newEqDeleteWriter(output(t), FileFormat.PARQUET, part.getKey());
      try (w) {
        for (Record r : part.getValue()) {
          GenericRecord d = GenericRecord.create(deleteSchema);
          for (String n : names) {
            d.setField(n, r.getField(n));
          }
          w.write(d);
        }
      }
      DeleteFile f = w.toDeleteFile();
      delta.addDeletes(f);
    }
    delta.commit();
  }

  static Map<StructLike, List<Record>> byPartition(Table t, List<Record> rows) {
    Map<StructLike, List<Record>> out = new java.util.LinkedHashMap<>();
    for (Record r : rows) {
      StructLike key = null;
      if (t.spec().isPartitioned()) {
        PartitionKey pk = new PartitionKey(t.spec(), t.schema());
        pk.partition(r);
        key = pk;
      }
      out.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
    }
    return out;
  }

  static EncryptedOutputFile output(Table t) {
    String path = t.locationProvider().newDataLocation(UUID.randomUUID() + ".parquet");
    return EncryptedFiles.plainAsEncryptedOutput(t.io().newOutputFile(path));
  }
}
