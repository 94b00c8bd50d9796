import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { podAdmission } from '../../shared/admission/pods.js';
import { parseConfig } from '../../shared/config/schema.js';
import {
  allocateHostPorts,
  MAX_ALLOCATION_ATTEMPTS,
  recordHostPorts,
} from '../../shared/hostports/allocator.js';
import { CountView } from '../../shared/hostports/count-view.js';
import { HostPortConflictError, HostPortContentionError } from '../../shared/hostports/errors.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import { type PortSpec, parsePortSpecs } from '../../shared/hostports/spec.js';
import type { HostPortStore } from '../../shared/hostports/store.js';
import { CapacityMeter } from '../../shared/store/capacity.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { freshTable } from '../support/dynamo.js';
import { gamePod, podRequest } from './support.js';

const RANGE: HostPortRange = { name: 'default', first: 7000, size: 32 };

/** Gives the first `count` ports of the range one use each, as one pod's record. */
function useFirstPorts(store: HostPortStore, count: number) {
  return recordHostPorts(store, {
    id: 'prefill',
    pod: { kind: 'Pod', namespace: 'default', name: 'prefill', generateName: '' },
    ports: Array.from({ length: count }, (_, i) => ({
      name: `f${i}`,
      range: 'default',
      port: 7000 + i,
      protocol: 'UDP' as const,
    })),
    createdAt: 0,
  });
}

describe('CountView', () => {
  const read = (counts: number[]) => async () => ({ range: RANGE, counts });

  it('reads a range once while fresh, again once stale, and one read serves concurrent callers', async () => {
    const clock = { now: 0 };
    const view = new CountView({ now: () => clock.now, maxAgeMs: 1_000 });
    let reads = 0;
    const counting = async () => {
      reads++;
      return read(new Array<number>(32).fill(reads))();
    };
    await Promise.all([view.refresh(RANGE, counting), view.refresh(RANGE, counting)]);
    expect(reads).toBe(1);
    clock.now = 999;
    await view.refresh(RANGE, counting);
    expect(view.counts(RANGE).counts[0]).toBe(1);
    clock.now = 1_000;
    await view.refresh(RANGE, counting);
    expect(view.counts(RANGE).counts[0]).toBe(2);
    expect(reads).toBe(2);
  });

  it('knows which counts were read or answered after a stamp', async () => {
    const view = new CountView({ now: () => 0 });
    const before = view.stamp();
    await view.refresh(RANGE, read(Array(32).fill(0)));
    const after = view.stamp();
    expect(view.seenSince('default', 7005, before)).toBe(true);
    expect(view.seenSince('default', 7005, after)).toBe(false);
    expect(view.seenSince('other', 7005, before)).toBe(false);
    // A write sent after `after` answers one block: its ports are seen since, the rest not.
    const stamp = view.stamp();
    view.apply(
      [{ range: 'default', firstPort: 7000, ports: 4, counts: new Map([[7001, 1]]) }],
      stamp,
    );
    expect(view.seenSince('default', 7001, after)).toBe(true);
    expect(view.seenSince('default', 7010, after)).toBe(false);
  });

  it('counts uses in flight until they land, and takes write answers as the stored counts', async () => {
    const view = new CountView({ now: () => 0 });
    expect(() => view.counts(RANGE)).toThrow('refresh it first');
    await view.refresh(RANGE, read(new Array<number>(32).fill(0)));
    const stamp = view.hold([{ range: 'default', port: 7003 }]);
    expect(view.counts(RANGE).counts[3]).toBe(1);
    view.apply(
      [{ range: 'default', firstPort: 6976, ports: 64, counts: new Map([[7003, 1]]) }],
      stamp,
    );
    view.land([{ range: 'default', port: 7003 }]);
    const after = view.counts(RANGE);
    expect(after.counts[3]).toBe(1);
    // The block's other ports came back absent: count 0.
    expect(after.counts.filter((c) => c !== 0)).toEqual([1]);
    // An answer to a request sent earlier arrives late: it does not take the view back.
    view.apply([{ range: 'default', firstPort: 6976, ports: 64, counts: new Map() }], stamp - 1);
    expect(view.counts(RANGE).counts[3]).toBe(1);
  });
});

describe('host port allocation from a view of the counts', () => {
  async function world() {
    const { client, tableName } = await freshTable();
    const meter = new CapacityMeter();
    const store = new DynamoHostPortStore({
      client,
      tableName,
      cluster: `v${Math.random()}`,
      meter,
    });
    const config = parseConfig({ hostPortRanges: { default: '7000-7031' } });
    let conflicts = 0;
    /** One process (a Lambda container, `berth serve`): its own handler and view. */
    const process = (through: HostPortStore = store) =>
      podAdmission({
        config,
        store: through,
        random: Math.random,
        randomBytes: (size) => new Uint8Array(randomBytes(size)),
        now: () => 1_700_000_000_000,
        onAllocated: (event) => {
          conflicts += event.conflicts;
        },
      });
    let seq = 0;
    const create = async (handler: ReturnType<typeof process>) => {
      const n = seq++;
      const verdict = await handler(
        podRequest(gamePod([{ name: 'p', containerPort: 7777 }], { name: `gs-${n}` })),
      );
      expect(verdict.allowed).toBe(true);
    };
    const counts = async () => (await store.readCounts(RANGE)).counts;
    return { store, meter, process, create, counts, conflicts: () => conflicts };
  }

  it('reads the counts once, then allocates from its view with one write pair each', async () => {
    const w = await world();
    const handler = w.process();
    await w.create(handler);
    const afterFirst = w.meter.totals();
    for (let i = 0; i < 10; i++) await w.create(handler);
    const after = w.meter.totals();
    expect(after.readRequests - afterFirst.readRequests).toBe(0);
    expect(after.writeRequests - afterFirst.writeRequests).toBe(20);
    expect(after.writeUnits - afterFirst.writeUnits).toBe(20);
  });

  it('keeps the least-used spread when processes with stale views take turns', async () => {
    const w = await world();
    const processes = [w.process(), w.process(), w.process()];
    for (let i = 0; i < 100; i++) {
      await w.create(processes[i % processes.length] as ReturnType<typeof w.process>);
      const counts = await w.counts();
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
    expect((await w.counts()).reduce((a, b) => a + b, 0)).toBe(100);
    // Every stale view cost a refused write, never a wrong one.
    expect(w.conflicts()).toBeGreaterThan(0);
  });

  it('serves 32 concurrent pods of one process at a level boundary without a lost race', async () => {
    const w = await world();
    await useFirstPorts(w.store, 16);
    const handler = w.process();
    await Promise.all(Array.from({ length: 32 }, () => w.create(handler)));
    expect(w.conflicts()).toBe(0);
    const counts = await w.counts();
    expect(counts.filter((c) => c === 2)).toHaveLength(16);
    expect(counts.filter((c) => c === 1)).toHaveLength(16);
  });

  it('lets two processes that read the counts as they began both take the last port at the lowest count', async () => {
    const w = await world();
    await useFirstPorts(w.store, 31);
    // Two containers with no view yet: each reads the range within its allocation, so a use its
    // read misses can only be the other's, concurrent one. Both reads finish before either writes.
    let read = 0;
    let bothRead: () => void = () => {};
    const barrier = new Promise<void>((resolve) => {
      bothRead = resolve;
    });
    const reading = new Proxy(w.store, {
      get(target, property) {
        if (property === 'readCounts') {
          return async (range: HostPortRange) => {
            const counts = await target.readCounts(range);
            if (++read === 2) bothRead();
            await barrier;
            return counts;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const [a, b] = [w.process(reading), w.process(reading)];
    await Promise.all([w.create(a), w.create(b)]);
    expect(w.conflicts()).toBe(0);
    const counts = await w.counts();
    expect(counts[31]).toBe(2);
    expect(counts.slice(0, 31).every((c) => c === 1)).toBe(true);
  });

  it('never hands one pod a port twice when concurrent pods of several processes race', async () => {
    const w = await world();
    const processes = [w.process(), w.process()];
    const pods = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const handler = processes[i % 2] as ReturnType<typeof w.process>;
        const verdict = await handler(
          podRequest(
            gamePod(
              [
                { name: 'a', containerPort: 1 },
                { name: 'b', containerPort: 2 },
              ],
              { name: `multi-${i}` },
            ),
          ),
        );
        expect(verdict.allowed).toBe(true);
        return verdict;
      }),
    );
    expect(pods).toHaveLength(40);
    expect((await w.counts()).reduce((a, b) => a + b, 0)).toBe(80);
    let records = 0;
    for await (const record of w.store.listRecords()) {
      records++;
      expect(new Set(record.ports.map((p) => p.port)).size).toBe(2);
    }
    expect(records).toBe(40);
  });
});

describe('host port allocation that fails', () => {
  it('leaves neither a record nor a use behind when every attempt loses its race', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoHostPortStore({ client, tableName, cluster: `f${Math.random()}` });
    let attempts = 0;
    // Every count write is refused, as if another pod always took the port first.
    const contended: HostPortStore = {
      readCounts: (range) => store.readCounts(range),
      getRecord: (id) => store.getRecord(id),
      putRecord: (record, quota) => store.putRecord(record, quota),
      deleteRecord: (id, pod, token) => store.deleteRecord(id, pod, token),
      handOver: (id, recorded, request) => store.handOver(id, recorded, request),
      removeUses: (ports) => store.removeUses(ports),
      listRecords: () => store.listRecords(),
      adjustNamespaceUse: (namespace, delta, limit) =>
        store.adjustNamespaceUse(namespace, delta, limit),
      namespaceUse: (namespace) => store.namespaceUse(namespace),
      addUses: async () => {
        attempts++;
        throw new HostPortConflictError('taken first', { blocks: [] });
      },
    };
    const failure = await allocateHostPorts(
      {
        store: contended,
        view: new CountView({ now: () => 0 }),
        random: Math.random,
        now: () => 0,
        sleep: async () => {},
        randomBytes: (size) => new Uint8Array(randomBytes(size)),
      },
      {
        id: 'refused-00000000000',
        pod: { kind: 'Pod', namespace: 'default', name: 'gs', generateName: '' },
        specs: parsedSpecs(),
        ranges: new Map([['default', RANGE]]),
        dryRun: false,
      },
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HostPortContentionError);
    expect(attempts).toBe(MAX_ALLOCATION_ATTEMPTS);
    expect(await store.getRecord('refused-00000000000')).toBeUndefined();
    expect((await store.readCounts(RANGE)).counts.every((c) => c === 0)).toBe(true);
  });
});

/** One Dynamic UDP port from the default range, as the webhook parses it. */
function parsedSpecs(): readonly PortSpec[] {
  const parsed = parsePortSpecs(
    '[{"name":"game","containerPort":7777}]',
    { containers: ['game'], initContainers: [] },
    new Map([['default', RANGE]]),
  );
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return parsed.specs;
}
