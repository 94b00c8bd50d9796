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
import { findHolders } from '../../shared/status/holders.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

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
    const object = {
      metadata: { name: 'lobby', namespace: 'games' },
      spec: { type: 'NodePort', clusterIP: '10.70.0.9', ports: [{ port: 80, nodePort: 30090 }] },
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
    // Without a cluster, the holder is the Service carrying the id.
    const [unnamed] = await findHolders(deps, '30090');
    expect(unnamed?.holder.name).toMatch(
      /^\(the one annotated berth\.dev\/allocation-id=[a-z2-7]{20}: /,
    );
    // The command it suggests is one the CLI takes: --holder with the namespace/name.
    const suggested = /`berth (status --holder) NAMESPACE\/NAME`/.exec(unnamed?.holder.name ?? '');
    expect(suggested).not.toBeNull();
    const { main } = await import('../../cli/main.js');
    expect(await main([...(suggested?.[1] ?? '').split(' '), 'games/lobby', '--help'], {})).toBe(0);
    expect(await main(['status', 'games/lobby'], {})).toBe(2);
  });
});
