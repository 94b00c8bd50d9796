/**
 * A cluster whose IPv6 Service range is a /64: Services get addresses from all of it through the
 * real admission path, and `/v1/status` reports the values and the blocks they fill.
 */
import { describe, expect, it } from 'vitest';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { cidrContains, parseCidr, parseIp } from '../../shared/net/ip.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

const WIDE = 'fd00:1:2:3::/64';

describe('Service admission with an IPv6 /64', () => {
  it('hands out addresses of the whole /64, refuses a taken one, and reports blocks in status', async () => {
    const { client, tableName } = await freshTable();
    const config = parseConfig({ cluster: 'v6', serviceCIDRs: ['10.60.0.0/24', WIDE] });
    const runtime = createRuntime({ config, dynamo: client, tableName });
    const create = async (name: string, spec: Record<string, unknown>) => {
      const object: {
        metadata: object;
        spec: { clusterIPs?: string[]; [field: string]: unknown };
      } = {
        metadata: { name, namespace: 'default' },
        spec: { ports: [{ port: 80 }], ...spec },
      };
      const body = review({
        resource: 'services',
        operation: 'CREATE',
        namespace: 'default',
        name,
        object,
      });
      const { response } = await admit(parseAdmissionReview(body), runtime.admission);
      return { response, object };
    };
    const wide = parseCidr(WIDE);
    if (!wide) throw new Error(WIDE);

    const { response, object } = await create('dual', {
      ipFamilyPolicy: 'RequireDualStack',
      ipFamilies: ['IPv6', 'IPv4'],
    });
    expect(response.allowed).toBe(true);
    const patched: { spec: { clusterIPs?: string[] } } = applyPatch(
      object,
      decodePatch(response.patch ?? ''),
    );
    const [v6, v4] = patched.spec.clusterIPs ?? [];
    expect(cidrContains(wide, parseIp(v6 ?? '') ?? { family: 'IPv4', value: 0n })).toBe(true);
    expect(v4).toMatch(/^10\.60\.0\./);

    // Past 2^53 into the range: taken once, refused the second time.
    const high = 'fd00:1:2:3:ffff:ffff:ffff:fffe';
    const single = { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv6'], clusterIP: high };
    expect((await create('high', single)).response.allowed).toBe(true);
    const again = await create('again', single);
    expect(again.response.allowed).toBe(false);
    expect(again.response.status?.code).toBe(409);
    expect(again.response.status?.message).toContain('provided IP is already allocated');

    const status = await runtime.status();
    const row = status.ranges.find((r) => r.name === WIDE);
    expect(row).toEqual({ name: WIDE, kind: 'clusterIP', size: 2 ** 64, used: 2, blocks: 2 });
  });
});
