/** Host port quotas per namespace (`hostPortQuotas`), through the real pod handler. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { podAdmission } from '../../shared/admission/pods.js';
import { ConfigError } from '../../shared/config/errors.js';
import { parseConfig } from '../../shared/config/schema.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { freshTable } from '../support/dynamo.js';
import { denial, gamePod, type Pod, patched, podRequest } from './support.js';

let seq = 0;

async function quotaHarness(hostPortQuotas: Record<string, number>) {
  const { client, tableName } = await freshTable();
  const store = new DynamoHostPortStore({ client, tableName, cluster: `q${seq++}` });
  const handler = podAdmission({
    config: parseConfig({ hostPortRanges: { default: '7000-7099' }, hostPortQuotas }),
    store,
    random: Math.random,
    randomBytes: (size) => new Uint8Array(randomBytes(size)),
    now: () => 1_700_000_000_000,
  });
  const pod = (name: string, ports: number, namespace = 'games', count?: number): Pod =>
    gamePod(
      Array.from({ length: ports }, (_, i) => ({
        name: `p${i}`,
        containerPort: 1000 + i,
        ...(count === undefined ? {} : { count }),
      })),
      { name, namespace },
    );
  return { handler, store, pod };
}

const EXCEEDED = 'metadata.annotations[berth.dev/ports]: Forbidden: exceeded quota:';

describe('host port quotas per namespace', () => {
  it('denies a pod that would take its namespace over the quota, naming the namespace, quota and use', async () => {
    const { handler, store, pod } = await quotaHarness({ games: 3 });
    const first = patched(pod('a', 2), await handler(podRequest(pod('a', 2))));
    patched(pod('b', 1), await handler(podRequest(pod('b', 1))));
    const message = denial(await handler(podRequest(pod('c', 1))), 403);
    expect(message).toBe(
      `${EXCEEDED} namespace "games" may hold 3 host ports (hostPortQuotas), holds 3, and this pod asks for 1`,
    );
    // Another namespace has no quota.
    patched(pod('d', 5, 'lobby'), await handler(podRequest(pod('d', 5, 'lobby'))));
    expect(await store.namespaceUse('games')).toBe(3);

    // A DELETE gives the pod's ports back once, however often it comes.
    await handler(podRequest(first, { operation: 'DELETE' }));
    await handler(podRequest(first, { operation: 'DELETE' }));
    expect(await store.namespaceUse('games')).toBe(1);
    patched(pod('e', 2), await handler(podRequest(pod('e', 2))));
    denial(await handler(podRequest(pod('f', 1))), 403);
  });

  it('counts each port of a block, and checks a dry run without taking anything', async () => {
    const { handler, store, pod } = await quotaHarness({ games: 4 });
    const dry = await handler(podRequest(pod('a', 1, 'games', 4), { dryRun: true }));
    expect(dry.allowed).toBe(true);
    expect(await store.namespaceUse('games')).toBe(0);
    expect(denial(await handler(podRequest(pod('b', 1, 'games', 5))), 403)).toContain(
      'holds 0, and this pod asks for 5',
    );
    patched(pod('c', 1, 'games', 4), await handler(podRequest(pod('c', 1, 'games', 4))));
    expect(denial(await handler(podRequest(pod('d', 1), { dryRun: true })), 403)).toContain(
      'holds 4',
    );
  });

  it('lets one of two pods racing for the last ports in, and leaves the other nothing', async () => {
    const { handler, store, pod } = await quotaHarness({ games: 2 });
    // Both read room for two ports; the record writes decide, one transaction each.
    const verdicts = await Promise.all(['a', 'b'].map((name) => handler(podRequest(pod(name, 2)))));
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(1);
    const refused = verdicts.find((v) => !v.allowed);
    expect(refused && !refused.allowed && refused.code).toBe(403);
    expect(await store.namespaceUse('games')).toBe(2);
    const held = [];
    for await (const record of store.listRecords()) held.push(record.quotaUnits);
    expect(held).toEqual([2]);
    const counts = await store.readCounts({ name: 'default', first: 7000, size: 100 });
    expect(counts.counts.reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('is a map of namespace to a whole number of ports in the config', () => {
    const problems = (document: unknown) => {
      try {
        parseConfig(document);
        return [];
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
    };
    expect(parseConfig({}).hostPortQuotas).toEqual({});
    expect(problems({ hostPortQuotas: { Games: 3 } })).toEqual([
      'hostPortQuotas.Games: namespace names are lower-case DNS labels',
    ]);
    expect(problems({ hostPortQuotas: { games: -1 } })[0]).toMatch(/^hostPortQuotas\.games: /);
    expect(problems({ hostPortQuotas: { games: 1.5 } })[0]).toMatch(/^hostPortQuotas\.games: /);
  });
});

describe('host port quotas of namespaces named like Object.prototype members', () => {
  const NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

  it.each(NAMES)(
    'allocates in namespace %s, which has no quota, and releases on DELETE',
    async (namespace) => {
      const { handler, store, pod } = await quotaHarness({ games: 3 });
      const created = patched(
        pod('a', 2, namespace),
        await handler(podRequest(pod('a', 2, namespace))),
      );
      patched(pod('b', 2, namespace), await handler(podRequest(pod('b', 2, namespace))));
      await handler(podRequest(created, { operation: 'DELETE' }));
      expect(await store.namespaceUse(namespace)).toBe(0);
    },
  );

  it('keeps the quota of a namespace named constructor', async () => {
    const { handler, store, pod } = await quotaHarness({ constructor: 2 });
    const first = patched(
      pod('a', 2, 'constructor'),
      await handler(podRequest(pod('a', 2, 'constructor'))),
    );
    expect(denial(await handler(podRequest(pod('b', 1, 'constructor'))), 403)).toContain(
      'namespace "constructor" may hold 2 host ports (hostPortQuotas), holds 2',
    );
    await handler(podRequest(first, { operation: 'DELETE' }));
    expect(await store.namespaceUse('constructor')).toBe(0);
  });
});
