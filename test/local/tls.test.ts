import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalCaError } from '../../shared/local/errors.js';
import { ensureLocalTls } from '../../shared/local/tls.js';

let dir: string;
const said: string[] = [];
const say = (line: string) => said.push(line);
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-tls-'));
  said.length = 0;
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The names a PEM server certificate is valid for, and whether `caPem` signed it. */
function inspect(certPem: string, caPem: string) {
  const cert = forge.pki.certificateFromPem(certPem);
  const ca = forge.pki.certificateFromPem(caPem);
  const alt = cert.getExtension('subjectAltName') as {
    altNames: { ip?: string; value?: string }[];
  };
  return {
    names: alt.altNames.map((name) => name.ip ?? name.value),
    signedByCa: ca.verify(cert),
  };
}

describe('ensureLocalTls', () => {
  it('keeps the CA and issues only the server certificate again for an address it lacks', async () => {
    const first = await ensureLocalTls(dir, () => T0, [], { say });
    expect(said).toEqual([]);
    const again = await ensureLocalTls(dir, () => T0, ['10.9.9.9'], { say });
    expect(again.ca).toBe(first.ca);
    expect(await readFile(join(dir, 'ca.crt'), 'utf8')).toBe(first.ca);
    expect(again.cert).not.toBe(first.cert);
    expect(inspect(again.cert, again.ca)).toEqual({
      names: ['127.0.0.1', 'localhost', '10.9.9.9'],
      signedByCa: true,
    });
    expect(said).toEqual([expect.stringMatching(/same CA.*caBundles already applied still match/)]);
    // Nothing is made again once the names are covered.
    const kept = await ensureLocalTls(dir, () => T0, ['10.9.9.9'], { say });
    expect(kept).toEqual(again);
    expect(said).toHaveLength(1);
  });

  it('keeps the CA key readable by its owner only', async () => {
    await ensureLocalTls(dir, () => T0, [], { say });
    expect((await stat(join(dir, 'ca.key'))).mode & 0o777).toBe(0o600);
  });

  it('issues an expiring server certificate again with the same CA', async () => {
    const first = await ensureLocalTls(dir, () => T0, [], { say });
    const later = await ensureLocalTls(dir, () => T0 + 900 * DAY, [], { say });
    expect(later.ca).toBe(first.ca);
    expect(later.cert).not.toBe(first.cert);
    expect(inspect(later.cert, later.ca).signedByCa).toBe(true);
  });

  it('makes a new CA only when asked, and says so loudly', async () => {
    const first = await ensureLocalTls(dir, () => T0, [], { say });
    const renewed = await ensureLocalTls(dir, () => T0, [], { newCa: true, say });
    expect(renewed.ca).not.toBe(first.ca);
    expect(inspect(renewed.cert, renewed.ca).signedByCa).toBe(true);
    expect(said).toEqual([expect.stringMatching(/NEW local CA.*--new-ca.*no longer matches/)]);
  });

  it('refuses to replace a CA whose key was never kept, naming --new-ca, and serves it while it covers the names', async () => {
    const first = await ensureLocalTls(dir, () => T0, [], { say });
    await rm(join(dir, 'ca.key'));
    expect((await ensureLocalTls(dir, () => T0, [], { say })).ca).toBe(first.ca);
    const refused = await ensureLocalTls(dir, () => T0, ['10.9.9.9'], { say }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(LocalCaError);
    expect((refused as Error).message).toMatch(/no key kept.*--new-ca/);
    expect(await readFile(join(dir, 'ca.crt'), 'utf8')).toBe(first.ca);
  });
});

/** `berth manifests --local --json` on `dataDir` with `flags`: the caBundles it prints, and stderr. */
function caBundles(dataDir: string, flags: string[]): Promise<string[] & { stderr?: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'npx',
      ['berth', 'manifests', '--local', '--json', '--data-dir', dataDir, ...flags],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`berth manifests exited ${code}`));
      const parsed = JSON.parse(out) as unknown;
      const items = (Array.isArray(parsed) ? parsed : (parsed as { items: unknown[] }).items) as {
        webhooks?: { clientConfig: { caBundle?: string } }[];
      }[];
      const bundles = items.flatMap((item) =>
        (item.webhooks ?? []).map((w) => w.clientConfig.caBundle ?? ''),
      );
      resolve(Object.assign(bundles, { stderr: err }));
    });
  });
}

describe('berth manifests --local --advertise-address', () => {
  it('prints the same caBundle as before: the CA is kept, and a new one only with --new-ca', async () => {
    const before = await caBundles(dir, []);
    const after = await caBundles(dir, ['--advertise-address', '10.9.9.9']);
    expect(before.length).toBeGreaterThan(0);
    expect(new Set([...before, ...after]).size).toBe(1);
    expect(after.stderr).toMatch(/same CA/);
    const renewed = await caBundles(dir, ['--advertise-address', '10.9.9.9', '--new-ca']);
    expect(renewed[0]).not.toBe(before[0]);
    expect(renewed.stderr).toMatch(/NEW local CA/);
  }, 120_000);
});
