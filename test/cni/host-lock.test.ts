import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withHostLock } from '../../cni/host-lock.js';

/** Whether util-linux's flock gets the lock at once (`-n`) in `mode`, from another process. */
const othersGet = (path: string, mode: '-s' | '-x') =>
  new Promise<boolean>((resolve) =>
    execFile('flock', ['-n', mode, path, 'true'], (error) => resolve(error === null)),
  );

/** The command lines naming `path` of the processes this one started and has not reaped. */
async function holdersOf(path: string): Promise<string[]> {
  const tasks = await readdir(`/proc/${process.pid}/task`);
  const lists = await Promise.all(
    tasks.map((task) =>
      readFile(`/proc/${process.pid}/task/${task}/children`, 'utf8').catch(() => ''),
    ),
  );
  const commands = await Promise.all(
    lists
      .flatMap((list) => list.split(' ').filter(Boolean))
      .map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
  );
  return commands.map((c) => c.replaceAll('\0', ' ').trim()).filter((c) => c.includes(path));
}

const lockFile = async () => join(await mkdtemp(join(tmpdir(), 'berth-lock-')), 'lock');
const deadline = () => Date.now() + 10_000;

describe('the node’s routing lock', () => {
  it('keeps a DEL out while ADDs hold it shared, everyone while exclusive, and frees it after', async () => {
    for (const [mode, others] of [
      ['shared', { shared: true, exclusive: false }],
      ['exclusive', { shared: false, exclusive: false }],
    ] as const) {
      const path = await lockFile();
      const during = await withHostLock(path, mode, deadline(), async () => ({
        shared: await othersGet(path, '-s'),
        exclusive: await othersGet(path, '-x'),
      }));
      expect(during, mode).toEqual(others);
      expect(await othersGet(path, '-x'), mode).toBe(true);
    }
  });

  it('holds the lock with no process of its own left running', async () => {
    const path = await lockFile();
    const running = await withHostLock(path, 'shared', deadline(), () => holdersOf(path));
    expect(running).toEqual([]);
  });

  it('runs a read as soon as it holds the lock, and hands the work what it printed', async () => {
    const path = await lockFile();
    const read = { command: ['cat'], input: 'links and rules' };
    const during = await withHostLock(
      path,
      'shared',
      deadline(),
      async (printed) => ({ printed, exclusive: await othersGet(path, '-x') }),
      read,
    );
    expect(during).toEqual({ printed: 'links and rules', exclusive: false });
    expect(await holdersOf(path)).toEqual([]);
    await expect(
      withHostLock(path, 'shared', deadline(), async () => 'ran', {
        command: ['false'],
        input: '',
      }),
    ).rejects.toMatchObject({ code: 5 });
    expect(await othersGet(path, '-x')).toBe(true);
  });

  it('frees the lock when the work fails', async () => {
    const path = await lockFile();
    await expect(
      withHostLock(path, 'exclusive', deadline(), async () => {
        throw new Error('routing failed');
      }),
    ).rejects.toThrow('routing failed');
    expect(await othersGet(path, '-x')).toBe(true);
  });

  it('answers try again later (11) when the lock stays held past the signal', async () => {
    const path = await lockFile();
    const holder = spawn('flock', ['-x', path, 'sleep', '5'], { stdio: 'ignore' });
    try {
      // Wait until the holder has it.
      while (await othersGet(path, '-s')) await new Promise((r) => setTimeout(r, 20));
      await expect(
        withHostLock(path, 'shared', Date.now() + 300, async () => 'ran'),
      ).rejects.toMatchObject({ code: 11 });
    } finally {
      holder.kill();
    }
  });
});
