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

// A read through shm that libshmkv answers from shared memory: tried again
// (a few times) while it is not, as a segment whose daemon was too busy to
// renew its lease in time is not read. Its value, and the commands the
// handle sent for it (none, on a hit).
async function hitRead(shm, method, args) {
  for (let i = 0; ; i++) {
    const st0 = shm.shmStats();
    const val = await shm[method](...args);
    const st1 = shm.shmStats();
    if (st0 && st1.hits > st0.hits) return { val, sent: st1.commands - st0.commands };
    assert.ok(i < 20, `${method} ${JSON.stringify(args)} never hit: ${JSON.stringify([st0, st1])}`);
    await sleep(50);
  }
}

test('small inline collections are read from shared memory, large ones from the daemon', async () => {
  const { plain, shm } = pair();
  await Promise.all([ready(plain), ready(shm)]);
  assert.deepStrictEqual(await shm.hgetall('h:three'), { a: '1', b: '2', c: '3' });
  assert.deepStrictEqual(await shm.zrange('z:three', 0, -1, 'WITHSCORES'),
    ['lo', '-inf', 'mid', '-2.5', 'hi', 'inf']);
  const small = [
    ['hgetall', 'h:three'], ['zrange', 'z:three', 0, -1, 'WITHSCORES'],
    ['zrange', 'z:three', 1, 2, 'withscores'], ['zrange', 'z:three', 0, -1], ['hgetall', 'h:small'],
    ['hkeys', 'h:three'], ['hvals', 'h:three'], ['smembers', 'set:int'], ['lrange', 'l:small', 0, -1],
    ['lrange', 'l:small', -2, 10],
  ];
  for (const call of small) {
    const [cmd, ...args] = call;
    await shm[cmd](...args); // a miss fills the cache, if it did not hold the key
    for (const method of [cmd, `${cmd}Buffer`]) {
      const { val, sent } = await hitRead(shm, method, args);
      assert.deepStrictEqual(val, await plain[method](...args), `${method} ${JSON.stringify(args)}`);
      assert.equal(sent, 0, `${method} ${JSON.stringify(args)}: nothing sent`);
    }
  }
  // Stored per element: libshmkv asks the daemon, every time.
  for (const call of [['hgetall', 'h:big'], ['zrange', 'z:big', 0, -1, 'WITHSCORES'], ['smembers', 'set:big'],
    ['lrange', 'l:big', 0, -1]]) {
    const [cmd, ...args] = call;
    await shm[cmd](...args);
    const st0 = shm.shmStats();
    const got = await shm[cmd](...args);
    assert.deepStrictEqual(got, await plain[cmd](...args), JSON.stringify(call));
    assert.ok(shm.shmStats().commands > st0.commands, `${JSON.stringify(call)} sent to the daemon`);
  }
  assert.equal(Object.keys(await shm.hgetall('h:big')).length, 1000);
  // ZRANGE with another option goes through ioredis: the handle is not used.
  const st0 = shm.shmStats();
  for (const args of [['z:three', 0, -1, 'REV'], ['z:three', 0, -1, 'REV', 'WITHSCORES'],
    ['z:three', '-inf', '+inf', 'BYSCORE', 'LIMIT', 0, 2, 'WITHSCORES']]) {
    assert.deepStrictEqual(await shm.zrange(...args), await plain.zrange(...args), JSON.stringify(args));
    assert.deepStrictEqual(await shm.zrangeBuffer(...args), await plain.zrangeBuffer(...args));
  }
  assert.deepStrictEqual(shm.shmStats(), st0);
});

test('ZRANGE WITHSCORES and HGETALL under RESP3 reply options', async () => {
  const b = (x) => Buffer.from(x);
  const want = {
    hgetallBuffer: { a: b('1'), b: b('2'), c: b('3') },
    zrangeBuffer: [b('lo'), b('-inf'), b('mid'), b('-2.5'), b('hi'), b('inf')],
  };
  for (const [opts, zrangeBuffer, served] of [
    [{}, want.zrangeBuffer, true],
    // RESP3 doubles: strings with stringNumbers, the members Buffers still.
    [{ stringNumbers: true }, [b('lo'), '-inf', b('mid'), '-2.5', b('hi'), 'inf'], true],
    // [member, number] pairs: ioredis shapes them, the handle is not used.
    [{ replyMapping: 'resp3' }, [[b('lo'), -Infinity], [b('mid'), -2.5], [b('hi'), Infinity]], false],
  ]) {
    const label = JSON.stringify(opts);
    const { plain, shm } = pair(opts);
    await Promise.all([ready(plain), ready(shm)]);
    await shm.hgetall('h:three');
    await shm.zrange('z:three', 0, -1); // opens the handle, fills the cache
    assert.deepStrictEqual((await hitRead(shm, 'hgetallBuffer', ['h:three'])).val,
      want.hgetallBuffer, label);
    assert.deepStrictEqual(await plain.hgetallBuffer('h:three'), want.hgetallBuffer, label);
    const zargs = ['z:three', 0, -1, 'WITHSCORES'];
    if (served) {
      assert.deepStrictEqual((await hitRead(shm, 'zrangeBuffer', zargs)).val, zrangeBuffer, label);
    } else {
      const st0 = shm.shmStats();
      assert.deepStrictEqual(await shm.zrangeBuffer(...zargs), zrangeBuffer, label);
      assert.deepStrictEqual(shm.shmStats(), st0, `zrangeBuffer WITHSCORES ${label}: ioredis`);
    }
    assert.deepStrictEqual(await plain.zrangeBuffer(...zargs), zrangeBuffer, label);
    assert.deepStrictEqual(await shm.hgetall('nokey'), {}, label);
    assert.deepStrictEqual(await shm.hgetallBuffer('nokey'), {}, label);
  }
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
