'use strict';
// bench-reader.js on a few keys: its one line, its hits, its refusal of a
// missing key.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');
const Redis = require('ioredis');
const { Daemon } = require('./daemon');

const READER = path.join(__dirname, '..', 'bench-reader.js');
const KEYS = 500;
let d;

function run(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [READER, ...args], { timeout: 30000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

before(async () => {
  d = await new Daemon().start();
  const r = new Redis({ path: d.sock });
  const p = r.pipeline();
  for (let i = 0; i < KEYS; i++) p.set(`key:${String(i).padStart(12, '0')}`, 'v'.repeat(100));
  await p.exec();
  r.disconnect();
});

after(async () => {
  await d.destroy();
});

const LINE = /^ops=(\d+) p50_ns=(\d+) p99_ns=(\d+) secs=([\d.]+) clock_ns=(\d+) hits=(\d+)( sync_p50_ns=(\d+))?\n$/;

test('shm mode: one line, every timed GET a local hit', async () => {
  const r = await run(['--sock', d.sock, '--mode', 'shm', '--keys', String(KEYS), '--hot', '0',
    '--ops', '5000', '--seed', '7']);
  assert.equal(r.code, 0, r.stderr);
  const m = LINE.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.equal(Number(m[1]), 5000);
  assert.equal(Number(m[6]), 5000, 'hits');
  assert.ok(m[8] !== undefined, 'sync_p50_ns');
  assert.ok(Number(m[3]) >= Number(m[2]));
});

test('plain mode: ioredis, no local hits', async () => {
  const r = await run(['--sock', d.sock, '--mode', 'plain', '--keys', String(KEYS), '--hot', '10',
    '--ops', '2000', '--seed', '7']);
  assert.equal(r.code, 0, r.stderr);
  const m = LINE.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.equal(Number(m[6]), 0);
  assert.equal(m[8], undefined);
});

test('a key that is not there fails the run', async () => {
  const r = await run(['--sock', d.sock, '--mode', 'shm', '--keys', String(KEYS * 2), '--hot', '0',
    '--ops', '2000', '--seed', '7']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /returned nothing/);
});
