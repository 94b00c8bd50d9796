import { describe, expect, it } from 'vitest';
import { rangeKey } from '../../shared/allocation/allocator.js';
import { parseCidr } from '../../shared/net/ip.js';
import { toOffset } from '../../shared/net/offset.js';
import { clusterIpRange, type ValueRange } from '../../shared/net/value-range.js';
import type { RepairAllocationStore } from '../../shared/repair/store.js';
import { forwardingAllocationStore } from '../support/allocation-store.js';
import { sid } from '../support/shaped-id.js';
import { RANGES, repairEnv, service } from './support.js';

const block = parseCidr('fd00:1:2:3::/64');
if (!block) throw new Error('bad test CIDR');
const WIDE: ValueRange = clusterIpRange(block);
const ranges = { ...RANGES, clusterIps: [WIDE] };

describe('runRepairPass on an IPv6 /64', () => {
  it('records, frees and reads only the blocks in use, past 2^53 included', async () => {
    const env = await repairEnv();
    // A leak at an offset past 2^53, and a Service whose cluster IP berth never recorded.
    const leaked = WIDE.valueAt(toOffset(1n << 60n));
    await env.allocator.assign(
      sid('gone'),
      { kind: 'Service', namespace: 'default', name: 'old' },
      [{ slot: 'clusterIP/IPv6', range: WIDE, value: leaked }],
    );
    const carried = 'fd00:1:2:3:ffff:ffff:ffff:fff0';
    env.cluster.withServices(service('web', { id: sid('webid'), clusterIPs: [carried] }));
    let blocksRead = 0;
    const counted: RepairAllocationStore = {
      ...forwardingAllocationStore(env.allocations),
      transfer: (...args) => env.allocations.transfer(...args),
      scanBlocks: async function* (key, from, to) {
        for await (const b of env.allocations.scanBlocks(key, from, to)) {
          if (key === rangeKey(WIDE)) blocksRead++;
          yield b;
        }
      },
    };
    const pass = () => env.pass({ allocations: counted }, { ranges });

    const first = await pass();
    expect(first.recorded).toBe(1);
    expect(first.findings).toEqual({ ClusterIPNotAllocated: 1 });
    expect(await env.holderOf(WIDE, carried)).toBe(sid('webid'));
    // One block held the leak when the pass read the store: 2^59 blocks are never walked.
    expect(blocksRead).toBe(1);

    blocksRead = 0;
    await pass();
    const third = await pass();
    expect(third.findings).toEqual({ ClusterIPLeaked: 1 });
    expect(await env.holderOf(WIDE, leaked)).toBeUndefined();
    expect(await env.holderOf(WIDE, carried)).toBe(sid('webid'));
    expect(blocksRead).toBe(4);
  });
});
