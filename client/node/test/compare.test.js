'use strict';
// Every served read through ShmkvRedis against plain ioredis on the same
// daemon: same values, same types, same errors, in Promise and callback
// style, in string and Buffer variants, under ioredis's reply options.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const ShmkvRedis = require('..');
const { Daemon, infoField, ready, within, sleep } = require('./daemon');
const { load, CALLS } = require('./data');

let d;
const clients = [];

function pair(opts = {}) {
  const plain = new Redis({ path: d.sock, ...opts });
  const shm = new ShmkvRedis({ path: d.sock, ...opts });
  // The restart makes both report the closed socket: expected there.
  plain.on('error', () => {});
  shm.on('error', () => {});
  clients.push(plain, shm);
  return { plain, shm };
}

// What a call gave: its value, or its error's class, name, message and
// the command ioredis reports with it.
function outcomeOf(err, val) {
  if (err) {
    return { err: { cls: err.constructor, name: err.name, message: err.message, command: err.command } };
  }
  return { val };
}

async function viaPromise(client, method, args) {
  try {
    return outcomeOf(null, await within(client[method](...args), 5000, method));
  } catch (e) {
    return outcomeOf(e);
  }
}

function viaCallback(client, method, args) {
  return within(new Promise((resolve) => {
    const ret = client[method](...args, (err, val) => resolve(outcomeOf(err, val)));
    assert.equal(typeof ret.then, 'function', `${method} with a callback returns a promise`);
  }), 5000, method);
}

// TTLs move between two reads: equal types, values within a second.
function isTtlRead(call) {
  return (call[0] === 'ttl' || call[0] === 'pttl') && call[1].startsWith('ttl:');
}

function assertSame(got, want, call, what) {
  const label = `${what} ${JSON.stringify(call)}`;
  if (isTtlRead(call) && 'val' in got && 'val' in want) {
    assert.equal(typeof got.val, typeof want.val, label);
    const tol = call[0] === 'ttl' ? 1 : 1000;
    assert.ok(Math.abs(Number(got.val) - Number(want.val)) <= tol, `${label}: ${got.val} vs ${want.val}`);
    return;
  }
  assert.deepStrictEqual(got, want, label);
}

async function shmHits() {
  const probe = clients[0];
  return infoField(await probe.info('shmcache'), 'shm_local_hits');
}

before(async () => {
  d = await new Daemon().start();
  const loader = new Redis({ path: d.sock });
  const prefixed = new Redis({ path: d.sock, keyPrefix: 'pfx:' });
  await load(loader);
  await load(prefixed);
  loader.disconnect();
  prefixed.disconnect();
});

after(async () => {
  for (const c of clients) c.disconnect();
  await d.destroy();
});

// ioredis's reply options: each changes what some read returns.
const VARIANTS = [
  ['defaults', {}],
  ['stringNumbers', { stringNumbers: true }],
  ['RESP2', { protocol: 2 }],
  ['RESP2 stringNumbers', { protocol: 2, stringNumbers: true }],
  ['replyMapping resp3', { replyMapping: 'resp3' }],
  ['keyPrefix', { keyPrefix: 'pfx:' }],
];

for (const [label, opts] of VARIANTS) {
  test(`served reads equal ioredis's (${label})`, async () => {
    const { plain, shm } = pair(opts);
    await Promise.all([ready(plain), ready(shm)]);
    for (let round = 0; round < 2; round++) { // a miss that fills, then a hit
      for (const call of CALLS) {
        const [cmd, ...args] = call;
        for (const method of [cmd, `${cmd}Buffer`]) {
          const want = await viaPromise(plain, method, args);
          assertSame(await viaPromise(shm, method, args), want, call, `${method} promise`);
          const wantCb = await viaCallback(plain, method, args);
          assertSame(await viaCallback(shm, method, args), wantCb, call, `${method} callback`);
        }
      }
    }
    const st = shm.shmStats();
    assert.ok(st && st.hits > CALLS.length, `hits from shared memory: ${JSON.stringify(st)}`);
  });
}

test('reads count as local hits in INFO and in the handle', async () => {
  const { shm } = pair();
  await ready(shm);
  await shm.get('s:str'); // opens the handle, fills the cache
  const before = await shmHits();
  const st0 = shm.shmStats();
  for (let i = 0; i < 50; i++) assert.equal(await shm.get('s:str'), 'hello');
  assert.deepEqual(await shm.hmget('h:big', 'f1', 'f2'), ['v1', 'v2']);
  assert.deepEqual(await shm.hmget('h:big', 'f1', 'f2'), ['v1', 'v2']);
  const st1 = shm.shmStats();
  assert.ok(st1.hits - st0.hits >= 51, `handle hits ${st0.hits} -> ${st1.hits}`);
  const afterHits = await shmHits();
  assert.ok(afterHits - before >= 51, `shm_local_hits ${before} -> ${afterHits}`);
});

test('a key read before and after PEXPIRE 200 ends', async () => {
  const { plain, shm } = pair();
  await Promise.all([ready(plain), ready(shm)]);
  await plain.set('exp:k', 'v');
  await plain.hset('exp:h', 'f', 'v');
  assert.equal(await plain.pexpire('exp:k', 200), 1);
  assert.equal(await plain.pexpire('exp:h', 200), 1);
  for (let i = 0; i < 2; i++) {
    assert.equal(await shm.get('exp:k'), 'v');
    assert.equal(await shm.hget('exp:h', 'f'), 'v');
    assert.equal(await shm.exists('exp:k', 'exp:h'), 2);
    const pttl = await shm.pttl('exp:k');
    assert.ok(pttl > 0 && pttl <= 200, `pttl ${pttl}`);
  }
  const h0 = shm.shmStats().hits;
  await sleep(300);
  for (const call of [['get', 'exp:k'], ['hget', 'exp:h', 'f'], ['exists', 'exp:k', 'exp:h'],
    ['pttl', 'exp:k'], ['ttl', 'exp:h'], ['type', 'exp:k'], ['strlen', 'exp:k'], ['hlen', 'exp:h']]) {
    const [cmd, ...args] = call;
    const got = await viaPromise(shm, cmd, args);
    assertSame(got, await viaPromise(plain, cmd, args), call, 'after expiry');
  }
  assert.equal(await shm.get('exp:k'), null);
  assert.ok(shm.shmStats().hits >= h0, 'reads after expiry');
});

test('the daemon restarting: the next call answers correctly', async () => {
  const { plain, shm } = pair();
  await Promise.all([ready(plain), ready(shm)]);
  await plain.set('rs:k', 'before');
  assert.equal(await shm.get('rs:k'), 'before');
  assert.equal(await shm.get('rs:k'), 'before');
  const attaches = shm.shmStats().attaches;
  const raw = new ShmkvRedis.Handle(d.sock, {});
  assert.equal(raw.get('rs:k'), 'before');

  await d.stop();
  await d.start(); // same folder and socket; the data is on disk
  // A handle's next call reconnects by itself and maps the new segment.
  try {
    assert.equal(raw.get('rs:k'), 'before');
    assert.equal(raw.get('rs:k'), 'before');
    const rst = raw.stats();
    assert.equal(rst.attaches, 2, JSON.stringify(rst));
    assert.ok(rst.hits >= 2, JSON.stringify(rst));
  } finally {
    raw.close();
  }
  // The very next call, whatever state ioredis is in (it may not have seen
  // the socket close yet): the same answer as before, no error.
  assert.equal(await within(shm.get('rs:k'), 10000, 'get after restart'), 'before');
  assert.deepEqual(await within(shm.mget('rs:k', 'nokey'), 10000, 'mget'), ['before', null]);
  await Promise.all([ready(plain), ready(shm)]);
  await plain.set('rs:k', 'after');
  for (let i = 0; i < 3; i++) assert.equal(await shm.get('rs:k'), 'after');
  assert.equal(await shm.hget('h:small', 'f1'), 'v1');
  const st = shm.shmStats();
  assert.ok(st !== null && st.attaches > attaches, `re-attached: ${JSON.stringify(st)}`);
  // Served from the new segment: the hits move again.
  const h0 = st.hits;
  assert.equal(await shm.get('rs:k'), 'after');
  assert.ok(shm.shmStats().hits > h0, 'a hit after the restart');
});
