# ActiveRecord 6.1 beside the extension (1.12): schema.rb and db:truncate_all leave it alone.
#
# The extension's tables live in snowflake_catalog, which Rails does not read, and the view left
# for older scripts is no table to it. Before 1.12 schema.rb said "Could not dump table" of them
# and db:truncate_all, run as a superuser, emptied the setups of time partitions. Connects with
# the PG* environment variables to a database it makes; exits non-zero on the first mismatch.
require "active_record"
require "pg"
require "stringio"

DATABASE = "rails_schema"

def check(condition, what)
  raise "not so: #{what}" unless condition
end

admin = PG.connect(dbname: "postgres")
admin.exec("SET client_min_messages = warning")
admin.exec("DROP DATABASE IF EXISTS #{DATABASE}")
admin.exec("CREATE DATABASE #{DATABASE}")
admin.close
setup = PG.connect(dbname: DATABASE)
setup.exec(<<~SQL)
  CREATE EXTENSION snowflake;
  CREATE SCHEMA timeline;
  CREATE TABLE timeline.events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY)
      PARTITION BY RANGE (id);
  SELECT count(*) FROM snowflake_partition_table('timeline.events', '1 day', 1);
  CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
  SELECT snowflake_track_changes('orders');
  INSERT INTO orders (note) VALUES ('first');
SQL
setup.close

ActiveRecord::Base.establish_connection(adapter: "postgresql", database: DATABASE,
                                        host: ENV["PGHOST"], port: ENV["PGPORT"],
                                        username: ENV["PGUSER"], password: ENV["PGPASSWORD"])
connection = ActiveRecord::Base.connection
dump = StringIO.new
ActiveRecord::SchemaDumper.dump(connection, dump)
check(!dump.string.include?("Could not dump"), "schema.rb dumps every table: #{dump.string}")
check(dump.string !~ /snowflake_(partitioned_tables|tracked_tables|tombstones)/,
      "schema.rb names no table of the extension")
check(dump.string.include?('create_table "orders"'), "schema.rb has the application's table")

# What db:truncate_all does, as the superuser of the PG* variables.
connection.truncate_tables(*connection.tables)
setups = connection.select_value(
  "SELECT count(*) FROM snowflake_catalog.snowflake_partitioned_tables")
check(setups == 1, "the setup of time partitions is kept (#{setups})")
check(connection.select_value("SELECT count(*) FROM orders").zero?,
      "the application's table is empty")
puts "ActiveRecord #{ActiveRecord::VERSION::STRING}: schema.rb and truncate_all " \
     "leave the extension's tables alone"
