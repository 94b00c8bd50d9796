/**
 * Preloaded into a berth-cni process (`NODE_OPTIONS=--import=<this file>`) to kill it with
 * SIGKILL just before its Nth change to the filesystem (`BERTH_TEST_CRASH_AT=N`), as a node
 * losing the process at that instant would: no handler runs, nothing is flushed. A run that
 * reaches its end prints how many changes it made (`crash-at: steps=N`) on stderr, so a test can
 * sweep every step of a command from the first to the last.
 *
 * The steps counted are the calls that change what is on disk: creating, writing, syncing,
 * renaming, linking and removing files and directories, through `node:fs` or `node:fs/promises`.
 */

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';

const crashAt = Number(process.env.BERTH_TEST_CRASH_AT ?? 0);
let steps = 0;
let armed = false;

function step() {
  if (!armed) return;
  steps += 1;
  if (steps === crashAt) process.kill(process.pid, 'SIGKILL');
}

function counted(target, name) {
  const original = target[name];
  target[name] = function (...args) {
    step();
    return original.apply(this, args);
  };
}

for (const name of ['open', 'mkdir', 'rename', 'rm', 'link', 'unlink', 'writeFile']) {
  counted(fsp, name);
  counted(fs, `${name}Sync`);
}
for (const name of ['writeSync', 'fsyncSync', 'fdatasyncSync']) counted(fs, name);
const probe = await fsp.open('/dev/null');
const handle = Object.getPrototypeOf(probe);
await probe.close();
for (const name of ['writeFile', 'write', 'sync', 'datasync']) counted(handle, name);
syncBuiltinESMExports();
armed = true;

process.on('exit', () => {
  process.stderr.write(`crash-at: steps=${steps}\n`);
});
