import { chmod, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORD_TTL_MS, releasedSandboxes } from '../../cni/released.js';

const pod = { namespace: 'games', name: 'gs-1', containerId: 'sb-1' };
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-released-'));
});
afterEach(async () => {
  await chmod(dir, 0o700).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe("the node's records of completed DELs", () => {
  it('answers a recorded sandbox until an ADD forgets it, and no other sandbox', async () => {
    const released = releasedSandboxes(join(dir, 'released'));
    expect(await released.has(pod)).toBe(false);
    await released.record(pod);
    expect(await released.has(pod)).toBe(true);
    expect(await released.has({ ...pod, containerId: 'sb-2' })).toBe(false);
    expect(await released.has({ ...pod, namespace: 'other' })).toBe(false);
    await released.forget(pod);
    expect(await released.has(pod)).toBe(false);
  });

  it('keeps names of any bytes out of the path: one hashed file a sandbox', async () => {
    const released = releasedSandboxes(dir);
    await released.record({ namespace: '../..', name: 'a/b', containerId: '\0x' });
    expect(await readdir(dir)).toEqual([expect.stringMatching(/^[0-9a-f]{40}$/)]);
  });

  it('stops answering a record older than its life, and prunes old records when writing one', async () => {
    let now = Date.now();
    const released = releasedSandboxes(dir, () => now);
    await released.record(pod);
    const [file = ''] = await readdir(dir);
    const old = new Date(now - RECORD_TTL_MS - 1_000);
    await utimes(join(dir, file), old, old);
    expect(await released.has(pod)).toBe(false);
    now += 1;
    await released.record({ ...pod, containerId: 'sb-2' });
    expect(await readdir(dir)).toHaveLength(1);
    expect(await released.has({ ...pod, containerId: 'sb-2' })).toBe(true);
  });

  it('never fails a command: a directory it cannot write or read answers "not recorded"', async () => {
    const blocked = join(dir, 'file');
    await writeFile(blocked, '');
    // A path under a regular file can be neither made nor read.
    const released = releasedSandboxes(join(blocked, 'released'));
    await expect(released.record(pod)).resolves.toBeUndefined();
    expect(await released.has(pod)).toBe(false);
    await expect(released.forget(pod)).resolves.toBeUndefined();
  });
});
