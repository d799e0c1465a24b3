// node-postgres and Snowflake ids: the default parser returns them as exact strings, a BigInt
// parser as exact BigInts, and JSON keeps them exact only as strings; a JavaScript Number cannot
// hold them. The snowflake type, whose OID pg-types does not know, arrives as a string, and
// PostgreSQL's JSON functions write it as one. A tracked table (1.12) is followed too, into a Map
// keyed by BigInt ids. Connects with the PG* environment variables; exits non-zero on the first
// mismatch.
import assert from 'node:assert/strict';
import pg from 'pg';

const ROWS = 1000;
const EPOCH_MS = 1288834974657n;
const PAGE = 3;

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
await client.query(
  'DROP TABLE IF EXISTS node_default_ids, node_bigint_ids, node_typed_ids, follow_node');

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

// The snowflake type (1.6) as the key, with a bigint column holding the same id next to it.
await client.query(`CREATE TABLE node_typed_ids (
    id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), legacy_id bigint, label text NOT NULL,
    doc jsonb)`);
const typed = await client.query(
  `INSERT INTO node_typed_ids (label) SELECT 'row ' || g FROM generate_series(1, $1) g
   RETURNING id`, [ROWS + 1]);
await client.query(`UPDATE node_typed_ids
    SET legacy_id = id, doc = jsonb_build_object('id', id, 'legacy_id', id::bigint)`);
const typedIds = typed.rows.map((row) => row.id);
const { rows: [{ oid: snowflakeOid }] } = await client.query(
  `SELECT 'snowflake'::regtype::oid AS oid`);
assert.equal(typed.fields[0].dataTypeID, snowflakeOid, 'the column arrives with the type\'s OID');
assert.ok(!Object.values(pg.types.builtins).includes(snowflakeOid), 'an OID pg-types has no name for');
assert.equal(pg.types.getTypeParser(snowflakeOid, 'text')('2127531778306396161'),
  '2127531778306396161', 'pg-types leaves a type it has no parser for as its text');
assert.ok(typedIds.every((id) => typeof id === 'string' && /^[1-9][0-9]{18}$/.test(id)),
  'the type arrives as a string of 19 digits, even with a BigInt parser set for bigint');
assert.ok(typedIds.every((id) => BigInt(id) > 2n ** 53n), 'every id is above 2^53');
assert.equal(new Set(typedIds).size, ROWS + 1, 'every id is distinct');

// Plain rows: the key is the exact string, the bigint beside it a BigInt of the same value.
const plain = await client.query('SELECT id, legacy_id, id::text AS text FROM node_typed_ids');
assert.equal(plain.rows.length, ROWS + 1);
for (const row of plain.rows) {
  assert.equal(row.id, row.text, `id ${row.text} arrives exactly`);
  assert.equal(row.legacy_id, BigInt(row.text), `the bigint copy of ${row.text} is the same id`);
}

// An array of the type arrives as one string, '{...}': pg-types has no parser for the array's OID
// either. Its array parser, given BigInt and set for that OID (here for one query), reads every
// element exactly.
const arrays = `SELECT array_agg(id ORDER BY id) AS ids, array_agg(id::text ORDER BY id) AS texts,
    'snowflake[]'::regtype::oid AS oid FROM node_typed_ids`;
const { rows: [raw] } = await client.query(arrays);
assert.equal(raw.ids, `{${raw.texts.join(',')}}`, 'a snowflake[] arrives as its text');
const arrayOfBigInts = (text) => pg.types.arrayParser.create(text, BigInt).parse();
const { rows: [withParser] } = await client.query({ text: arrays, types: {
  getTypeParser: (oid, format) => (oid === raw.oid ? arrayOfBigInts : pg.types.getTypeParser(oid, format)),
} });
assert.deepEqual(withParser.ids, withParser.texts.map(BigInt), 'with a parser, each element is exact');
console.log(`node-postgres: a snowflake[] of ${withParser.ids.length} ids exact as BigInts`);

// Whether each value of a parsed JSON document is the id it should be: `pairs` holds the id as the
// server wrote it in text and the value the driver's JSON.parse made of it. BigInt() of a Number
// is the double's exact value, so a rounded id differs here.
function assertExact(pairs, what) {
  assert.equal(pairs.length, ROWS + 1, `${what}: one value per row`);
  for (const [id, value] of pairs) {
    assert.equal(BigInt(value), BigInt(id), `${what}: ${value} is id ${id}`);
  }
}

// The bigint copy in the same JSON: a number, rounded to the nearest double. Returns how many ids
// changed and how many of those now name another row's id.
function assertRounded(pairs, what) {
  assert.ok(pairs.every(([, value]) => typeof value === 'number'), `${what}: JSON numbers`);
  const issued = new Set(typedIds);
  const changed = pairs.filter(([id, value]) => BigInt(value).toString() !== id);
  assert.ok(changed.length > pairs.length / 2, `${what}: most ids rounded (${changed.length})`);
  assert.throws(() => assertExact(pairs, what), assert.AssertionError,
    `${what}: the exactness check catches the rounding`);
  const another = changed.filter(([, value]) => issued.has(BigInt(value).toString()));
  return { changed: changed.length, another: another.length };
}

// row_to_json, json_agg and a jsonb column, each parsed by the driver's own JSON.parse: the type
// is an exact string, the bigint beside it is not.
const asRows = await client.query('SELECT id::text AS text, row_to_json(t) AS j FROM node_typed_ids t');
assert.ok(asRows.rows.every((row) => typeof row.j.id === 'string'), 'row_to_json: strings');
assertExact(asRows.rows.map((row) => [row.text, row.j.id]), 'row_to_json');
const rounded = assertRounded(asRows.rows.map((row) => [row.text, row.j.legacy_id]),
  'row_to_json bigint');
const aggregated = await client.query(`SELECT json_agg(id::text ORDER BY id) AS texts,
    json_agg(id ORDER BY id) AS ids, json_agg(legacy_id ORDER BY id) AS legacy
    FROM node_typed_ids`);
const [{ texts, ids: aggregatedIds, legacy }] = aggregated.rows;
assert.ok(aggregatedIds.every((id) => typeof id === 'string'), 'json_agg: strings');
assertExact(texts.map((text, i) => [text, aggregatedIds[i]]), 'json_agg');
assertRounded(texts.map((text, i) => [text, legacy[i]]), 'json_agg bigint');
const stored = await client.query('SELECT id::text AS text, doc FROM node_typed_ids');
assert.ok(stored.rows.every((row) => typeof row.doc.id === 'string'), 'jsonb column: strings');
assertExact(stored.rows.map((row) => [row.text, row.doc.id]), 'jsonb column');
assertRounded(stored.rows.map((row) => [row.text, row.doc.legacy_id]), 'jsonb column bigint');

// min() and max() keep the type (1.9): in JSON, as PostgREST's ?select=id.max() builds it, the
// largest id is an exact string, the largest bigint copy a number (rounded to a double).
const extremes = await client.query(`SELECT row_to_json(m) AS j, top::text AS text FROM
    (SELECT max(id) AS top, min(id) AS bottom, max(legacy_id) AS legacy_top FROM node_typed_ids) m`);
const [{ j: extremesJson, text: topText }] = extremes.rows;
assert.equal(extremesJson.top, topText, 'max(id) of the type is an exact string in JSON');
assert.equal(extremesJson.bottom, [...typedIds].sort()[0], 'min(id) too');
assert.equal(typeof extremesJson.legacy_top, 'number', "bigint's max() is a JSON number");

// Sent back as they came, all 1,001 in one array parameter, every row is found.
const found = await client.query('SELECT id FROM node_typed_ids WHERE id = ANY($1)', [typedIds]);
assert.deepEqual(found.rows.map((row) => row.id).sort(), [...typedIds].sort(),
  'WHERE id = ANY($1) with the 1,001 strings finds each row');
const one = await client.query('SELECT label FROM node_typed_ids WHERE id = $1', [typedIds[500]]);
assert.equal(one.rows[0].label, 'row 501', 'one string parameter finds its row');

// A parser set for the type's OID (here for one query) gives BigInts, exact.
const typesWithBigInt = {
  getTypeParser: (oid, format) => (oid === snowflakeOid ? BigInt : pg.types.getTypeParser(oid, format)),
};
const parsed = await client.query({ text: 'SELECT id, id::text AS text FROM node_typed_ids',
  types: typesWithBigInt });
assert.ok(parsed.rows.every((row) => typeof row.id === 'bigint' && row.id.toString() === row.text),
  'a parser set for the type gives exact BigInts');
console.log(`node-postgres: snowflake type (OID ${snowflakeOid}) arrives as ${typedIds.length} ` +
  `exact strings; row_to_json, json_agg and jsonb keep them exact while the bigint beside them ` +
  `is rounded (${rounded.changed} of ${typedIds.length} changed, ${rounded.another} into another ` +
  `row's id); ANY($1) of the 1,001 finds ${found.rows.length}`);

// Applies pages of changes to the copy, as an application follows a tracked table, until a page
// is not full (nothing below the settled bound is left) and the cursor is past `past`.
async function catchUp(client, follower, past = -1n) {
  for (;;) {
    const { rows } = await client.query(`SELECT version, kind, (data).id, (data).note
        FROM snowflake_changes(NULL::${follower.table}, $1, ${PAGE})`, [follower.cursor]);
    for (const { version, kind, id, note } of rows) {
      if (kind === 'row') {
        follower.copy.set(id, note);
      } else if (kind === 'delete') {
        follower.copy.delete(id);
      } else if (kind === 'truncate') {
        follower.copy.clear();
      } else {
        follower.cursor = version;
      }
    }
    follower.changes += rows.length - 1;
    if (rows.length - 1 < PAGE && follower.cursor > past) {
      return;
    }
  }
}

// Following changes (1.12): while two other connections write, one of them in a transaction left
// open (holding the settled bound) as later ones commit, the changes applied to a Map by id (a
// BigInt, exact) must rebuild the table, deletes, a key change and a TRUNCATE included.
async function followChanges(reader) {
  const follower = { table: 'follow_node', copy: new Map(), cursor: 0n, changes: 0 };
  await reader.query(`CREATE TABLE follow_node (
      id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text)`);
  await reader.query(`SELECT snowflake_track_changes('follow_node')`);
  const writer = new pg.Client();
  const holder = new pg.Client();
  await writer.connect();
  await holder.connect();
  await writer.query(
    `INSERT INTO follow_node (note) SELECT 'first ' || g FROM generate_series(1, 7) g`);
  await catchUp(reader, follower);
  await holder.query('BEGIN');
  await holder.query(`INSERT INTO follow_node (note) VALUES ('held open')`);
  await writer.query(
    `UPDATE follow_node SET note = note || ' edited' WHERE note IN ('first 1', 'first 4')`);
  await writer.query(`UPDATE follow_node SET id = snowflake_nextval() WHERE note = 'first 2'`);
  await writer.query(`DELETE FROM follow_node WHERE note IN ('first 3', 'first 5')`);
  await catchUp(reader, follower);
  await holder.query('COMMIT');
  await catchUp(reader, follower);
  await writer.query('TRUNCATE follow_node');
  await writer.query(
    `INSERT INTO follow_node (note) SELECT 'second ' || g FROM generate_series(1, 6) g`);
  await catchUp(reader, follower);
  await writer.query(`UPDATE follow_node SET note = 'second 1 edited' WHERE note = 'second 1'`);
  await writer.query(`UPDATE follow_node SET id = snowflake_nextval() WHERE note = 'second 2'`);
  await writer.query(`DELETE FROM follow_node WHERE note IN ('second 3', 'second 4')`);
  await writer.end();
  await holder.end();
  const { rows: [{ last }] } = await reader.query(`SELECT max(version) AS last FROM (
      SELECT version FROM follow_node
      UNION ALL SELECT version FROM snowflake_catalog.snowflake_tombstones WHERE tracked = 'follow_node'::regclass) AS changes`);
  await catchUp(reader, follower, last);
  const { rows } = await reader.query('SELECT id, note FROM follow_node');
  assert.deepEqual(follower.copy, new Map(rows.map((row) => [row.id, row.note])),
    'the copy built from the changes equals the table');
  console.log(`node-postgres: followed ${follower.changes} changes, copy equals the table ` +
    `(${rows.length} rows)`);
}
await followChanges(client);

// The traps: with a BigInt parser count(*) is a BigInt too, which JSON.stringify refuses; with
// pg.defaults.parseInt8 = true every bigint is a Number, rounded, while the type stays a string.
const { rows: [counted] } = await client.query('SELECT count(*) AS n FROM node_typed_ids');
assert.equal(typeof counted.n, 'bigint', 'the BigInt parser turns count(*) into a BigInt');
assert.throws(() => JSON.stringify(counted), TypeError, 'which JSON.stringify refuses');
pg.defaults.parseInt8 = true;
const asNumbers = await client.query('SELECT id, legacy_id FROM node_typed_ids');
assert.ok(asNumbers.rows.every((row) => typeof row.id === 'string'), 'parseInt8 leaves the type alone');
const corrupted = asNumbers.rows.filter((row) => BigInt(row.legacy_id).toString() !== row.id);
assert.ok(corrupted.length > asNumbers.rows.length / 2, 'parseInt8 rounds most bigint ids');
console.log(`node-postgres: parseInt8 = true corrupts ${corrupted.length} of ` +
  `${asNumbers.rows.length} bigint ids; count(*) under a BigInt parser breaks JSON.stringify`);
await client.end();
