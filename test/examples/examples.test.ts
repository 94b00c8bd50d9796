import { readFile } from 'node:fs/promises';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

type Manifest = {
  kind: string;
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

/** The documents of one file under examples/, as kubectl apply would read them. */
async function example(file: string): Promise<Manifest[]> {
  const documents = loadAllYaml(
    await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8'),
  );
  // Plain JSON, as the apiserver sends objects to a webhook (client-node loads class instances).
  return JSON.parse(JSON.stringify(documents));
}

/** Admits an example as the apiserver would on `kubectl apply`, and returns the stored object. */
async function apply(manifest: Manifest): Promise<Manifest> {
  const { client, tableName } = await freshTable();
  const runtime = createRuntime({ config: parseConfig({}), dynamo: client, tableName });
  const { response } = await admit(
    parseAdmissionReview(
      review({
        resource: manifest.kind === 'Pod' ? 'pods' : 'services',
        operation: 'CREATE',
        namespace: manifest.metadata.namespace,
        name: manifest.metadata.name,
        object: manifest,
      }),
    ),
    runtime.admission,
  );
  expect(response.status?.message).toBeUndefined();
  expect(response.allowed).toBe(true);
  return applyPatch(manifest, decodePatch(response.patch));
}

describe('examples/', () => {
  it('game-server.yaml gets its host ports, variables and annotations as the README describes', async () => {
    const [pod] = await example('game-server.yaml');
    if (!pod) throw new Error('examples/game-server.yaml is empty');
    const stored = await apply(pod);
    const annotations = stored.metadata.annotations ?? {};
    const hostPorts = JSON.parse(annotations['berth.dev/host-ports'] ?? '{}');
    expect(Object.keys(hostPorts).sort()).toEqual(['game', 'query']);
    expect(annotations['berth.dev/allocation-id']).toMatch(/^[a-z2-7]{20}$/);
    expect(annotations['karpenter.sh/do-not-disrupt']).toBe('true');
    const [container] = stored.spec.containers as {
      ports: { name: string; protocol: string; hostPort?: number }[];
      env: { name: string; value: string }[];
    }[];
    expect(container?.ports.map((p) => `${p.name}/${p.protocol}`).sort()).toEqual([
      'game/UDP',
      'query-tcp/TCP',
      'query-udp/UDP',
      'rcon/TCP',
    ]);
    expect(container?.env).toEqual(
      expect.arrayContaining([
        { name: 'BERTH_PORT_GAME', value: String(hostPorts.game) },
        { name: 'BERTH_PORT_QUERY', value: String(hostPorts.query) },
      ]),
    );
  });

  it('game-service.yaml gets a cluster IP and a node port', async () => {
    const [service] = await example('game-service.yaml');
    if (!service) throw new Error('examples/game-service.yaml is empty');
    const stored = await apply(service);
    expect(stored.spec.clusterIP).toMatch(/^10\.100\./);
    const [port] = stored.spec.ports as { nodePort?: number }[];
    expect(port?.nodePort).toBeGreaterThanOrEqual(30000);
  });
});

describe('examples/review-*.json', () => {
  it.each([
    ['review-game-server.json', 'game-server.yaml', 'pods'],
    ['review-game-service.json', 'game-service.yaml', 'services'],
  ])(
    '%s is the AdmissionReview of %s, as an apiserver sends it for its CREATE',
    async (file, yaml, resource) => {
      const sent = JSON.parse(
        await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8'),
      ) as { request: ReturnType<typeof review>['request'] };
      const [object] = await example(yaml);
      expect(sent.request.object).toEqual(object);
      expect(sent.request).toMatchObject({
        operation: 'CREATE',
        resource: { group: '', version: 'v1', resource },
        name: object?.metadata.name,
        namespace: object?.metadata.namespace,
      });
    },
  );
});
