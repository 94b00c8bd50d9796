/**
 * The runbook's claims (docs/operations.md), tried as an apiserver would meet them: the webhook
 * configuration `berth manifests` prints, applied by the apiserver's admission rules to pods and
 * Services while berth answers, while it does not, with the bypasses on and taken back, and with
 * its table gone.
 */

import { readFile } from 'node:fs/promises';
import { loadYaml, type V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveRuntime } from '../../bench/support/serve-runtime.js';
import { createManifestsCommand } from '../../cli/manifests.js';
import type { ManifestsOptions } from '../../shared/app/manifests.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { warnAtMostEvery } from '../../shared/app/serve-log.js';
import { parseConfig } from '../../shared/config/schema.js';
import { KubernetesUnreachableError } from '../../shared/k8s/errors.js';
import type { RunningServer } from '../../shared/local/server.js';
import { dynamoClient } from '../../shared/store/client.js';
import { BYPASS_LABEL } from '../../shared/vocabulary/labels.js';
import { type ApiserverRequest, apiserverAdmit } from '../../sim/fakes/admission-chain.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

const config = parseConfig({ cluster: 'games' });

/** The binding of the game server the day starts, as the apiserver sends it to the webhook. */
const BINDING = {
  resource: 'pods',
  subResource: 'binding',
  operation: 'CREATE',
  namespace: 'games',
  name: 'match-0001',
  object: { kind: 'Binding', target: { kind: 'Node', name: 'node-1' } },
} as const;

async function example(file: string): Promise<Record<string, unknown>> {
  const text = await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
  return JSON.parse(JSON.stringify(loadYaml(text)));
}

/** The webhooks `berth manifests --url … [--fail-open pods]` prints, aimed at `url`. */
async function manifests(url: string, flags: Partial<ManifestsOptions> = {}) {
  let out = '';
  const command = createManifestsCommand({
    secrets: { secretString: async () => '' },
    stdout: (text) => {
      out += text;
    },
    stderr: () => {},
    localCa: async () => '',
  });
  const options: ManifestsOptions = {
    config,
    dataDir: '.berth-test',
    port: 8443,
    http: false,
    json: true,
    // The apiserver accepts only https; the test's server speaks plain HTTP on loopback.
    url: 'https://berth.test/admission',
    ...flags,
  };
  expect(await command(options)).toBe(0);
  const list = JSON.parse(out) as { items: { kind: string }[] };
  const found = list.items.find((item) => item.kind === 'MutatingWebhookConfiguration');
  const configuration = found as V1MutatingWebhookConfiguration;
  const webhooks = configuration.webhooks ?? [];
  for (const webhook of webhooks) webhook.clientConfig.url = url;
  return webhooks;
}

describe('the bad day', () => {
  let server: RunningServer;
  let up: string;
  /** Where nothing listens: berth (or its function URL) unreachable. */
  const down = 'http://127.0.0.1:1/admission';
  let pod: Record<string, unknown>;
  let service: Record<string, unknown>;
  const create = (object: Record<string, unknown>, labels = {}): ApiserverRequest => ({
    resource: object.kind === 'Pod' ? 'pods' : 'services',
    operation: 'CREATE',
    namespace: 'games',
    name: (object.metadata as { name: string }).name,
    object,
    namespaceLabels: labels,
  });

  beforeAll(async () => {
    const { client, tableName } = await freshTable();
    ({ server } = await serveRuntime(createRuntime({ config, dynamo: client, tableName })));
    up = `${server.url}/admission`;
    pod = await example('game-server.yaml');
    service = await example('game-service.yaml');
  });
  afterAll(async () => {
    await server.close();
  });

  it('with berth answering, game servers get their ports and Services their IPs', async () => {
    const configuration = await manifests(up);
    const admitted = await apiserverAdmit(configuration, create(pod));
    expect(admitted.allowed).toBe(true);
    expect(JSON.stringify(admitted.object)).toContain('berth.dev/host-ports');
    const lobby = await apiserverAdmit(configuration, create(service));
    expect((lobby.object as { spec: { clusterIP?: string } }).spec.clusterIP).toMatch(/^10\.100\./);
  });

  it('with berth unreachable, game-server and Service CREATEs are refused naming the webhook; deletes and bindings go on', async () => {
    const configuration = await manifests(down);
    const refused = await apiserverAdmit(configuration, create(pod));
    expect(refused.allowed).toBe(false);
    expect(refused.message).toContain('failed calling webhook "pods-create.berth.dev"');
    expect((await apiserverAdmit(configuration, create(service))).allowed).toBe(false);
    const gameServer = {
      ...pod,
      metadata: { ...(pod.metadata as object), labels: { 'berth.dev/game-server': 'true' } },
    };
    const deleted = await apiserverAdmit(configuration, {
      resource: 'pods',
      operation: 'DELETE',
      namespace: 'games',
      name: 'match-0001',
      oldObject: gameServer,
    });
    expect(deleted).toMatchObject({ allowed: true, called: ['pods-delete.berth.dev'] });
    const binding = await apiserverAdmit(configuration, BINDING);
    expect(binding.allowed).toBe(true);
  });

  it('--fail-open pods lets game servers start without berth while Services stay refused; the plain manifests take it back', async () => {
    const open = await manifests(down, { failOpen: 'pods' });
    const started = await apiserverAdmit(open, create(pod));
    expect(started.allowed).toBe(true);
    expect(JSON.stringify(started.object)).not.toContain('berth.dev/allocation-id');
    expect((await apiserverAdmit(open, create(service))).allowed).toBe(false);
    // Taken back: the manifests without the flag, applied over it.
    expect((await apiserverAdmit(await manifests(down), create(pod))).allowed).toBe(false);
  });

  it('a namespace labelled berth.dev/bypass=true reaches no webhook of berth; other namespaces still do', async () => {
    const configuration = await manifests(down);
    const bypassed = { [BYPASS_LABEL]: 'true' };
    const outside = await apiserverAdmit(configuration, create(pod, bypassed));
    expect(outside).toMatchObject({ allowed: true, called: [] });
    expect((await apiserverAdmit(configuration, create(service, bypassed))).allowed).toBe(true);
    // The label removed (or any other value): berth's path again.
    expect(
      (await apiserverAdmit(configuration, create(pod, { [BYPASS_LABEL]: 'false' }))).allowed,
    ).toBe(false);
  });

  it('with the Kubernetes API unreachable, a binding is answered 503 naming it, and the pod is scheduled (Ignore)', async () => {
    const unreachable = () =>
      Promise.reject(
        new KubernetesUnreachableError(
          { verb: 'get', resource: 'pods/match-0001' },
          { cause: new Error('fetch failed') },
        ),
      );
    const { client, tableName } = await freshTable();
    const { server: blind } = await serveRuntime(
      createRuntime({
        config,
        dynamo: client,
        tableName,
        clusterApi: {
          getPod: unreachable,
          getNode: unreachable,
          listPods: () => ({ [Symbol.asyncIterator]: () => ({ next: unreachable }) }),
          listServices: () => ({ [Symbol.asyncIterator]: () => ({ next: unreachable }) }),
        },
      }),
    );
    try {
      const direct = await fetch(`${blind.url}/admission`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: await readFile(
          new URL('../../examples/review-game-server.json', import.meta.url),
          'utf8',
        ),
      });
      expect(direct.status).toBe(200);
      const configuration = await manifests(`${blind.url}/admission`);
      const binding = await apiserverAdmit(configuration, BINDING);
      expect(binding).toMatchObject({ allowed: true, called: ['pods-binding.berth.dev'] });
      const answer = await fetch(`${blind.url}/admission`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(review(BINDING)),
      });
      expect(answer.status).toBe(503);
      expect(((await answer.json()) as { error: string }).error).toMatch(
        /^the Kubernetes API did not answer \(kubernetes get pods\/match-0001 failed: no response: fetch failed\)/,
      );
    } finally {
      await blind.close();
    }
  });

  it('an outage is one warning a minute in berth serve, with how many it held back', () => {
    let now = 0;
    const lines: string[] = [];
    const warn = warnAtMostEvery(
      60_000,
      (line) => lines.push(line),
      () => now,
    );
    for (let second = 0; second < 150; second += 1) {
      now = second * 1000;
      warn('answering 503: the store did not answer');
    }
    expect(lines).toEqual([
      'answering 503: the store did not answer',
      'answering 503: the store did not answer (and 59 more since the last such line)',
      'answering 503: the store did not answer (and 59 more since the last such line)',
    ]);
  });

  it('with the table unreachable, a review is answered 503 naming the store, the health check and the runbook', async () => {
    const dead = dynamoClient({ endpoint: 'http://127.0.0.1:1' });
    const { server: orphan } = await serveRuntime(
      createRuntime({ config, dynamo: dead, tableName: 'gone' }),
    );
    try {
      const configuration = await manifests(`${orphan.url}/admission`);
      const refused = await apiserverAdmit(configuration, create(pod));
      expect(refused.allowed).toBe(false);
      expect(refused.message).toContain('the server answered 503');
      expect(refused.message).toMatch(/store did not answer: DynamoDB .*ECONNREFUSED/);
      expect(refused.message).toContain('GET /healthz');
      expect(refused.message).toContain('docs/operations.md');
    } finally {
      await orphan.close();
      dead.destroy();
    }
  });
});
