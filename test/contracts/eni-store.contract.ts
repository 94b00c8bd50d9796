/**
 * What every `EniStore` answers, registered against a factory so the in-memory store of the ENI
 * tests and benches and the DynamoDB adapter cannot drift apart: versioned pools and addresses,
 * all-or-nothing commits, leases, subnet marks, and no address given to two pods.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { EniConflictError } from '../../shared/eni/errors.js';
import {
  type CreateIntent,
  type EniRecord,
  type IpRecord,
  NO_GROUP_USE,
  type PoolRecord,
} from '../../shared/eni/model.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import type { EniStore } from '../../shared/eni/store.js';
import { eniWorld } from '../../sim/eni-world.js';

/** A node's pool record as the ENI pass writes one. */
export const pool: PoolRecord = {
  node: 'node-a',
  instanceId: 'i-0abc',
  instanceType: 'c5.large',
  availabilityZone: 'us-east-1a',
  subnetId: 'subnet-1',
  subnetCidr: '10.0.0.0/24',
  securityGroupIds: ['sg-1', 'sg-2'],
  maxInterfaces: 3,
  ipv4PerInterface: 10,
  createdAt: 1_000,
  draining: false,
  version: 1,
};

/** An address record of `pool`'s first interface. */
export const ip = (address: string, extra: Partial<IpRecord> = {}): IpRecord => ({
  kind: 'ip',
  ip: address,
  eniId: 'eni-1',
  state: 'free',
  sticky: false,
  releasedAt: 0,
  createdAt: 1_000,
  version: 1,
  ...extra,
});

/** Registers the contract's cases for the store `make` builds, one store for all of them. */
export function eniStoreContract(name: string, make: () => Promise<EniStore>): void {
  describe(`${name} keeps the EniStore contract`, () => {
    let store: EniStore;
    beforeAll(async () => {
      store = await make();
    });

    it('round-trips a pool and refuses a write at a stale version', async () => {
      await store.putPool(pool, 0);
      expect(await store.getPool('node-a')).toEqual(pool);
      await expect(store.putPool(pool, 0)).rejects.toBeInstanceOf(EniConflictError);
      await store.putPool({ ...pool, draining: true, version: 2 }, 1);
      await expect(store.putPool({ ...pool, version: 2 }, 1)).rejects.toBeInstanceOf(
        EniConflictError,
      );
      const listed = [];
      for await (const p of store.listPools()) listed.push(p);
      expect(listed.map((p) => [p.node, p.draining])).toEqual([['node-a', true]]);
    });

    it('round-trips what prefix mode records: a pool limits, prefixed addresses, prefix intents', async () => {
      const nitro: PoolRecord = { ...pool, node: 'node-p', prefixDelegation: true, maxPods: 110 };
      await store.putPool(nitro, 0);
      expect(await store.getPool('node-p')).toEqual(nitro);
      const prefixed = ip('10.0.1.17', { prefix: '10.0.1.16/28' });
      const intent: CreateIntent = {
        kind: 'intent',
        clientToken: 'berth-p',
        subnetId: 'subnet-1',
        securityGroupIds: ['sg-1'],
        secondaryIpCount: 0,
        ipv4PrefixCount: 2,
        createdAt: 1_000,
        version: 1,
      };
      await store.commit('node-p', [
        { put: prefixed, expectedVersion: 0 },
        { put: intent, expectedVersion: 0 },
      ]);
      const state = await store.loadNode('node-p');
      expect(state.ips).toEqual([prefixed]);
      expect(state.intents).toEqual([intent]);
    });

    it('round-trips what a node handing out its own addresses records: its report, wants, returns', async () => {
      const handedOut: PoolRecord = {
        ...pool,
        node: 'node-h',
        handout: 'node',
        nodeUse: {
          reportedAt: 2_000,
          leased: [{ ip: '10.0.2.10', since: 1_500 }],
          rested: [{ ip: '10.0.2.11', at: 1_600 }],
        },
      };
      await store.putPool(handedOut, 0);
      expect(await store.getPool('node-h')).toEqual(handedOut);
      const wanted = ip('10.0.2.11', { wantedSince: 1_700 });
      const returned = ip('10.0.2.12', { wantedSince: 1_700, returnedAt: 1_800 });
      await store.commit('node-h', [
        { put: wanted, expectedVersion: 0 },
        { put: returned, expectedVersion: 0 },
      ]);
      expect((await store.loadNode('node-h')).ips).toEqual([wanted, returned]);
    });

    it('grants a lease to one holder until it expires or is given back', async () => {
      await store.putPool({ ...pool, node: 'node-l' }, 0);
      expect(await store.tryLease('node-l', 'one', 100, 200)).toBe(true);
      expect(await store.tryLease('node-l', 'two', 150, 250)).toBe(false);
      expect(await store.tryLease('node-l', 'one', 150, 300)).toBe(true);
      expect(await store.tryLease('node-l', 'two', 301, 400)).toBe(true);
      await store.endLease('node-l', 'one');
      expect(await store.tryLease('node-l', 'one', 302, 400)).toBe(false);
      await store.endLease('node-l', 'two');
      expect(await store.tryLease('node-l', 'one', 302, 400)).toBe(true);
      // The lease survives a pool update.
      const current = await store.getPool('node-l');
      await store.putPool({ ...pool, node: 'node-l', version: 2 }, current?.version ?? 0);
      expect(await store.tryLease('node-l', 'two', 303, 400)).toBe(false);
      expect(await store.tryLease('missing', 'one', 0, 1)).toBe(false);
    });

    it('commits all writes or none and names the write that failed', async () => {
      await store.commit('node-c', [{ put: ip('10.0.0.10'), expectedVersion: 0 }]);
      const other = ip('10.0.0.11', { version: 1 });
      const claimed = ip('10.0.0.10', { state: 'assigned', pod: 'g/p', assignedAt: 5, version: 2 });
      const failure = await store
        .commit('node-c', [
          { put: other, expectedVersion: 0 },
          { put: claimed, expectedVersion: 7 },
        ])
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(EniConflictError);
      expect((failure as EniConflictError).index).toBe(1);
      expect((failure as EniConflictError).key).toEqual({ kind: 'ip', id: '10.0.0.10' });
      expect(await store.getIp('node-c', '10.0.0.11')).toBeUndefined();
      await store.commit('node-c', [
        { put: other, expectedVersion: 0 },
        { put: claimed, expectedVersion: 1 },
      ]);
      expect(await store.getIp('node-c', '10.0.0.10')).toEqual(claimed);
      expect(await store.getIp('node-c', '10.0.0.11')).toEqual(other);
      await store.commit('node-c', [
        { delete: { kind: 'ip', id: '10.0.0.11' }, expectedVersion: 1 },
      ]);
      expect(await store.getIp('node-c', '10.0.0.11')).toBeUndefined();
      // Deleting what is absent succeeds.
      await store.commit('node-c', [{ delete: { kind: 'ip', id: '10.0.0.11' } }]);
    });

    it('reads a node eventually consistent when asked, and sees the same items once settled', async () => {
      await store.commit('node-e', [{ put: ip('10.0.0.12'), expectedVersion: 0 }]);
      expect(await store.loadNode('node-e', 'eventual')).toEqual(await store.loadNode('node-e'));
    });

    it('loads every item of a node, and deletePool removes them all', async () => {
      await store.putPool({ ...pool, node: 'node-d' }, 0);
      await store.commit('node-d', [
        {
          put: {
            kind: 'eni',
            eniId: 'eni-9',
            subnetId: 'subnet-1',
            deviceIndex: 1,
            attachmentId: 'eni-attach-9',
            state: 'attached',
            createdAt: 1,
            mutatingAt: 2,
            version: 1,
          },
          expectedVersion: 0,
        },
        ...Array.from({ length: 120 }, (_, i) => ({
          put: ip(`10.0.1.${i}`, { eniId: 'eni-9', reservedUntil: 9, pod: 'g/x' }),
          expectedVersion: 0,
        })),
        {
          put: {
            kind: 'intent',
            clientToken: 'berth-tok',
            subnetId: 'subnet-1',
            securityGroupIds: ['sg-1'],
            secondaryIpCount: 4,
            createdAt: 3,
            version: 1,
          },
          expectedVersion: 0,
        },
      ]);
      const state = await store.loadNode('node-d');
      expect(state.enis).toHaveLength(1);
      expect(state.ips).toHaveLength(120);
      expect(state.ips.find((r) => r.ip === '10.0.1.7')).toEqual(
        ip('10.0.1.7', { eniId: 'eni-9', reservedUntil: 9, pod: 'g/x' }),
      );
      expect(state.intents[0]?.securityGroupIds).toEqual(['sg-1']);
      await store.deletePool('node-d');
      expect(await store.getPool('node-d')).toBeUndefined();
      const after = await store.loadNode('node-d');
      expect(after.enis.length + after.ips.length + after.intents.length).toBe(0);
    });

    it("reads the primary ENI's record back as written, with the addresses on it that are not berth's", async () => {
      const primary: EniRecord = {
        kind: 'eni',
        eniId: 'eni-0',
        subnetId: 'subnet-1',
        deviceIndex: 0,
        attachmentId: 'eni-attach-0',
        state: 'attached',
        primary: true,
        foreign: ['10.0.0.9', '10.0.0.32/28'],
        primaryIp: '10.0.0.4',
        macAddress: '0a:00:00:00:00:01',
        createdAt: 1,
        mutatingAt: 0,
        version: 1,
      };
      const emptied: EniRecord = { ...primary, foreign: [], version: 2 };
      await store.commit('node-p', [{ put: primary, expectedVersion: 0 }]);
      expect((await store.loadNode('node-p')).enis).toEqual([primary]);
      await store.commit('node-p', [{ put: emptied, expectedVersion: 1 }]);
      expect((await store.loadNode('node-p')).enis).toEqual([emptied]);
      await store.deletePool('node-p');
    });

    it('remembers exhausted subnets', async () => {
      expect(await store.subnetShortUntil('subnet-x', 'addresses')).toBe(0);
      await store.markSubnetShort('subnet-x', 'addresses', 5_000);
      expect(await store.subnetShortUntil('subnet-x', 'addresses')).toBe(5_000);
    });

    it('keeps a subnet short of /28 prefixes apart from one short of addresses', async () => {
      await store.markSubnetShort('subnet-z', 'prefixes', 8_000);
      expect(await store.subnetShortUntil('subnet-z', 'prefixes')).toBe(8_000);
      expect(await store.subnetShortUntil('subnet-z', 'addresses')).toBe(0);
      await store.markSubnetShort('subnet-z', 'addresses', 3_000);
      expect(await store.subnetShortUntil('subnet-z', 'prefixes')).toBe(8_000);
      expect(await store.subnetShortUntil('subnet-z', 'addresses')).toBe(3_000);
    });

    it('keeps the latest exhausted mark when an older one arrives after it', async () => {
      await store.markSubnetShort('subnet-y', 'addresses', 9_000);
      await store.markSubnetShort('subnet-y', 'addresses', 7_000);
      expect(await store.subnetShortUntil('subnet-y', 'addresses')).toBe(9_000);
      await store.markSubnetShort('subnet-y', 'addresses', 12_000);
      expect(await store.subnetShortUntil('subnet-y', 'addresses')).toBe(12_000);
    });

    it('keeps what the node groups needed, written only at the version read', async () => {
      expect(await store.groupUse()).toEqual(NO_GROUP_USE);
      const first = { byType: { 'c5.large': [{ day: 20_000, inUse: 9 }] }, version: 0 };
      expect(await store.putGroupUse(first, 0)).toBe(true);
      expect(await store.groupUse()).toEqual({ ...first, version: 1 });
      // A second pass that read version 0 lost the race: the first pass's figures stand.
      expect(await store.putGroupUse({ byType: {}, version: 0 }, 0)).toBe(false);
      const next = {
        byType: {
          'c5.large': [
            { day: 20_000, inUse: 9 },
            { day: 20_001, inUse: 12 },
          ],
          'm5.xlarge': [{ day: 20_001, inUse: 30 }],
        },
        version: 1,
      };
      expect(await store.putGroupUse(next, 1)).toBe(true);
      expect(await store.groupUse()).toEqual({ ...next, version: 2 });
    });

    it("round-trips a pool's floor", async () => {
      const floored = { ...pool, node: 'node-floor', floor: 18 };
      await store.putPool(floored, 0);
      expect(await store.getPool('node-floor')).toEqual(floored);
      await store.deletePool('node-floor');
    });

    it('never gives one address to two pods under concurrent assigns', async () => {
      const world = eniWorld({ store: await make(), eni: { minIdle: 4, maxIdle: 12 } });
      world.addNode('node-a', 'c5.4xlarge');
      await runEniPass(world.deps);
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i % 12}` }),
        ),
      );
      const byPod = new Map<string, string>();
      answers.forEach((answer, i) => {
        const pod = `p${i % 12}`;
        const earlier = byPod.get(pod);
        if (earlier) expect(answer.ip).toBe(earlier);
        byPod.set(pod, answer.ip);
      });
      expect(new Set(byPod.values()).size).toBe(12);
      await Promise.all(
        [...byPod].map(([pod, address]) =>
          releaseIp(world.deps, 'node-a', address, { namespace: 'g', pod }),
        ),
      );
      const state = await world.store.loadNode('node-a');
      expect(state.ips.filter((r) => r.state === 'assigned')).toHaveLength(0);
    });

    it('keeps the holding container, and a late release racing a new holder frees nothing', async () => {
      const world = eniWorld({
        store: await make(),
        eni: { minIdle: 1, maxIdle: 1, cooldownSeconds: 0 },
      });
      world.addNode('node-a', 'c5.large');
      await runEniPass(world.deps);
      const a = await assignIp(world.deps, 'node-a', {
        namespace: 'g',
        pod: 'a',
        containerId: 'ca',
      });
      expect((await world.store.getIp('node-a', a.ip))?.containerId).toBe('ca');
      const holderA = { namespace: 'g', pod: 'a', containerId: 'ca' };
      // The same DEL twice at once (a kubelet retry), then a new pod: exactly one release lands.
      const outcomes = await Promise.allSettled([
        releaseIp(world.deps, 'node-a', a.ip, holderA),
        releaseIp(world.deps, 'node-a', a.ip, holderA),
      ]);
      const released = outcomes.filter((o) => o.status === 'fulfilled' && o.value.released).length;
      expect(released).toBe(1);
      const b = await assignIp(world.deps, 'node-a', {
        namespace: 'g',
        pod: 'b',
        containerId: 'cb',
      });
      expect(b.ip).toBe(a.ip);
      await expect(releaseIp(world.deps, 'node-a', a.ip, holderA)).rejects.toThrow(/held by g\/b/);
      expect((await world.store.getIp('node-a', b.ip))?.pod).toBe('g/b');
    });
  });
}
