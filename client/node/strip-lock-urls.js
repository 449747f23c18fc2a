'use strict';
// Removes the funding links npm writes into package-lock.json: the lockfile
// is committed and names no URL (the registry's addresses are already left
// out by omit-lockfile-registry-resolved in .npmrc). npm ci does not read
// them. Run by `npm run lock` after the dependencies change.

const fs = require('node:fs');
const path = require('node:path');

const file = path.join(__dirname, 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
for (const pkg of Object.values(lock.packages || {})) delete pkg.funding;
const text = `${JSON.stringify(lock, null, 2)}\n`;
if (text.includes('://')) {
  console.error('package-lock.json still names a URL');
  process.exit(1);
}
fs.writeFileSync(file, text);
