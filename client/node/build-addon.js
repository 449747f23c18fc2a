'use strict';
// npm's install step: builds the addon with node-gyp against libshmkv as
// pkg-config finds it, and against the headers of the Node that runs this
// (they sit beside it, as Debian's and the official builds lay them out),
// so that node-gyp never downloads any.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

function die(msg) {
  console.error(`shmkv: ${msg}`);
  process.exit(1);
}

const pc = spawnSync('pkg-config', ['--exists', '--print-errors', 'shmkv'], { encoding: 'utf8' });
if (pc.error) die('pkg-config is not installed; it finds libshmkv');
if (pc.status !== 0) {
  die(`pkg-config does not find libshmkv (shmkv.pc): install shmkv's client library, ` +
      `or point PKG_CONFIG_PATH at its pkgconfig folder\n${pc.stderr}`);
}

let gyp;
try {
  gyp = require.resolve('node-gyp/bin/node-gyp.js');
} catch {
  gyp = process.env.npm_config_node_gyp; // npm's own copy
}
if (!gyp) die('node-gyp is not installed (npm install --include=dev)');

const args = [gyp, 'rebuild'];
const prefix = path.resolve(process.execPath, '..', '..');
if (fs.existsSync(path.join(prefix, 'include', 'node', 'common.gypi'))) {
  args.push(`--nodedir=${prefix}`);
}
const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: __dirname });
process.exit(r.status === null ? 1 : r.status);
