/**
 * `berth serve` killed with SIGKILL, then started again on the same data dir: its DynamoDB Local
 * goes with it, and the release a DELETE asked for, whose settle look died with the process, is
 * finished by the next server.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { review } from '../../sim/reviews.js';

const TOKEN = 'restart-token';
let fake: KubeApiServer;
let home: string;
let kubeconfig: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  fake = await startKubeApiServer({ token: TOKEN });
  home = await mkdtemp(join(tmpdir(), 'berth-restart-'));
  kubeconfig = join(home, 'kubeconfig');
  await writeFile(kubeconfig, fake.kubeConfig(TOKEN).exportConfig());
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await fake.stop();
  await rm(home, { recursive: true, force: true });
});

/** `berth serve` on the test's data dir with its own DynamoDB Local; its URL and DynamoDB's. */
async function serve(): Promise<{ child: ChildProcess; url: string; dynamodb: string }> {
  const child = spawn(
    process.execPath,
    ['bin/berth.mjs', 'serve', '--http', '--port', '0', '--data-dir', join(home, 'data')],
    {
      env: { ...process.env, KUBECONFIG: kubeconfig, HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      out += String(chunk);
      const url = /berth serving (\S+)/.exec(out)?.[1];
      const dynamodb = /DynamoDB:\s+(http\S+)/.exec(out)?.[1];
      if (url && dynamodb) resolve({ child, url, dynamodb });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

async function answers(endpoint: string): Promise<boolean> {
  return fetch(endpoint, { signal: AbortSignal.timeout(2_000) }).then(
    () => true,
    () => false,
  );
}

/** Polls `check` every second until it holds or `seconds` pass; answers whether it held. */
async function eventually(check: () => Promise<boolean>, seconds: number): Promise<boolean> {
  for (let i = 0; i < seconds; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return check();
}

const nodePort = (name: string): V1Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { type: 'NodePort', ports: [{ name: 'game', port: 80, nodePort: 30750 }] },
});

async function send(url: string, body: unknown) {
  const response = await fetch(`${url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return ((await response.json()) as { response: { allowed: boolean; patch?: string } }).response;
}

describe('berth serve after kill -9', () => {
  it('leaves no DynamoDB Local running, and the next server finishes the release the killed one lost', async () => {
    const first = await serve();
    const created = await send(
      first.url,
      review({ resource: 'services', operation: 'CREATE', name: 'lb', object: nodePort('lb') }),
    );
    expect(created.allowed).toBe(true);
    const stored = fake.addService(applyPatch(nodePort('lb'), decodePatch(created.patch)));
    const deleted = await send(
      first.url,
      review({ resource: 'services', operation: 'DELETE', name: 'lb', oldObject: stored }),
    );
    expect(deleted.allowed).toBe(true);
    // Killed before its settle look (5 s after the DELETE) could run.
    first.child.kill('SIGKILL');
    fake.services.clear();
    expect(await eventually(async () => !(await answers(first.dynamodb)), 30)).toBe(true);

    const second = await serve();
    const next = () =>
      send(
        second.url,
        review({
          resource: 'services',
          operation: 'CREATE',
          name: 'next',
          object: nodePort('next'),
        }),
      ).then((answer) => answer.allowed);
    expect(await eventually(next, 60)).toBe(true);
    second.child.kill('SIGTERM');
  }, 240_000);
});
