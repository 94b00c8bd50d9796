/**
 * The local store on a bad day: a database file that is damaged or empty is refused at once
 * (exit 3, one line naming the file and the fix, never the JVM's trace), and a DynamoDB Local
 * killed under `berth serve` is said so, answered as the store's outage, and started again on
 * the same data dir, or given up on with exit 3 when its file is what stops it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { review } from '../../sim/reviews.js';

const DB_FILE = 'shared-local-instance.db';
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A data dir whose DynamoDB Local database file holds `content`; the file's path. */
async function dataDirWith(content: Buffer): Promise<{ dataDir: string; file: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'berth-store-'));
  dirs.push(dataDir);
  await mkdir(join(dataDir, 'dynamodb'));
  const file = join(dataDir, 'dynamodb', DB_FILE);
  await writeFile(file, content);
  return { dataDir, file };
}

/** Runs `berth ARGS` to its end, killed after `limitMs` (a hang fails the test, not the run). */
async function berth(
  args: readonly string[],
  limitMs: number,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['bin/berth.mjs', ...args], {
    env: { ...process.env, KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  const limit = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  clearTimeout(limit);
  return { code, out, err };
}

/** Random bytes: no SQLite header, nothing DynamoDB Local can read. */
const garbage = (size: number) =>
  Buffer.from(Array.from({ length: size }, (_, i) => (i * 131 + 7) % 251));

describe('a damaged DynamoDB Local database file', () => {
  it.each([
    ['garbage', garbage(8192), /is not a DynamoDB Local database \(no SQLite header\)/],
    ['an empty file', Buffer.alloc(0), /is empty \(0 bytes\), not a DynamoDB Local database/],
    [
      'an SQLite header over garbage',
      Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), garbage(8192)]),
      /is damaged \(SQLite: file is encrypted or is not a database\)/,
    ],
  ])(
    'is refused with exit 3 in one line naming the file and the fix: %s',
    async (_, content, said) => {
      const { dataDir, file } = await dataDirWith(content);
      // Before: 120 s of silence and a Java trace (garbage), or an empty store and exit 0 (empty).
      const run = await berth(['status', '--data-dir', dataDir], 90_000);
      expect(run.code).toBe(3);
      const lines = run.err.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`berth: ${file} `);
      expect(lines[0]).toMatch(said);
      expect(lines[0]).toMatch(
        /delete it to start (empty|an empty store) \(berth keeps no other copy/,
      );
      expect(run.err).not.toMatch(/at java|at com\.|Exception/);
      expect(run.out).toBe('');
      // Refused, not replaced: the file is as it was.
      expect(Buffer.compare(await readFile(file), content)).toBe(0);
    },
    120_000,
  );
});

describe('a command on the data dir of a berth serve whose DynamoDB Local does not answer', () => {
  it('is refused (3) rather than start a second DynamoDB Local on the same files', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-store-shared-'));
    dirs.push(dataDir);
    // A process that runs, standing for the server that recorded its endpoint; nothing listens there.
    const server = spawn('sleep', ['60'], { stdio: 'ignore' });
    children.push(server);
    await writeFile(
      join(dataDir, 'dynamodb.json'),
      JSON.stringify({ endpoint: 'http://127.0.0.1:1', pid: server.pid }),
    );
    const run = await berth(['status', '--data-dir', dataDir], 90_000);
    expect(run.code).toBe(3);
    expect(run.err.trim()).toBe(
      `berth: berth serve (pid ${server.pid}) runs on ${dataDir}, and its DynamoDB Local at http://127.0.0.1:1 does not answer (it may be starting again): try again shortly, or stop that server; if none runs, delete ${join(dataDir, 'dynamodb.json')}`,
    );
    server.kill();
  }, 120_000);
});

/** The JVM of the DynamoDB Local listening on `port` (a child of the watchdog berth started). */
async function jvmOn(port: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv: string[] = await readFile(join('/proc', entry, 'cmdline'), 'utf8').then(
      (text) => text.split('\0'),
      () => [],
    );
    const at = argv.indexOf('-port');
    if (argv[0] === 'java' && at > 0 && argv[at + 1] === port) return Number(entry);
  }
  throw new Error(`no DynamoDB Local JVM on port ${port}`);
}

/** `berth serve` on `dataDir` with its own DynamoDB Local, and what it has written so far. */
async function serve(dataDir: string) {
  const child = spawn(
    process.execPath,
    ['bin/berth.mjs', 'serve', '--http', '--port', '0', '--data-dir', dataDir],
    { env: { ...process.env, KUBECONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  let err = '';
  const waiters: { pattern: RegExp; done: () => void }[] = [];
  const heard = () => {
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(out + err)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    }
  };
  child.stdout?.on('data', (chunk) => {
    out += String(chunk);
    heard();
  });
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
    heard();
  });
  const exit = new Promise<number | null>((done) => child.once('exit', done));
  /** Resolves once the output matches `pattern`; fails if the server ends first. */
  const until = (pattern: RegExp) =>
    Promise.race([
      new Promise<void>((done) => {
        waiters.push({ pattern, done });
        heard();
      }),
      exit.then((code) => {
        throw new Error(`serve exited ${code}: ${err}`);
      }),
    ]);
  await until(/DynamoDB:\s+http\S+/);
  const url = /berth serving (\S+)/.exec(out)?.[1] ?? '';
  const dynamodb = /DynamoDB:\s+(http\S+)/.exec(out)?.[1] ?? '';
  return { child, url, dynamodb, until, exit, err: () => err };
}

const nodePort = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { type: 'NodePort', ports: [{ name: 'game', port: 80 }] },
});

async function create(url: string, name: string): Promise<boolean> {
  const response = await fetch(`${url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      review({ resource: 'services', operation: 'CREATE', name, object: nodePort(name) }),
    ),
  });
  if (response.status !== 200) return false;
  return ((await response.json()) as { response: { allowed: boolean } }).response.allowed;
}

const nodePortsUsed = async (url: string) =>
  (
    (await (await fetch(`${url}/v1/status`)).json()) as {
      ranges: { kind: string; used: number }[];
    }
  ).ranges.find((range) => range.kind === 'nodePort')?.used;

describe('berth serve when its DynamoDB Local is killed', () => {
  it('says so, answers /healthz and the web view as the store being down, and starts it again on the same data dir', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-store-killed-'));
    dirs.push(dataDir);
    const server = await serve(dataDir);
    expect(await create(server.url, 'before')).toBe(true);
    const port = new URL(server.dynamodb).port;
    process.kill(await jvmOn(port), 'SIGKILL');
    await server.until(/ERROR DynamoDB Local at \S+ \(data under [^)]+\) exited with status 137/);
    // Down: berth answers, and names what is down and where.
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.text()).toBe(
      `store unreachable: DynamoDB Local at ${server.dynamodb}, table berth does not answer; berth itself is up`,
    );
    const view = await fetch(`${server.url}/ui/state`);
    expect(view.status).toBe(503);
    expect(((await view.json()) as { error: string }).error).toMatch(
      new RegExp(`^the store did not answer: DynamoDB Local at ${server.dynamodb}, table berth: `),
    );
    await server.until(/INFO DynamoDB Local is back at \S+ after 1 start\(s\)/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // The same data: the Service admitted before the kill still holds its node port.
    expect(await nodePortsUsed(server.url)).toBe(1);
    expect(await create(server.url, 'after')).toBe(true);
    expect(await nodePortsUsed(server.url)).toBe(2);
    expect(server.err()).not.toMatch(/at java|Exception/);
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
  }, 240_000);

  it('exits 3 in one line when it cannot start again because its database file was damaged meanwhile', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'berth-store-gone-'));
    dirs.push(dataDir);
    const server = await serve(dataDir);
    const port = new URL(server.dynamodb).port;
    const file = join(dataDir, 'dynamodb', DB_FILE);
    await writeFile(file, garbage(4096));
    process.kill(await jvmOn(port), 'SIGKILL');
    expect(await server.exit).toBe(3);
    const last = server.err().trim().split('\n').at(-1);
    expect(last).toMatch(
      new RegExp(
        `^berth: DynamoDB Local at ${server.dynamodb} exited with status 137 .* and did not start again: ${file} is not a DynamoDB Local database`,
      ),
    );
    expect(server.err()).not.toMatch(/at java|Exception/);
  }, 240_000);
});
