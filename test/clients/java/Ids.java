// The PostgreSQL JDBC driver and Snowflake ids: bigint is a Java long, exact. Connects to the
// URL given as the first argument as PGUSER with PGPASSWORD; exits non-zero on the first mismatch.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

public class Ids {
    private static final int ROWS = 1000;
    private static final long EPOCH_MS = 1288834974657L;

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
        }
    }
}
