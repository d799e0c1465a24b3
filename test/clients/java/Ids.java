// The PostgreSQL JDBC driver and Snowflake ids: bigint is a Java long, exact, and so is the
// snowflake type, whose OID the driver does not know, through getLong, getString and
// getGeneratedKeys. A tracked table (1.12) is followed too, into a map keyed by long ids. Connects
// to the URL given as the first argument as PGUSER with PGPASSWORD; exits non-zero on the first
// mismatch.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

public class Ids {
    private static final int ROWS = 1000;
    private static final long EPOCH_MS = 1288834974657L;
    private static final int PAGE = 3;

    // Fails the run with a message, whatever -ea says.
    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new IllegalStateException(message);
        }
    }

    public static void main(String[] arguments) throws Exception {
        try (Connection connection = DriverManager.getConnection(
                arguments[0], System.getenv("PGUSER"), System.getenv("PGPASSWORD"))) {
            try (Statement statement = connection.createStatement()) {
                statement.execute("DROP TABLE IF EXISTS java_ids");
                statement.execute("CREATE TABLE java_ids (id bigint PRIMARY KEY DEFAULT "
                        + "snowflake_nextval(), label text NOT NULL)");
            }
            List<Long> ids = new ArrayList<>();
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO java_ids (label) SELECT 'row ' || g FROM generate_series(1, ?) g "
                    + "RETURNING id")) {
                insert.setInt(1, ROWS);
                try (ResultSet rows = insert.executeQuery()) {
                    while (rows.next()) {
                        ids.add(rows.getLong("id"));
                    }
                }
            }
            // The JDBC way to get a generated key back from a single-row insert.
            try (PreparedStatement insert = connection.prepareStatement(
                    "INSERT INTO java_ids (label) VALUES ('single')", new String[] {"id"})) {
                insert.executeUpdate();
                try (ResultSet keys = insert.getGeneratedKeys()) {
                    check(keys.next(), "getGeneratedKeys returns the id");
                    ids.add(keys.getLong(1));
                }
            }
            check(new HashSet<>(ids).size() == ROWS + 1, "every id is distinct");
            try (PreparedStatement select = connection.prepareStatement(
                    "SELECT id, id::text, d.unix_ms, d.datacenter_id, d.machine_id, d.sequence "
                    + "FROM java_ids, snowflake_decode(id) d WHERE id = ?")) {
                for (long id : ids) {
                    select.setLong(1, id);
                    try (ResultSet row = select.executeQuery()) {
                        check(row.next(), "the row of id " + id + " is found by its id");
                        check(row.getLong(1) == id && row.getString(2).equals(Long.toString(id)),
                                "id " + id + " reads back exactly");
                        check(row.getLong(3) == (id >> 22) + EPOCH_MS
                                        && row.getInt(4) == (int) ((id >> 17) & 31)
                                        && row.getInt(5) == (int) ((id >> 12) & 31)
                                        && row.getInt(6) == (int) (id & 4095),
                                "id " + id + " decodes the same here and in the server");
                    }
                }
            }
            System.out.println("PostgreSQL JDBC " + connection.getMetaData().getDriverVersion()
                    + ": " + ids.size() + " ids exact as long");
            checkSnowflakeType(connection);
            followChanges(connection);
        }
    }

    // Checks that an id read from the snowflake type is the one the server wrote in text.
    private static long exactId(ResultSet row, int column, String text, String what)
            throws Exception {
        long id = row.getLong(column);
        check(row.getString(column).equals(text) && Long.toString(id).equals(text),
                what + ": getLong " + id + " and getString " + row.getString(column)
                        + " are id " + text);
        check(id > (1L << 53), what + ": id " + id + " is above 2^53");
        return id;
    }

    // The snowflake type as the key: an OID the driver does not know, read with getLong and
    // getString, and returned by getGeneratedKeys, exact.
    private static void checkSnowflakeType(Connection connection) throws Exception {
        try (Statement statement = connection.createStatement()) {
            statement.execute("DROP TABLE IF EXISTS java_typed_ids");
            statement.execute("CREATE TABLE java_typed_ids (id snowflake PRIMARY KEY DEFAULT "
                    + "snowflake_nextval(), legacy_id bigint, label text NOT NULL)");
        }
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO java_typed_ids (label) SELECT 'row ' || g "
                + "FROM generate_series(1, ?) g RETURNING id, id::text")) {
            insert.setInt(1, ROWS);
            try (ResultSet rows = insert.executeQuery()) {
                check(rows.getMetaData().getColumnTypeName(1).equals("snowflake")
                                && rows.getMetaData().getColumnType(1) == Types.OTHER,
                        "the driver sees the type by name, as Types.OTHER");
                while (rows.next()) {
                    ids.add(exactId(rows, 1, rows.getString(2), "RETURNING"));
                }
            }
        }
        // getGeneratedKeys, with the key's name and with RETURN_GENERATED_KEYS (every column).
        try (PreparedStatement byName = connection.prepareStatement(
                     "INSERT INTO java_typed_ids (label) VALUES ('by name')", new String[] {"id"});
                PreparedStatement allColumns = connection.prepareStatement(
                        "INSERT INTO java_typed_ids (label) VALUES ('all columns')",
                        Statement.RETURN_GENERATED_KEYS);
                PreparedStatement text = connection.prepareStatement(
                        "SELECT id::text FROM java_typed_ids WHERE label = ?")) {
            String[] labels = {"by name", "all columns"};
            PreparedStatement[] inserts = {byName, allColumns};
            for (int i = 0; i < inserts.length; i++) {
                inserts[i].executeUpdate();
                text.setString(1, labels[i]);
                try (ResultSet keys = inserts[i].getGeneratedKeys();
                        ResultSet stored = text.executeQuery()) {
                    check(keys.next() && stored.next(), "getGeneratedKeys returns the id");
                    ids.add(exactId(keys, keys.findColumn("id"), stored.getString(1),
                            "getGeneratedKeys " + labels[i]));
                }
            }
        }
        check(new HashSet<>(ids).size() == ROWS + 2, "every id is distinct");
        try (Statement statement = connection.createStatement()) {
            statement.execute("UPDATE java_typed_ids SET legacy_id = id");
        }
        // Each id sent back as a long finds its row, whose bigint copy is the same id.
        try (PreparedStatement select = connection.prepareStatement(
                "SELECT id, id::text, legacy_id FROM java_typed_ids WHERE id = ?")) {
            for (long id : ids) {
                select.setLong(1, id);
                try (ResultSet row = select.executeQuery()) {
                    check(row.next(), "the row of id " + id + " is found by its id");
                    check(exactId(row, 1, row.getString(2), "lookup") == id
                                    && row.getLong(3) == id,
                            "id " + id + " reads back exactly, as its bigint copy");
                }
            }
        }
        checkStringParameters(connection, ids.get(ROWS / 2));
        System.out.println("PostgreSQL JDBC: snowflake type, " + ids.size()
                + " ids exact with getLong, getString and getGeneratedKeys; bound as strings with "
                + "setObject(Types.OTHER) and with stringtype=unspecified");
    }

    // An id bound as a string: setString sends a varchar, which no operator compares with the
    // type; setObject with Types.OTHER sends it untyped, as setString does on a connection with
    // stringtype=unspecified, and the server reads it as the type. max(id) is of the type (1.9).
    private static void checkStringParameters(Connection connection, long id) throws Exception {
        String query = "SELECT label FROM java_typed_ids WHERE id = ?";
        try (PreparedStatement select = connection.prepareStatement(query)) {
            select.setString(1, Long.toString(id));
            try (ResultSet row = select.executeQuery()) {
                check(false, "setString of an id was compared as a varchar");
            } catch (java.sql.SQLException error) {
                check("42883".equals(error.getSQLState()),
                        "setString: no operator snowflake = character varying, not "
                                + error.getSQLState());
            }
            select.setObject(1, Long.toString(id), Types.OTHER);
            try (ResultSet row = select.executeQuery()) {
                check(row.next(), "setObject(Types.OTHER) of id " + id + " finds its row");
            }
        }
        String url = connection.getMetaData().getURL();
        try (Connection untyped = DriverManager.getConnection(
                     url + (url.contains("?") ? "&" : "?") + "stringtype=unspecified",
                     System.getenv("PGUSER"), System.getenv("PGPASSWORD"));
                PreparedStatement select = untyped.prepareStatement(query);
                PreparedStatement extremes = untyped.prepareStatement(
                        "SELECT max(id), max(id)::text FROM java_typed_ids")) {
            select.setString(1, Long.toString(id));
            try (ResultSet row = select.executeQuery()) {
                check(row.next(), "with stringtype=unspecified setString of id " + id
                        + " finds its row");
            }
            try (ResultSet row = extremes.executeQuery()) {
                check(row.next() && row.getMetaData().getColumnTypeName(1).equals("snowflake"),
                        "max(id) is of the type");
                exactId(row, 1, row.getString(2), "max(id)");
            }
        }
    }

    // A copy of a tracked table by id, kept as an application keeps it: from pages of changes.
    private static final class Follower {
        final Map<Long, String> copy = new HashMap<>();
        long cursor = 0;
        int changes = 0;

        // Applies pages until one is not full (nothing below the settled bound is left) and the
        // cursor is past `past`.
        void catchUp(PreparedStatement page, long past) throws Exception {
            int read;
            do {
                page.setLong(1, cursor);
                read = 0;
                try (ResultSet rows = page.executeQuery()) {
                    while (rows.next()) {
                        read++;
                        long id = rows.getLong("id");
                        switch (rows.getString("kind")) {
                            case "row" -> copy.put(id, rows.getString("note"));
                            case "delete" -> copy.remove(id);
                            case "truncate" -> copy.clear();
                            default -> cursor = rows.getLong("version");
                        }
                    }
                }
                changes += read - 1;
            } while (read - 1 == PAGE || cursor <= past);
        }
    }

    // Following changes (1.12): while two other connections write, one of them in a transaction
    // left open (holding the settled bound) as later ones commit, the changes applied to a map by
    // id (a long, exact) must rebuild the table, deletes, a key change and a TRUNCATE included.
    private static void followChanges(Connection reader) throws Exception {
        String url = reader.getMetaData().getURL();
        Follower follower = new Follower();
        try (Connection writerConnection = DriverManager.getConnection(
                     url, System.getenv("PGUSER"), System.getenv("PGPASSWORD"));
                Connection holderConnection = DriverManager.getConnection(
                        url, System.getenv("PGUSER"), System.getenv("PGPASSWORD"));
                Statement statement = reader.createStatement();
                Statement writer = writerConnection.createStatement();
                Statement holder = holderConnection.createStatement();
                PreparedStatement page = reader.prepareStatement(
                        "SELECT version, kind, (data).id, (data).note "
                        + "FROM snowflake_changes(NULL::follow_java, ?, " + PAGE + ")")) {
            statement.execute("DROP TABLE IF EXISTS follow_java");
            statement.execute("CREATE TABLE follow_java (id bigint PRIMARY KEY DEFAULT "
                    + "snowflake_nextval(), note text)");
            statement.execute("SELECT snowflake_track_changes('follow_java')");
            writer.execute("INSERT INTO follow_java (note) "
                    + "SELECT 'first ' || g FROM generate_series(1, 7) g");
            follower.catchUp(page, -1);
            holderConnection.setAutoCommit(false);
            holder.execute("INSERT INTO follow_java (note) VALUES ('held open')");
            writer.execute("UPDATE follow_java SET note = note || ' edited' "
                    + "WHERE note IN ('first 1', 'first 4')");
            writer.execute(
                    "UPDATE follow_java SET id = snowflake_nextval() WHERE note = 'first 2'");
            writer.execute("DELETE FROM follow_java WHERE note IN ('first 3', 'first 5')");
            follower.catchUp(page, -1);
            holderConnection.commit();
            follower.catchUp(page, -1);
            writer.execute("TRUNCATE follow_java");
            writer.execute("INSERT INTO follow_java (note) "
                    + "SELECT 'second ' || g FROM generate_series(1, 6) g");
            follower.catchUp(page, -1);
            writer.execute(
                    "UPDATE follow_java SET note = 'second 1 edited' WHERE note = 'second 1'");
            writer.execute(
                    "UPDATE follow_java SET id = snowflake_nextval() WHERE note = 'second 2'");
            writer.execute("DELETE FROM follow_java WHERE note IN ('second 3', 'second 4')");
            try (ResultSet last = statement.executeQuery("SELECT max(version) FROM ("
                    + "SELECT version FROM follow_java UNION ALL SELECT version FROM "
                    + "snowflake_catalog.snowflake_tombstones "
                    + "WHERE tracked = 'follow_java'::regclass) AS changes")) {
                check(last.next(), "the last version is read");
                follower.catchUp(page, last.getLong(1));
            }
            Map<Long, String> table = new HashMap<>();
            try (ResultSet rows = statement.executeQuery("SELECT id, note FROM follow_java")) {
                while (rows.next()) {
                    table.put(rows.getLong(1), rows.getString(2));
                }
            }
            check(follower.copy.equals(table), "the copy built from the changes equals the table: "
                    + follower.copy + " != " + table);
            System.out.println("PostgreSQL JDBC: followed " + follower.changes
                    + " changes, copy equals the table (" + table.size() + " rows)");
        }
    }
}
