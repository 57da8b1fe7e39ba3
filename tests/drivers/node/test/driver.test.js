// Driver tests: the Apache Cassandra Node.js driver (cassandra-driver 4.x)
// against a running Rocksandra server at $ROCKSANDRA_HOST:$ROCKSANDRA_PORT.
// The driver speaks protocol v3 and v4 (and DataStax's DSE versions, which
// it tries first and the server must refuse so that it falls back).
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const cassandra = require('cassandra-driver');

const { types } = cassandra;
const codes = types.responseErrorCodes;
const HOST = process.env.ROCKSANDRA_HOST || '127.0.0.1';
const PORT = Number(process.env.ROCKSANDRA_PORT || '9042');

const clients = [];

async function connect(options = {}) {
  const client = new cassandra.Client({
    contactPoints: [HOST],
    localDataCenter: 'datacenter1',
    protocolOptions: { port: PORT, ...(options.protocolOptions || {}) },
    socketOptions: { connectTimeout: 10000, readTimeout: 20000 },
    queryOptions: { consistency: types.consistencies.one },
    ...options.client,
  });
  await client.connect();
  clients.push(client);
  return client;
}

after(async () => {
  await Promise.all(clients.map((c) => c.shutdown()));
});

let keyspaces = 0;

// A uniquely named keyspace, dropped by the caller's `finally`.
async function newKeyspace(client) {
  keyspaces += 1;
  const name = `node_${process.pid}_${Date.now() % 1000000}_${keyspaces}`;
  await client.execute(
    `CREATE KEYSPACE ${name} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
  return name;
}

async function rejects(promise, code) {
  try {
    await promise;
  } catch (err) {
    assert.equal(err.code, code, `${err.message} (code 0x${(err.code || 0).toString(16)})`);
    assert.ok(err.message.length > 0);
    return err;
  }
  assert.fail(`expected error code 0x${code.toString(16)}`);
}

test('connects, negotiates a protocol and reads the metadata', async () => {
  const client = await connect();
  // The driver asks for DSE_V2 first; the server's refusal leads it to v4.
  assert.equal(client.controlConnection.protocolVersion, types.protocolVersion.v4);
  const hosts = client.hosts.values();
  assert.equal(hosts.length, 1);
  assert.equal(hosts[0].datacenter, 'datacenter1');
  assert.equal(hosts[0].rack, 'rack1');
  assert.ok(hosts[0].tokens.length > 0, 'the host has tokens');
  assert.match(hosts[0].cassandraVersion, /^\d+\.\d+/);

  const ks = await newKeyspace(client);
  try {
    await client.execute(
      `CREATE TABLE ${ks}.users (id uuid, bucket int, name text, tags set<text>, ` +
      `PRIMARY KEY ((id, bucket), name)) WITH CLUSTERING ORDER BY (name DESC) AND comment = 'c'`);
    await client.metadata.refreshKeyspace(ks);
    assert.ok(client.metadata.keyspaces[ks], 'the keyspace is in the metadata');
    assert.equal(client.metadata.keyspaces[ks].strategy, 'org.apache.cassandra.locator.SimpleStrategy');
    const table = await client.metadata.getTable(ks, 'users');
    assert.deepEqual(table.partitionKeys.map((c) => c.name), ['id', 'bucket']);
    assert.deepEqual(table.clusteringKeys.map((c) => c.name), ['name']);
    assert.deepEqual(table.clusteringOrder, ['DESC']);
    assert.equal(table.comment, 'c');
    assert.equal(table.columnsByName.tags.type.code, types.dataTypes.set);

    // Token awareness: the only host is the replica of any key.
    const key = Buffer.from('00000001', 'hex');
    const token = client.metadata.tokenizer.hash(key);
    const replicas = client.metadata.getReplicas(ks, key);
    assert.ok(token, 'murmur3 token');
    assert.equal(replicas.length, 1);
    assert.equal(replicas[0].address, hosts[0].address);
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});

test('protocol v3 on request', async () => {
  const client = await connect({ protocolOptions: { maxVersion: 3 } });
  assert.equal(client.controlConnection.protocolVersion, types.protocolVersion.v3);
  const rs = await client.execute('SELECT release_version FROM system.local');
  assert.equal(rs.rowLength, 1);
});

test('scalar values round-trip, simple and prepared', async () => {
  const client = await connect();
  const ks = await newKeyspace(client);
  try {
    await client.execute(
      `CREATE TABLE ${ks}.scalars (k int PRIMARY KEY, t text, a ascii, b bigint, vi varint, ` +
      `f float, d double, dec decimal, bo boolean, u uuid, tu timeuuid, ts timestamp, ` +
      `dt date, tm time, ip inet, bl blob, si smallint, ti tinyint, du duration)`);
    const values = {
      t: 'héllo ☃', a: 'ascii', b: types.Long.fromString('-9007199254740993'),
      vi: types.Integer.fromString('123456789012345678901234567890'),
      f: 1.5, d: -2.25, dec: types.BigDecimal.fromString('-12345.678901'), bo: true,
      u: types.Uuid.random(), tu: types.TimeUuid.now(), ts: new Date(1700000000123),
      dt: types.LocalDate.fromString('2024-02-29'), tm: types.LocalTime.fromString('13:14:15.123456789'),
      ip: types.InetAddress.fromString('2001:db8::1'), bl: Buffer.from([0, 1, 2, 255]),
      si: -32768, ti: 127, du: types.Duration.fromString('1y2mo3d4h5m6s7ms'),
    };
    const columns = Object.keys(values);
    const insert = `INSERT INTO ${ks}.scalars (k, ${columns.join(', ')}) ` +
      `VALUES (?, ${columns.map(() => '?').join(', ')})`;
    for (const [k, prepare] of [[1, true], [2, false]]) {
      await client.execute(insert, [k, ...columns.map((c) => values[c])],
        { prepare, hints: prepare ? undefined : ['int', 'text', 'ascii', 'bigint', 'varint', 'float',
          'double', 'decimal', 'boolean', 'uuid', 'timeuuid', 'timestamp', 'date', 'time', 'inet',
          'blob', 'smallint', 'tinyint', 'duration'] });
      const row = (await client.execute(`SELECT * FROM ${ks}.scalars WHERE k = ?`, [k], { prepare: true })).first();
      for (const c of columns) {
        const got = row[c];
        const want = values[c];
        if (want && typeof want.equals === 'function') {
          assert.ok(want.equals(got), `${c} (prepare ${prepare}): ${got} != ${want}`);
        } else if (want instanceof Date) {
          assert.equal(got.getTime(), want.getTime(), c);
        } else if (Buffer.isBuffer(want)) {
          assert.ok(want.equals(got), c);
        } else {
          assert.equal(got, want, `${c} (prepare ${prepare})`);
        }
      }
    }
    // A column never written is null.
    await client.execute(`INSERT INTO ${ks}.scalars (k) VALUES (3)`);
    const row = (await client.execute(`SELECT t, b FROM ${ks}.scalars WHERE k = 3`)).first();
    assert.equal(row.t, null);
    assert.equal(row.b, null);
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});

test('collections, tuples, user types and static columns', async () => {
  const client = await connect();
  const ks = await newKeyspace(client);
  try {
    await client.execute(`CREATE TYPE ${ks}.address (street text, zip int)`);
    await client.execute(
      `CREATE TABLE ${ks}.c (p int, c int, l list<int>, s set<text>, m map<text, int>, ` +
      `tp tuple<int, text>, addr frozen<address>, st text static, PRIMARY KEY (p, c))`);
    const insert = `INSERT INTO ${ks}.c (p, c, l, s, m, tp, addr, st) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
    await client.execute(insert, [1, 1, [3, 1, 2], ['b', 'a'], { x: 1, y: 2 },
      new types.Tuple(7, 'seven'), { street: 'Main', zip: 12345 }, 'shared'], { prepare: true });
    await client.execute(`INSERT INTO ${ks}.c (p, c) VALUES (1, 2)`);
    await client.execute(`UPDATE ${ks}.c SET l = l + [4], s = s - {'a'}, m['z'] = 26 WHERE p = 1 AND c = 1`);
    const rows = (await client.execute(`SELECT * FROM ${ks}.c WHERE p = 1`, [], { prepare: true })).rows;
    assert.equal(rows.length, 2);
    const [first, second] = rows;
    assert.deepEqual(first.l, [3, 1, 2, 4]);
    assert.deepEqual(first.s, ['b']);
    assert.deepEqual(first.m, { x: 1, y: 2, z: 26 });
    assert.equal(first.tp.get(0), 7);
    assert.equal(first.tp.get(1), 'seven');
    assert.deepEqual({ ...first.addr }, { street: 'Main', zip: 12345 });
    assert.equal(first.st, 'shared');
    assert.equal(second.st, 'shared', 'a static column is the partition\'s');
    assert.equal(second.l, null);
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});

test('paging: automatic, by page state, streamed', async () => {
  const client = await connect();
  const ks = await newKeyspace(client);
  const partitions = 20;
  const perPartition = 50;
  const total = partitions * perPartition;
  try {
    await client.execute(`CREATE TABLE ${ks}.rows (p int, c int, v text, PRIMARY KEY (p, c))`);
    for (let p = 0; p < partitions; p += 1) {
      const queries = [];
      for (let c = 0; c < perPartition; c += 1) {
        queries.push({ query: `INSERT INTO ${ks}.rows (p, c, v) VALUES (?, ?, ?)`, params: [p, c, `v${p}-${c}`] });
      }
      await client.batch(queries, { prepare: true, logged: false });
    }
    const count = (await client.execute(`SELECT count(*) FROM ${ks}.rows`)).first().count;
    assert.equal(count.toNumber(), total);

    // eachRow with autoPage.
    const seen = new Set();
    await new Promise((resolve, reject) => {
      client.eachRow(`SELECT p, c, v FROM ${ks}.rows`, [], { prepare: true, fetchSize: 73, autoPage: true },
        (n, row) => {
          const key = `${row.p}/${row.c}`;
          if (seen.has(key)) reject(new Error(`row ${key} twice`));
          seen.add(key);
          if (row.v !== `v${row.p}-${row.c}`) reject(new Error(`row ${key}: ${row.v}`));
        },
        (err) => (err ? reject(err) : resolve()));
    });
    assert.equal(seen.size, total);

    // Manual paging with the page state.
    let pageState;
    let pages = 0;
    let rows = 0;
    do {
      const rs = await client.execute(`SELECT p, c FROM ${ks}.rows`, [], { prepare: true, fetchSize: 100, pageState });
      assert.ok(rs.rowLength <= 100);
      rows += rs.rowLength;
      pages += 1;
      pageState = rs.pageState;
      assert.ok(pages <= total, 'paging ends');
    } while (pageState);
    assert.equal(rows, total);
    assert.ok(pages >= total / 100);

    // A stream over one partition in descending order, small pages.
    const cs = [];
    await new Promise((resolve, reject) => {
      client.stream(`SELECT c FROM ${ks}.rows WHERE p = ? ORDER BY c DESC`, [7], { prepare: true, fetchSize: 7 })
        .on('readable', function onReadable() {
          let row;
          while ((row = this.read())) cs.push(row.c);
        })
        .on('end', resolve)
        .on('error', reject);
    });
    assert.deepEqual(cs, [...Array(perPartition).keys()].reverse());
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});

test('errors carry Cassandra\'s codes', async () => {
  const client = await connect();
  const ks = await newKeyspace(client);
  try {
    await client.execute(`CREATE TABLE ${ks}.t (k int PRIMARY KEY, v text)`);
    await rejects(client.execute(`SELEC * FROM ${ks}.t`), codes.syntaxError);
    const again = await rejects(client.execute(
      `CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`),
    codes.alreadyExists);
    assert.equal(again.keyspace, ks);
    const table = await rejects(client.execute(`CREATE TABLE ${ks}.t (k int PRIMARY KEY)`), codes.alreadyExists);
    assert.equal(table.keyspace, ks);
    assert.equal(table.table, 't');
    for (const query of [
      `SELECT * FROM ${ks}.no_such_table`,
      `SELECT nope FROM ${ks}.t`,
      `INSERT INTO ${ks}.t (v) VALUES ('x')`,
      `SELECT * FROM ${ks}.t WHERE v = 'x'`,
      'SELECT * FROM no_such_ks_xyz.t',
    ]) {
      await rejects(client.execute(query), codes.invalid);
    }
    await rejects(client.execute(`SELECT * FROM ${ks}.no_such_table WHERE k = ?`, [1], { prepare: true }),
      codes.invalid);
    // The connection still works.
    await client.execute(`INSERT INTO ${ks}.t (k, v) VALUES (?, ?)`, [1, 'ok'], { prepare: true });
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});

test('batches, TTL, counters and lightweight transactions', async () => {
  const ks = await newKeyspace(await connect());
  const client = await connect({ client: { keyspace: ks } });
  try {
    await client.execute('CREATE TABLE users (id int PRIMARY KEY, name text, email text)');
    await client.execute('CREATE TABLE hits (page text PRIMARY KEY, n counter)');
    await client.batch([
      { query: 'INSERT INTO users (id, name, email) VALUES (?, ?, ?)', params: [1, 'ann', 'a@x'] },
      { query: 'INSERT INTO users (id, name, email) VALUES (?, ?, ?)', params: [2, 'bob', 'b@x'] },
    ], { prepare: true });
    assert.equal((await client.execute('SELECT * FROM users')).rowLength, 2);

    await client.execute('INSERT INTO users (id, name) VALUES (3, ?) USING TTL 1000', ['tmp'], { prepare: true });
    const ttl = (await client.execute('SELECT TTL(name) AS t FROM users WHERE id = 3')).first().t;
    assert.ok(ttl > 990 && ttl <= 1000, `ttl ${ttl}`);

    await client.batch([
      { query: 'UPDATE hits SET n = n + 2 WHERE page = ?', params: ['/'] },
      { query: 'UPDATE hits SET n = n + 3 WHERE page = ?', params: ['/'] },
    ], { prepare: true, counter: true });
    assert.equal((await client.execute("SELECT n FROM hits WHERE page = '/'")).first().n.toNumber(), 5);

    const inserted = await client.execute('INSERT INTO users (id, name) VALUES (4, ?) IF NOT EXISTS', ['dan'], { prepare: true });
    assert.equal(inserted.wasApplied(), true);
    const again = await client.execute('INSERT INTO users (id, name) VALUES (4, ?) IF NOT EXISTS', ['eve'], { prepare: true });
    assert.equal(again.wasApplied(), false);
    assert.equal(again.first().name, 'dan');
    const updated = await client.execute("UPDATE users SET name = 'dan2' WHERE id = 4 IF name = 'dan'");
    assert.equal(updated.wasApplied(), true);
    const refused = await client.execute("UPDATE users SET name = 'x' WHERE id = 4 IF name = 'dan'");
    assert.equal(refused.wasApplied(), false);
    assert.equal(refused.first().name, 'dan2');
  } finally {
    await client.execute(`DROP KEYSPACE ${ks}`);
  }
});
