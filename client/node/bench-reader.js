'use strict';
// The benchmark reader (the CLI every binding shares):
//
//   node bench-reader.js --sock PATH --mode shm|plain --keys N --hot H --ops M --seed S
//
// GETs keys "key:" + 12-digit index (bench/shm_bench.c's), timed one by one. shm: `await
// redis.get(key)` on ShmkvRedis, as a user writes it; plain: the same on
// ioredis over the Unix socket. Prints one line:
//   ops=M p50_ns=X p99_ns=Y secs=T clock_ns=C hits=K [sync_p50_ns=Z]
// where sync_p50_ns (shm mode) is the addon's synchronous get alone, which
// shows what the Promise costs. Exits non-zero when a GET returns nothing
// or a value that is not 100 bytes long.

const Redis = require('ioredis');
const ShmkvRedis = require('.');

const VALUE_LEN = 100;

function parseArgs(argv) {
  const o = { sock: '', mode: '', keys: 0, hot: 0, ops: 0, seed: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[i + 1];
    if (!(k in o) || v === undefined) usage();
    o[k] = k === 'sock' || k === 'mode' ? v : Number(v);
  }
  if (!o.sock || (o.mode !== 'shm' && o.mode !== 'plain') || !(o.keys > 0) || !(o.ops > 0)) usage();
  return o;
}

function usage() {
  console.error('usage: bench-reader.js --sock PATH --mode shm|plain --keys N --hot H --ops M --seed S');
  process.exit(2);
}

// xorshift32: the same sequence for the same seed, in every run.
function keySequence(n, range, seed) {
  let x = (seed ^ 0x9e3779b9) >>> 0 || 1;
  const keys = new Array(n);
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    keys[i] = `key:${String(x % range).padStart(12, '0')}`;
  }
  return keys;
}

const now = process.hrtime.bigint;

// The median cost of one pair of clock reads, as the loop pays it.
function clockCost() {
  const n = 10001;
  const d = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const a = now();
    const b = now();
    d[i] = Number(b - a);
  }
  return d.sort()[n >> 1];
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function check(v, key) {
  if (typeof v !== 'string' || v.length !== VALUE_LEN) {
    console.error(`bench-reader: GET ${key} returned ${v === null ? 'nothing' : `${String(v).length} bytes`}`);
    process.exit(1);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const range = o.hot > 0 ? Math.min(o.hot, o.keys) : o.keys;
  const warm = keySequence(Math.floor(o.ops / 10), range, o.seed + 1);
  const keys = keySequence(o.ops, range, o.seed);
  const shm = o.mode === 'shm';
  const r = shm ? new ShmkvRedis({ path: o.sock }) : new Redis({ path: o.sock });
  r.on('error', (e) => { console.error(`bench-reader: ${e.message}`); process.exit(1); });

  for (const k of warm) check(await r.get(k), k);
  const clock = clockCost();
  const hitCount = () => (shm && r.shmStats() !== null ? r.shmStats().hits : 0);
  const hits0 = hitCount();

  const lat = new Float64Array(o.ops);
  const t0 = now();
  for (let i = 0; i < o.ops; i++) {
    const k = keys[i];
    const a = now();
    const v = await r.get(k);
    const b = now();
    lat[i] = Number(b - a);
    if (v === null || v.length !== VALUE_LEN) check(v, k);
  }
  const secs = Number(now() - t0) / 1e9;
  const hits = hitCount() - hits0;
  lat.sort();
  let line = `ops=${o.ops} p50_ns=${pct(lat, 0.5)} p99_ns=${pct(lat, 0.99)} ` +
    `secs=${secs.toFixed(3)} clock_ns=${clock} hits=${hits}`;

  const h = shm ? r.shmHandle() : null; // null: the daemon offers no cache
  if (h !== null) {
    // The addon's synchronous GET alone, on the same keys: the same work
    // less the Promise and the await (not part of the counts above).
    const n = Math.min(o.ops, 100000);
    const s = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const a = now();
      const v = h.get(keys[i]);
      const b = now();
      s[i] = Number(b - a);
      if (v === null || v.length !== VALUE_LEN) check(v, keys[i]);
    }
    s.sort();
    line += ` sync_p50_ns=${pct(s, 0.5)}`;
  }
  console.log(line);
  r.disconnect();
}

main().catch((e) => {
  console.error(`bench-reader: ${e && e.stack}`);
  process.exit(1);
});
