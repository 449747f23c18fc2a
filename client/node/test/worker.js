'use strict';
// Run in a worker thread by misc.test.js: loads the addon in this thread,
// reads through a client of its own, reports what it read.

const { parentPort, workerData } = require('node:worker_threads');
const ShmkvRedis = require('..');

(async () => {
  const r = new ShmkvRedis({ path: workerData.sock });
  r.on('error', () => {});
  const values = [];
  for (let i = 0; i < 3; i++) {
    values.push(await r.get('w:k'), await r.hget('h:small', 'f1'));
  }
  // On a loaded machine the daemon may renew its lease late, and reads
  // then go to the socket for a moment: read on until two hits came.
  for (let k = 0; k < 50 && r.shmStats().hits < 2; k++) {
    await r.get('w:k');
    await new Promise((res) => setTimeout(res, 20));
  }
  const handle = new ShmkvRedis.Handle(workerData.sock, {});
  values.push(handle.get('w:k'));
  const stats = r.shmStats();
  if (workerData.leaveOpen) {
    // Exits with the handles open: their finalizers close them.
    parentPort.postMessage({ values, stats });
    return;
  }
  handle.close();
  r.disconnect();
  parentPort.postMessage({ values, stats });
})().catch((e) => parentPort.postMessage({ error: String(e && e.stack) }));
