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
];

module.exports = { load, CALLS, BIN, N };
