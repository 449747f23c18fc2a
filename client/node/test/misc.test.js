'use strict';
// The rest of the binding: the native Handle, SELECT, ordering against
// unanswered commands, pipelines and MULTI, other commands, worker
// threads, a daemon with a password.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const Redis = require('ioredis');
const ShmkvRedis = require('..');
const { Handle } = ShmkvRedis;
const { Daemon, infoField, ready, within } = require('./daemon');
const { load } = require('./data');

let d;
const clients = [];

function client(Cls, opts = {}, sock = d.sock) {
  const c = new Cls({ path: sock, ...opts });
  c.on('error', () => {}); // restarts and refusals are what some tests are about
  clients.push(c);
  return c;
}

before(async () => {
  d = await new Daemon().start();
  const loader = client(Redis);
  await load(loader);
});

after(async () => {
  for (const c of clients) c.disconnect();
  await d.destroy();
});

test('Handle: synchronous reads, replies as values, failures thrown', () => {
  const h = new Handle(d.sock, {});
  try {
    assert.equal(h.cacheError(), null);
    assert.equal(h.command(['SET', 'hd:k', 'v1']), 'OK');
    for (let i = 0; i < 2; i++) {
      assert.equal(h.get('hd:k'), 'v1');
      assert.deepEqual(h.get(Buffer.from('hd:k'), ShmkvRedis.BUFFERS), Buffer.from('v1'));
      assert.equal(h.get('nokey'), null);
      assert.deepEqual(h.command(['HMGET', 'h:small', 'f1', 'nof']), ['v1', null]);
      assert.equal(h.command(['HLEN', 'h:big']), 1000);
      assert.equal(h.command(['HLEN', 'h:big'], ShmkvRedis.INT_STRINGS), '1000');
    }
    // Latin-1 carriers: one character a byte, a Buffer past 4 KiB.
    h.command(['SET', 'hd:bin', Buffer.from([0, 0xc3, 0xff, 0x80])]);
    const l1 = h.get('hd:bin', ShmkvRedis.LATIN1);
    assert.equal(typeof l1, 'string');
    assert.deepEqual(Buffer.from(l1, 'latin1'), Buffer.from([0, 0xc3, 0xff, 0x80]));
    assert.ok(Buffer.isBuffer(h.get('s:big', ShmkvRedis.LATIN1)));
    const st = h.stats();
    assert.ok(st.hits >= 4, JSON.stringify(st));
    assert.equal(st.attaches, 1);
    const e = h.get('h:small');
    assert.ok(e instanceof Error);
    assert.match(e.message, /^WRONGTYPE /);
    const e2 = h.command(['NOSUCHCOMMAND']);
    assert.ok(e2 instanceof Error);
    assert.match(e2.message, /^ERR unknown command/);
    // An error inside an array stays in its place.
    assert.equal(h.command(['MULTI']), 'OK');
    assert.equal(h.command(['INCR', 'h:small']), 'QUEUED');
    assert.equal(h.command(['GET', 'hd:k']), 'QUEUED');
    const ex = h.command(['EXEC']);
    assert.ok(ex[0] instanceof Error);
    assert.equal(ex[1], 'v1');
    assert.throws(() => h.command('GET'), TypeError);
    assert.throws(() => h.command(['GET', 1]), TypeError);
    assert.throws(() => h.command([]), TypeError);
  } finally {
    h.close();
  }
  assert.throws(() => h.get('k'), { code: 'SHMKV_CLOSED' });
  h.close(); // twice is fine
  assert.throws(() => new Handle(path.join(d.dir, 'no.sock'), {}), { code: 'SHMKV_ECONNECT' });
});

test('SELECT: the handle follows the client to another database', async () => {
  const plain = client(Redis, { db: 2 });
  const shm = client(ShmkvRedis, { db: 2 });
  await plain.set('sel:k', 'db2');
  assert.equal(await shm.get('sel:k'), 'db2');
  assert.equal(await shm.get('sel:k'), 'db2');
  assert.equal(await shm.select(3), 'OK');
  assert.equal(await shm.get('sel:k'), null);
  await shm.set('sel:k', 'db3');
  const h0 = shm.shmStats().hits;
  assert.equal(await shm.get('sel:k'), 'db3');
  assert.equal(await shm.get('sel:k'), 'db3');
  assert.ok(shm.shmStats().hits > h0, 'served from shared memory in db 3');
  await shm.call('SELECT', '2');
  assert.equal(await shm.get('sel:k'), 'db2');
  // A SELECT the daemon refuses leaves both where they were.
  await assert.rejects(shm.select(100000), /ERR/);
  assert.equal(await shm.get('sel:k'), await plain.get('sel:k'));
});

test('a read does not overtake commands sent before it', async () => {
  const shm = client(ShmkvRedis);
  await ready(shm);
  await shm.set('ord:k', 'old');
  assert.equal(await shm.get('ord:k'), 'old');
  shm.set('ord:k', 'new'); // not awaited
  const p = shm.get('ord:k');
  assert.equal(await p, 'new');
  shm.del('ord:k');
  assert.equal(await shm.get('ord:k'), null);
  const auto = client(ShmkvRedis, { enableAutoPipelining: true });
  await ready(auto);
  auto.set('ord:a', '1');
  assert.equal(await auto.get('ord:a'), '1');
});

test('pipelines and MULTI go through ioredis unchanged', async () => {
  const plain = client(Redis);
  const shm = client(ShmkvRedis);
  await Promise.all([ready(plain), ready(shm)]);
  const build = (c) => c.pipeline().get('s:str').hget('h:small', 'f1').getBuffer('s:bin')
    .get('h:small').zscore('z:small', 'm2').hgetall('h:small').exec();
  assert.deepEqual(await shm.pipeline().get('s:str').exec(), [[null, 'hello']]);
  const [a, b] = await Promise.all([build(plain), build(shm)]);
  assert.deepEqual(b, a);
  const tx = (c) => c.multi().get('s:str').hlen('h:big').smismember('set:small', 'a', 'q').exec();
  assert.deepEqual(await tx(shm), await tx(plain));
  // MULTI as a command: reads queue in the transaction, as with ioredis.
  assert.equal(await shm.multi({ pipeline: false }), 'OK');
  assert.equal(await shm.get('s:str'), 'QUEUED');
  assert.equal(await shm.hget('h:small', 'f1'), 'QUEUED');
  assert.deepEqual(await shm.exec(), [[null, 'hello'], [null, 'v1']]);
  const h0 = shm.shmStats() ? shm.shmStats().hits : 0;
  assert.equal(await shm.get('s:str'), 'hello');
  assert.equal(await shm.get('s:str'), 'hello');
  assert.ok(shm.shmStats().hits > h0, 'served again after EXEC');
});

test('every other command works through ioredis', async () => {
  const plain = client(Redis);
  const shm = client(ShmkvRedis);
  for (const c of [plain, shm]) {
    const k = c === plain ? 'oc:p' : 'oc:s';
    assert.equal(await c.set(k, '1'), 'OK');
    assert.equal(await c.incr(k), 2);
    assert.equal(await c.hset(`${k}:h`, { a: '1', b: '2' }), 2);
    assert.deepEqual(await c.hgetall(`${k}:h`), { a: '1', b: '2' });
    assert.deepEqual(await c.lrange('l:small', 0, -1), ['a', 'b', 'c']);
    assert.equal(await c.ping(), 'PONG');
  }
  const dup = shm.duplicate();
  dup.on('error', () => {});
  clients.push(dup);
  assert.ok(dup instanceof ShmkvRedis);
  assert.equal(await dup.get('s:str'), 'hello');
  assert.equal(await dup.get('s:str'), 'hello');
  assert.ok(dup.shmStats().hits >= 1);
  // A closed client answers as ioredis does.
  const gone = new ShmkvRedis(d.sock);
  const plainGone = new Redis(d.sock);
  for (const c of [gone, plainGone]) c.on('error', () => {});
  await gone.get('s:str');
  await gone.quit();
  await plainGone.quit();
  const [e1, e2] = await Promise.all([gone.get('s:str').catch((e) => e),
    plainGone.get('s:str').catch((e) => e)]);
  assert.equal(e1.message, e2.message);
  assert.equal(gone.shmStats(), null, 'the handle closes with the client');
});

function runWorker(data) {
  return within(new Promise((resolve, reject) => {
    const w = new Worker(path.join(__dirname, 'worker.js'), { workerData: data });
    w.once('message', (m) => {
      if (m.error) reject(new Error(m.error));
      else w.terminate().then(() => resolve(m));
    });
    w.once('error', reject);
  }), 15000, 'worker');
}

test('worker threads: each loads the addon and opens its own handle', async () => {
  const plain = client(Redis);
  await plain.set('w:k', 'wv');
  const hits0 = infoField(await plain.info('shmcache'), 'shm_local_hits');
  const results = await Promise.all([
    runWorker({ sock: d.sock }),
    runWorker({ sock: d.sock }),
    runWorker({ sock: d.sock, leaveOpen: true }),
  ]);
  for (const r of results) {
    assert.deepEqual(r.values, ['wv', 'v1', 'wv', 'v1', 'wv', 'v1', 'wv']);
    assert.ok(r.stats.hits >= 2, JSON.stringify(r.stats));
  }
  const hits1 = infoField(await plain.info('shmcache'), 'shm_local_hits');
  assert.ok(hits1 - hits0 >= 6, `shm_local_hits ${hits0} -> ${hits1}`);
  // And this thread still reads.
  const shm = client(ShmkvRedis);
  assert.equal(await shm.get('w:k'), 'wv');
});

test('a daemon with a password: the handle authenticates as ioredis does', async () => {
  const pd = await new Daemon(['--requirepass', 'sekrit']).start();
  try {
    const loader = client(Redis, { password: 'sekrit' }, pd.sock);
    await loader.set('pw:k', 'pv');
    const shm = client(ShmkvRedis, { password: 'sekrit' }, pd.sock);
    assert.equal(await shm.get('pw:k'), 'pv');
    assert.equal(await shm.get('pw:k'), 'pv');
    assert.ok(shm.shmStats().hits >= 1, 'served from shared memory');
    const named = client(ShmkvRedis, { username: 'default', password: 'sekrit' }, pd.sock);
    assert.equal(await named.get('pw:k'), 'pv');
    assert.equal(await named.get('pw:k'), 'pv');
    assert.ok(named.shmStats().hits >= 1);
    // A wrong password fails as it does with ioredis, and never opens a handle.
    const bad = client(ShmkvRedis, { password: 'wrong', maxRetriesPerRequest: 0,
      retryStrategy: () => null }, pd.sock);
    const badPlain = client(Redis, { password: 'wrong', maxRetriesPerRequest: 0,
      retryStrategy: () => null }, pd.sock);
    const [e1, e2] = await Promise.all([bad.get('pw:k').catch((e) => e),
      badPlain.get('pw:k').catch((e) => e)]);
    assert.ok(e1 instanceof Error && e2 instanceof Error);
    assert.equal(e1.message, e2.message);
    assert.equal(bad.shmStats(), null);
    for (const c of [loader, shm, named, bad, badPlain]) c.disconnect();
  } finally {
    await pd.destroy();
  }
});
