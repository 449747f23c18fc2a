'use strict';
// Test daemons: a shmkvd on a Unix socket in a temp folder, started and
// stopped by PID, every wait bounded.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const SHMKVD = process.env.SHMKVD;
if (!SHMKVD) throw new Error('SHMKVD (the path of shmkvd) is not set; run test.sh');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One PING over the socket, answered within ms.
function ping(sock, ms) {
  return new Promise((resolve) => {
    const c = net.connect(sock);
    const t = setTimeout(() => { c.destroy(); resolve(false); }, ms);
    c.on('error', () => { clearTimeout(t); resolve(false); });
    c.on('connect', () => c.write('*1\r\n$4\r\nPING\r\n'));
    c.on('data', (d) => {
      clearTimeout(t);
      c.destroy();
      resolve(d.toString().startsWith('+PONG') || d.toString().startsWith('-NOAUTH'));
    });
  });
}

class Daemon {
  constructor(extra = []) {
    // PIDs go where test.sh can find them, should this process die first.
    const base = process.env.SHMKV_TEST_TMP || os.tmpdir();
    this.dir = fs.mkdtempSync(path.join(base, 'node-shmkvd-'));
    this.sock = path.join(this.dir, 'shmkv.sock');
    this.extra = extra;
    this.proc = null;
    this.log = '';
  }

  async start() {
    fs.mkdirSync(path.join(this.dir, 'data'), { recursive: true });
    const args = ['--port', '0', '--bind', '127.0.0.1', '--dir', path.join(this.dir, 'data'),
      '--unixsocket', this.sock, '--save', '', ...this.extra];
    const p = spawn(SHMKVD, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = p;
    fs.writeFileSync(path.join(this.dir, 'pid'), String(p.pid));
    p.stdout.on('data', (d) => { this.log += d; });
    p.stderr.on('data', (d) => { this.log += d; });
    p.exited = new Promise((r) => p.on('exit', r));
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
      if (p.exitCode !== null) throw new Error(`shmkvd exited:\n${this.log}`);
      if (fs.existsSync(this.sock) && await ping(this.sock, 1000)) return this;
      await sleep(50);
    }
    throw new Error(`shmkvd did not answer within 15 s:\n${this.log}`);
  }

  // SIGTERM, and SIGKILL if it has not exited within 10 s.
  async stop() {
    const p = this.proc;
    if (!p) return;
    this.proc = null;
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 10000);
      await p.exited;
      clearTimeout(t);
    }
    p.stdout.destroy();
    p.stderr.destroy();
  }

  async destroy() {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// A field of INFO's text, as a number.
function infoField(text, name) {
  const m = new RegExp(`^${name}:(\\S+)`, 'm').exec(text);
  if (!m) throw new Error(`INFO has no ${name}`);
  return Number(m[1]);
}

// Resolves once the client is ready, or fails after ms.
function ready(client, ms = 10000) {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`not ready within ${ms} ms (${client.status})`)), ms);
    client.once('ready', () => { clearTimeout(t); resolve(); });
  });
}

// p, or a failure after ms.
function within(p, ms, what) {
  let t;
  return Promise.race([
    p,
    new Promise((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(t));
}

module.exports = { Daemon, infoField, ready, within, sleep };
