'use strict';
// The records the tests read, and the served reads to compare on them.

const BIN = Buffer.from(Array.from({ length: 256 }, (_, i) => i)); // not UTF-8
const N = 1000; // fields, members and items of the large collections

async function load(r) {
  const p = r.pipeline();
  p.set('s:str', 'hello');
  p.set('s:utf8', 'héllo wörld ✓ 日本');
  p.set('s:bin', BIN);
  p.set('s:empty', '');
  p.set('s:big', 'x'.repeat(200000));
  p.set('s:int', '12345');
  p.set('ttl:s', 'soon', 'EX', 1000);
  p.hset('h:small', { f1: 'v1', f2: 'v2', 'fé': 'ü', empty: '' });
  p.hset('h:big', Object.fromEntries(Array.from({ length: N }, (_, i) => [`f${i}`, `v${i}`])));
  p.hset('ttl:h', 'f', 'v');
  p.pexpire('ttl:h', 500000);
  p.sadd('set:small', 'a', 'b', 'c');
  p.sadd('set:big', ...Array.from({ length: N }, (_, i) => `m${i}`));
  p.zadd('z:small', 1.5, 'm1', 0.1, 'm2', 1e20, 'm3', 'inf', 'm4', '-inf', 'm5', -3, 'm6',
    2.5e-7, 'm7', 1 / 3, 'm8');
  p.zadd('z:big', ...Array.from({ length: N }, (_, i) => [i / 3, `m${i}`]).flat());
  p.rpush('l:small', 'a', 'b', 'c');
  p.rpush('l:big', ...Array.from({ length: N }, (_, i) => `i${i}`));
  // Whole-collection reads: small ones inline, odd fields, long values.
  p.hset('h:three', { a: '1', b: '2', c: '3' });
  p.hset('h:odd', '__proto__', 'p', 'constructor', 'c', 'toString', 't', '10', 'ten', '2', 'two',
    BIN.subarray(120, 140), BIN.subarray(0, 20), 'long', 'y'.repeat(5000));
  p.sadd('set:int', 1, 2, 3);
  p.zadd('z:three', '-inf', 'lo', -2.5, 'mid', 'inf', 'hi');
  p.zadd('z:ties', 1, 'b', 1, 'a', 1, 'c', 0, BIN.subarray(200, 210));
  p.rpush('l:bin', BIN, '', 'x'.repeat(5000));
  const res = await p.exec();
  for (const [err] of res) if (err) throw err;
}

// [command, ...args]: present and absent keys, large collections, wrong
// types, bad arguments, and ioredis's array forms.
const CALLS = [
  ['get', 's:str'], ['get', 's:utf8'], ['get', 's:bin'], ['get', 's:empty'], ['get', 's:big'],
  ['get', 's:int'], ['get', 'nokey'], ['get', 'ttl:s'], ['get', 'h:small'], ['get', BIN],
  ['get', 1234], ['get'],
  ['mget', 's:str', 'nokey', 's:utf8', 'h:small', 's:bin'], ['mget', ['s:str', 'nokey']],
  ['mget', 'nokey'], ['mget', []],
  ['exists', 's:str'], ['exists', 's:str', 'nokey', 'h:small', 's:str'], ['exists', 'nokey'],
  ['exists', ['s:str', 'l:big']],
  ...['s:str', 'h:small', 'set:small', 'z:small', 'l:small', 'nokey', 'ttl:h'].map((k) => ['type', k]),
  ['ttl', 's:str'], ['ttl', 'nokey'], ['ttl', 'ttl:s'], ['pttl', 's:str'], ['pttl', 'nokey'],
  ['pttl', 'ttl:h'], ['ttl', 'h:big'],
  ['strlen', 's:str'], ['strlen', 's:big'], ['strlen', 's:utf8'], ['strlen', 'nokey'],
  ['strlen', 'h:small'],
  ['hget', 'h:small', 'f1'], ['hget', 'h:small', 'nof'], ['hget', 'h:small', 'fé'],
  ['hget', 'h:small', 'empty'], ['hget', 'h:big', 'f500'], ['hget', 'h:big', 'f999'],
  ['hget', 'nokey', 'f'], ['hget', 's:str', 'f'], ['hget', 'ttl:h', 'f'], ['hget', 'h:small'],
  ['hmget', 'h:small', 'f1', 'nof', 'f2'], ['hmget', 'h:big', ['f0', 'f999', 'fx']],
  ['hmget', 'nokey', 'a', 'b'], ['hmget', 's:str', 'a'],
  ['hexists', 'h:small', 'f1'], ['hexists', 'h:small', 'nof'], ['hexists', 'h:big', 'f7'],
  ['hexists', 'nokey', 'f'], ['hexists', 'set:small', 'a'],
  ['hlen', 'h:small'], ['hlen', 'h:big'], ['hlen', 'nokey'], ['hlen', 's:str'],
  ['sismember', 'set:small', 'a'], ['sismember', 'set:small', 'z'],
  ['sismember', 'set:big', 'm500'], ['sismember', 'set:big', 'm5000'],
  ['sismember', 'nokey', 'a'], ['sismember', 's:str', 'a'],
  ['smismember', 'set:small', 'a', 'z', 'b'], ['smismember', 'set:big', ['m1', 'm2000']],
  ['smismember', 'nokey', 'a'], ['smismember', 'h:small', 'a'],
  ['scard', 'set:small'], ['scard', 'set:big'], ['scard', 'nokey'], ['scard', 'l:small'],
  ...['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'nom'].map((m) => ['zscore', 'z:small', m]),
  ['zscore', 'z:big', 'm333'], ['zscore', 'nokey', 'm'], ['zscore', 's:str', 'm'],
  ['zmscore', 'z:small', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'nom'],
  ['zmscore', 'z:big', ['m1', 'm999', 'm1000']], ['zmscore', 'nokey', 'a'],
  ['zmscore', 'l:small', 'a'],
  ['zcard', 'z:small'], ['zcard', 'z:big'], ['zcard', 'nokey'], ['zcard', 'set:small'],
  ['llen', 'l:small'], ['llen', 'l:big'], ['llen', 'nokey'], ['llen', 'z:small'],
  ['lindex', 'l:small', 0], ['lindex', 'l:small', -1], ['lindex', 'l:small', 5],
  ['lindex', 'l:big', 999], ['lindex', 'l:big', '500'], ['lindex', 'l:big', -1000],
  ['lindex', 'nokey', 0], ['lindex', 's:str', 0], ['lindex', 'l:small', 'x'],
  // Whole collections: small (inline), large (stored per element), absent
  // (an empty hash is an absent key), another type.
  ...['h:small', 'h:three', 'h:odd', 'h:big', 'ttl:h', 'nokey', 's:str', 'set:small']
    .flatMap((k) => [['hgetall', k], ['hkeys', k], ['hvals', k]]),
  ['hgetall'], ['hkeys', 'h:small', 'x'],
  ...['set:small', 'set:int', 'set:big', 'nokey', 'h:small', 'l:small'].map((k) => ['smembers', k]),
  ...[[0, -1], [-2, 10], [5, 1], [1, 1], [-100, 100], ['0', '-1']].flatMap(([a, b]) =>
    ['l:small', 'l:bin', 'l:big', 'nokey'].map((k) => ['lrange', k, a, b])),
  ['lrange', 'l:big', 990, -1], ['lrange', 'l:big', -5, -3], ['lrange', 'z:small', 0, -1],
  ['lrange', 'l:small', 'x', 1], ['lrange', 'l:small', 0], ['lrange', ['l:small', 0, 1]],
  ...[[0, -1], [-2, 10], [5, 1], [1, 1], [-100, 100]].flatMap(([a, b]) =>
    ['z:small', 'z:three', 'z:ties', 'z:big', 'nokey'].flatMap((k) =>
      [['zrange', k, a, b], ['zrange', k, a, b, 'WITHSCORES']])),
  ['zrange', 'z:big', 500, 510, 'withscores'], ['zrange', 'z:three', 0, -1, 'WithScores'],
  ['zrange', 'z:three', 0, -1, Buffer.from('WITHSCORES')],
  ['zrange', 'set:small', 0, -1], ['zrange', 'set:small', 0, -1, 'WITHSCORES'],
  ['zrange', 'z:small', 'x', 1], ['zrange', 'z:small', 0],
  // Not served (ioredis answers): other options.
  ['zrange', 'z:three', 0, -1, 'REV'], ['zrange', 'z:three', 0, -1, 'REV', 'WITHSCORES'],
  ['zrange', 'z:small', '-inf', '+inf', 'BYSCORE', 'LIMIT', 1, 2, 'WITHSCORES'],
  ['zrange', 'z:ties', '-', '+', 'BYLEX'], ['zrange', 'z:three', 0, -1, 'WITHSCORE'],
];

module.exports = { load, CALLS, BIN, N };
