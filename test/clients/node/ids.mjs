// node-postgres and Snowflake ids: the default parser returns them as exact strings, a BigInt
// parser as exact BigInts, and JSON keeps them exact only as strings; a JavaScript Number cannot
// hold them. Connects with the PG* environment variables; exits non-zero on the first mismatch.
import assert from 'node:assert/strict';
import pg from 'pg';

const ROWS = 1000;
const EPOCH_MS = 1288834974657n;

// The fields of an id, computed here with BigInt, to compare with snowflake_decode().
function decodeLocally(id) {
  const value = BigInt(id);
  return {
    unixMs: (value >> 22n) + EPOCH_MS,
    datacenterId: Number((value >> 17n) & 31n),
    machineId: Number((value >> 12n) & 31n),
    sequence: Number(value & 4095n),
  };
}

// Inserts with DEFAULT snowflake_nextval() and RETURNING id, reads each row back by that id and
// checks the server's decoding against the client's; returns the ids as the client received them.
async function roundTrip(client, table) {
  await client.query(`CREATE TABLE ${table} (
      id bigint PRIMARY KEY DEFAULT snowflake_nextval(), label text NOT NULL)`);
  const inserted = await client.query(
    `INSERT INTO ${table} (label) SELECT 'row ' || g FROM generate_series(1, $1) g RETURNING id`,
    [ROWS]);
  const single = await client.query(`INSERT INTO ${table} (label) VALUES ('single') RETURNING id`);
  const ids = [...inserted.rows.map((row) => row.id), single.rows[0].id];
  assert.equal(new Set(ids.map(String)).size, ROWS + 1, 'every id is distinct');
  for (const id of ids) {
    const { rows } = await client.query(
      `SELECT id, id::text AS text, d.unix_ms, d.datacenter_id, d.machine_id, d.sequence
       FROM ${table}, snowflake_decode(id) d WHERE id = $1`, [id]);
    assert.equal(rows.length, 1, `the row of id ${id} is found by its id`);
    assert.equal(String(rows[0].id), rows[0].text, `id ${id} reads back exactly`);
    assert.equal(String(rows[0].id), String(id), `id ${id} is the one RETURNING gave`);
    const local = decodeLocally(id);
    assert.equal(BigInt(rows[0].unix_ms), local.unixMs, `id ${id}: timestamp`);
    assert.equal(rows[0].datacenter_id, local.datacenterId, `id ${id}: datacenter id`);
    assert.equal(rows[0].machine_id, local.machineId, `id ${id}: machine id`);
    assert.equal(rows[0].sequence, local.sequence, `id ${id}: sequence`);
  }
  return ids;
}

const client = new pg.Client();
await client.connect();
await client.query('DROP TABLE IF EXISTS node_default_ids, node_bigint_ids');

// The default: bigint arrives as a string, exact.
const strings = await roundTrip(client, 'node_default_ids');
assert.ok(strings.every((id) => typeof id === 'string'), 'bigint arrives as a string by default');
// The trap it avoids: a Number keeps 53 bits, and these ids are above 2^53.
const lost = strings.filter((id) => BigInt(Number(id)) !== BigInt(id));
assert.ok(lost.length > 0, 'Number() loses the last digits of Snowflake ids');
console.log(`node-postgres: ${strings.length} ids exact as strings; Number() would corrupt ` +
  `${lost.length} of them (${lost[0]} -> ${Number(lost[0])})`);

// BigInt: exact, and usable as a query parameter.
pg.types.setTypeParser(pg.types.builtins.INT8, (text) => BigInt(text));
const bigints = await roundTrip(client, 'node_bigint_ids');
assert.ok(bigints.every((id) => typeof id === 'bigint'), 'the BigInt parser gives BigInts');
console.log(`node-postgres: ${bigints.length} ids exact as BigInt`);

// JSON: JSON.stringify refuses a BigInt and JSON numbers are doubles, so an API sends ids as
// strings, made in SQL (id::text, or a JSON builder given id::text).
// An id a double cannot hold (most of them: only multiples of 256 fit at this size).
const sample = bigints.find((id) => BigInt(Number(id)) !== id);
assert.throws(() => JSON.stringify({ id: sample }), TypeError);
const { rows: [asJson] } = await client.query(
  `SELECT json_build_object('id', id::text, 'label', label)::text AS exact,
          row_to_json(t)::text AS as_number
   FROM node_bigint_ids t WHERE id = $1`, [sample]);
assert.equal(JSON.parse(asJson.exact).id, String(sample), 'id::text in JSON stays exact');
assert.notEqual(BigInt(JSON.parse(asJson.as_number).id), sample, 'a JSON number loses the id');
console.log(`node-postgres: JSON with id::text keeps ${JSON.parse(asJson.exact).id}; ` +
  `a JSON number turns it into ${JSON.parse(asJson.as_number).id}`);
await client.end();
