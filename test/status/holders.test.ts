import { randomBytes } from 'node:crypto';
import type { V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { parseCidr } from '../../shared/net/ip.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { clusterIpRange, nodePortRange } from '../../shared/net/value-range.js';
import { ImmediateSettler } from '../../shared/settle/settler.js';
import { findHolders } from '../../shared/status/holders.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

/** Admits the CREATE of Service games/lobby with the values given; the answer and the object. */
async function createLobby(
  runtime: ReturnType<typeof createRuntime>,
  clusterIP: string,
  nodePort: number,
) {
  const object = {
    metadata: { name: 'lobby', namespace: 'games' },
    spec: { type: 'NodePort', clusterIP, ports: [{ port: 80, nodePort }] },
  };
  const { response } = await admit(
    parseAdmissionReview(
      review({
        resource: 'services',
        operation: 'CREATE',
        namespace: 'games',
        name: 'lobby',
        object,
      }),
    ),
    runtime.admission,
  );
  expect(response.allowed).toBe(true);
  return { response, object };
}

describe('who holds a value of a Service that wrote no owner record', () => {
  it('names the Service from the cluster, by its allocation id; and finds its values by its name', async () => {
    const { client, tableName } = await freshTable();
    const config = parseConfig({ cluster: 'holders', serviceCIDRs: ['10.70.0.0/24'] });
    const runtime = createRuntime({
      config,
      dynamo: client,
      tableName,
      randomBytes: (n) => randomBytes(n),
    });
    const { response, object } = await createLobby(runtime, '10.70.0.9', 30090);
    const stored = applyPatch(object, decodePatch(response.patch)) as V1Service;
    const deps = {
      clusterIps: [
        clusterIpRange(parseCidr('10.70.0.0/24') as NonNullable<ReturnType<typeof parseCidr>>),
      ],
      nodePorts: nodePortRange(parsePortRange('30000-32767') as PortRange),
      allocations: new DynamoAllocationStore({ client, tableName, cluster: 'holders' }),
      hostPorts: new DynamoHostPortStore({ client, tableName, cluster: 'holders' }),
    };
    // A copy under another name carries the same annotation: the id names only the original.
    const copy = { ...stored, metadata: { ...stored.metadata, name: 'copy' } };
    const services = new FakeClusterApi().withServices(copy, stored);
    const [ip] = await findHolders({ ...deps, services }, '10.70.0.9');
    expect(ip?.holder).toEqual({ kind: 'Service', namespace: 'games', name: 'lobby' });
    const byName = await findHolders(deps, 'games/lobby');
    expect(byName.map((h) => h.value).sort()).toEqual(['10.70.0.9', '30090']);
    // Without a cluster, the holder is the Service carrying the id: not named, a note says why
    // (never the note in place of a name).
    const [unnamed] = await findHolders(deps, '30090');
    expect(unnamed?.holder).toEqual({ kind: 'Service', namespace: '', name: '' });
    expect(unnamed?.note).toMatch(
      /^not named: no owner record, and no cluster here to read it from; it is the Service annotated berth\.dev\/allocation-id=[a-z2-7]{20}; /,
    );
    // The command it suggests is one the CLI takes: --holder with the namespace/name.
    const suggested = /`berth (status --holder) NAMESPACE\/NAME`/.exec(unnamed?.note ?? '');
    expect(suggested).not.toBeNull();
    const { main } = await import('../../cli/main.js');
    expect(await main([...(suggested?.[1] ?? '').split(' '), 'games/lobby', '--help'], {})).toBe(0);
    expect(await main(['status', 'games/lobby'], {})).toBe(2);
  });

  it('names the Service by its value without a cluster, once a server without one records its CREATE', async () => {
    const { client, tableName } = await freshTable();
    const config = parseConfig({ cluster: 'holders-local', serviceCIDRs: ['10.71.0.0/24'] });
    // What `berth serve` wires without a kubeconfig (shared/app/local-server.ts).
    const runtime = createRuntime({
      config,
      dynamo: client,
      tableName,
      randomBytes: (n) => randomBytes(n),
      settler: (allocator) => new ImmediateSettler(allocator, { recordCreates: true }),
    });
    const { response, object } = await createLobby(runtime, '10.71.0.9', 30091);
    const lobby = { kind: 'Service', namespace: 'games', name: 'lobby' };
    for (const value of ['10.71.0.9', '30091']) {
      const [held] = await runtime.holders(value);
      expect(held?.holder, value).toEqual(lobby);
      expect(held?.note, value).toBeUndefined();
    }
    // By name it is found as before, each value once.
    expect((await runtime.holders('games/lobby')).map((h) => h.value).sort()).toEqual([
      '10.71.0.9',
      '30091',
    ]);
    // Its DELETE gives everything back, record and values.
    const stored = applyPatch(object, decodePatch(response.patch)) as V1Service;
    const deleted = await admit(
      parseAdmissionReview(
        review({
          resource: 'services',
          operation: 'DELETE',
          namespace: 'games',
          name: 'lobby',
          oldObject: stored,
        }),
      ),
      runtime.admission,
    );
    expect(deleted.response.allowed).toBe(true);
    expect(await runtime.holders('10.71.0.9')).toEqual([]);
    expect(await runtime.holders('games/lobby')).toEqual([]);
  });
});
