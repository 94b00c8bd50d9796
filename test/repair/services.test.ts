import { describe, expect, it } from 'vitest';
import { rangeKey } from '../../shared/allocation/allocator.js';
import type { Lease } from '../../shared/lease/lease.js';
import { RepairIncompleteError } from '../../shared/repair/errors.js';
import type { RepairSummary } from '../../shared/repair/pass.js';
import type { RepairAllocationStore } from '../../shared/repair/store.js';
import { allocationIdForUid } from '../../shared/vocabulary/allocation-id.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { freeOwner } from '../support/free-owner.js';
import { sid } from '../support/shaped-id.js';
import {
  clusterDuring,
  eventsOf,
  expectNoSuspectsWithinCommitWindow,
  failingAllocations,
  IPS,
  NODE_PORTS,
  repairEnv,
  SETTLED_MS,
  service,
  svcOwner,
} from './support.js';

const ip = (value: string) => ({ slot: 'clusterIP/IPv4', range: IPS, value });
const nodePort = (name: string, value: number) => ({
  slot: `nodePort/${name}`,
  range: NODE_PORTS,
  value: String(value),
});

describe('runRepairPass: Services', () => {
  it('frees a leaked cluster IP and node port on the third pass and not before', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('web'), [
      ip('10.100.0.20'),
      nodePort('http', 30010),
    ]);

    const first = await env.pass();
    const second = await env.coldStart().pass();
    expect(first.released).toBe(0);
    expect(second.released).toBe(0);
    expect(await env.holderOf(IPS, '10.100.0.20')).toBe(sid('gone'));
    expect(await env.holderOf(NODE_PORTS, '30010')).toBe(sid('gone'));

    const third = await env.coldStart().pass();
    expect(third.released).toBe(2);
    expect(third.findings).toEqual({ ClusterIPLeaked: 1, PortLeaked: 1 });
    expect(await env.holderOf(IPS, '10.100.0.20')).toBeUndefined();
    expect(await env.holderOf(NODE_PORTS, '30010')).toBeUndefined();
    // The record of an owner that holds nothing any more goes with its last value.
    expect(await env.allocations.getOwner(sid('gone'))).toBeUndefined();
    expect(await env.ledger.list()).toEqual(new Map());
    expect(env.cluster.events).toEqual([]);
  });

  it('honours another leakGracePasses', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('web'), [ip('10.100.0.21')]);
    expect((await env.pass({}, { leakGracePasses: 1 })).released).toBe(1);
  });

  it('never suspects what a Service not yet stored was given, however often passes run within the commit window', async () => {
    const env = await repairEnv();
    const admitted = env.clock.now;
    // A named Service's CREATE: the claims only (no owner record), the apiserver yet to store it.
    await env.admitting.assign(
      sid('new'),
      svcOwner('web'),
      [ip('10.100.0.22'), nodePort('http', 30011)],
      { current: 'none', unrecorded: true },
    );
    await expectNoSuspectsWithinCommitWindow(env, admitted);
    expect(await env.holderOf(IPS, '10.100.0.22')).toBe(sid('new'));
    expect(await env.holderOf(NODE_PORTS, '30011')).toBe(sid('new'));

    // Past the window the CREATE was stored or refused: never stored, its values are a leak.
    env.clock.now = admitted + COMMIT_WINDOW_MS + 1_000;
    const freed = await env.pass({}, { leakGracePasses: 1 });
    expect(freed.findings).toEqual({ ClusterIPLeaked: 1, PortLeaked: 1 });
    expect(await env.holderOf(IPS, '10.100.0.22')).toBeUndefined();
  });

  it('restarts the countdown when the owner is seen again', async () => {
    const env = await repairEnv();
    const id = allocationIdForUid('uid-web');
    await env.allocator.assign(id, svcOwner('web'), [ip('10.100.0.30')]);
    const live = service('web', { clusterIPs: ['10.100.0.30'] });

    await env.pass();
    await env.pass();
    env.cluster.withServices(live);
    expect((await env.pass()).released).toBe(0);
    env.cluster.services.clear();
    await env.pass();
    await env.pass();
    expect(await env.holderOf(IPS, '10.100.0.30')).toBe(id);
    expect((await env.pass()).released).toBe(1);
    expect(await env.holderOf(IPS, '10.100.0.30')).toBeUndefined();
  });

  it('records the values of a Service the store does not hold, with Events', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('web', {
        id: sid('webid'),
        clusterIPs: ['10.100.0.40'],
        ports: [{ name: 'http', nodePort: 30040 }],
      }),
    );
    const summary = await env.pass();

    expect(summary.recorded).toBe(2);
    expect(summary.findings).toEqual({ ClusterIPNotAllocated: 1, PortNotAllocated: 1 });
    expect(await env.holderOf(IPS, '10.100.0.40')).toBe(sid('webid'));
    expect(await env.holderOf(NODE_PORTS, '30040')).toBe(sid('webid'));
    const record = await env.allocations.getOwner(sid('webid'));
    expect(record?.owner).toEqual(svcOwner('web'));
    expect(record?.claims).toEqual(
      expect.arrayContaining([
        { slot: 'clusterIP/IPv4', range: rangeKey(IPS), offset: 39 },
        { slot: 'nodePort/http', range: rangeKey(NODE_PORTS), offset: 40 },
      ]),
    );
    expect(eventsOf(env.cluster)).toEqual([
      'ClusterIPNotAllocated Service/default/web',
      'PortNotAllocated Service/default/web',
    ]);
    expect(env.cluster.events[0]?.message).toBe(
      'Cluster IP [IPv4]:10.100.0.40 is not allocated; repairing',
    );
    // Repaired: the next pass finds nothing.
    env.cluster.events.length = 0;
    const again = await env.pass();
    expect(again.findings).toEqual({});
    expect(again.recorded).toBe(0);
  });

  it('uses the id derived from the uid for a Service without an allocation id', async () => {
    const env = await repairEnv();
    env.cluster.withServices(service('plain', { uid: 'u-123', clusterIPs: ['10.100.0.41'] }));
    await env.pass();
    expect(await env.holderOf(IPS, '10.100.0.41')).toBe(allocationIdForUid('u-123'));
  });

  it('reports a duplicate on every owner but the one holding the value, and changes nothing', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('bid'), svcOwner('b'), [ip('10.100.0.50')]);
    env.cluster.withServices(
      service('a', { id: sid('aid'), clusterIPs: ['10.100.0.50'] }),
      service('b', { id: sid('bid'), clusterIPs: ['10.100.0.50'] }),
      service('c', { id: sid('cid'), clusterIPs: ['10.100.0.50'] }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ ClusterIPAlreadyAllocated: 2 });
    expect(summary.recorded).toBe(0);
    expect(eventsOf(env.cluster)).toEqual([
      'ClusterIPAlreadyAllocated Service/default/a',
      'ClusterIPAlreadyAllocated Service/default/c',
    ]);
    expect(await env.holderOf(IPS, '10.100.0.50')).toBe(sid('bid'));
  });

  it('records a duplicated unrecorded value for the first Service listed only', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('a', { id: sid('aid'), ports: [{ nodePort: 30050 }] }),
      service('b', { id: sid('bid'), ports: [{ nodePort: 30050 }] }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ PortNotAllocated: 1, PortAlreadyAllocated: 1 });
    expect(eventsOf(env.cluster)).toEqual([
      'PortAlreadyAllocated Service/default/b',
      'PortNotAllocated Service/default/a',
    ]);
    expect(await env.holderOf(NODE_PORTS, '30050')).toBe(sid('aid'));
  });

  it('reports values outside the configured ranges and invalid IPs, and records none', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('far', {
        id: sid('farid'),
        clusterIPs: ['10.200.0.1'],
        ports: [{ nodePort: 31000 }],
      }),
      service('bad', { id: sid('badid'), clusterIPs: ['not-an-ip'] }),
      service('v6', { id: sid('v6id'), clusterIPs: ['fd00::1'] }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({
      ClusterIPOutOfRange: 1,
      PortOutOfRange: 1,
      ClusterIPNotValid: 2,
    });
    expect(summary.recorded).toBe(0);
    const messages = env.cluster.events.map((e) => e.message).sort();
    expect(messages).toEqual([
      'Cluster IP [IPv4]:10.200.0.1 is not within the service CIDR 10.100.0.0/24; please recreate service',
      'Cluster IP fd00::1(IPv6) is of ip family that is no longer configured on cluster; please recreate service',
      'Cluster IP not-an-ip is not a valid IP; please recreate service',
      'Port 31000 is not within the port range 30000-30099; please recreate service',
    ]);
    expect(await env.allocations.getOwner(sid('farid'))).toBeUndefined();
  });

  it('shares one node port between the TCP and UDP entries of one Service', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('dns', {
        id: sid('dnsid'),
        ports: [
          { name: 'dns-tcp', port: 53, protocol: 'TCP', nodePort: 30053 },
          { name: 'dns-udp', port: 53, protocol: 'UDP', nodePort: 30053 },
        ],
      }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ PortNotAllocated: 1 });
    expect(summary.recorded).toBe(1);
    expect(await env.holderOf(NODE_PORTS, '30053')).toBe(sid('dnsid'));
  });

  it('reports one node port listed twice for one protocol as a duplicate', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('twice', {
        id: sid('twiceid'),
        ports: [
          { name: 'a', port: 80, nodePort: 30060 },
          { name: 'b', port: 81, nodePort: 30060 },
        ],
      }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ PortNotAllocated: 1, PortAlreadyAllocated: 1 });
    expect(eventsOf(env.cluster)).toEqual([
      'PortAlreadyAllocated Service/default/twice',
      'PortNotAllocated Service/default/twice',
    ]);
  });

  it('reports a healthCheckNodePort equal to a TCP node port, not one equal to a UDP-only one', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('tcp', {
        id: sid('tcpid'),
        type: 'LoadBalancer',
        ports: [{ name: 'http', protocol: 'TCP', nodePort: 30070 }],
        healthCheckNodePort: 30070,
      }),
      service('udp', {
        id: sid('udpid'),
        type: 'LoadBalancer',
        ports: [{ name: 'game', protocol: 'UDP', nodePort: 30071 }],
        healthCheckNodePort: 30071,
      }),
      service('own', {
        id: sid('ownid'),
        type: 'LoadBalancer',
        ports: [{ name: 'http', protocol: 'TCP', nodePort: 30072 }],
        healthCheckNodePort: 30073,
      }),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ PortNotAllocated: 4, PortAlreadyAllocated: 1 });
    expect(eventsOf(env.cluster)).toContain('PortAlreadyAllocated Service/default/tcp');
    expect(await env.holderOf(NODE_PORTS, '30071')).toBe(sid('udpid'));
    expect(await env.holderOf(NODE_PORTS, '30073')).toBe(sid('ownid'));
    const record = await env.allocations.getOwner(sid('ownid'));
    expect(record?.claims.map((c) => c.slot).sort()).toEqual([
      'healthCheckNodePort',
      'nodePort/http',
    ]);
  });

  it('moves a value held by an id no live object has to the live Service carrying it', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('stale'), svcOwner('old'), [
      ip('10.100.0.80'),
      ip2('10.100.0.81'),
    ]);
    env.cluster.withServices(service('new', { id: sid('newid'), clusterIPs: ['10.100.0.80'] }));
    const summary = await env.pass();
    expect(summary.findings).toEqual({ ClusterIPNotAllocated: 1 });
    expect(summary.recorded).toBe(1);
    expect(await env.holderOf(IPS, '10.100.0.80')).toBe(sid('newid'));
    // The stale holder keeps what it still holds, minus the value that moved.
    const stale = await env.allocations.getOwner(sid('stale'));
    expect(stale?.claims.map((c) => c.offset)).toEqual([80]);
  });

  it('waits out the grace before moving a value from a live Service that no longer carries it', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('holder'), svcOwner('h'), [
      ip('10.100.0.90'),
      nodePort('x', 30090),
    ]);
    env.cluster.withServices(
      service('h', { id: sid('holder'), ports: [{ name: 'x', nodePort: 30090 }] }),
      service('user', { id: sid('userid'), clusterIPs: ['10.100.0.90'] }),
    );
    expect((await env.pass()).recorded).toBe(0);
    expect((await env.pass()).recorded).toBe(0);
    const third = await env.pass();
    expect(third.findings).toEqual({ ClusterIPLeaked: 1, ClusterIPNotAllocated: 1 });
    expect(third).toMatchObject({ recorded: 1, released: 1 });
    expect(await env.holderOf(IPS, '10.100.0.90')).toBe(sid('userid'));
    expect((await env.allocations.getOwner(sid('holder')))?.claims.map((c) => c.slot)).toEqual([
      'nodePort/x',
    ]);
  });

  it('spares what a Service being deleted still holds and records nothing for it', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('fin'), svcOwner('lb'), [ip('10.100.0.100')]);
    env.cluster.withServices(
      service('lb', { id: sid('fin'), clusterIPs: ['10.100.0.100'], deleting: true }),
      service('lb2', { id: sid('fin2'), clusterIPs: ['10.100.0.101'], deleting: true }),
    );
    for (let i = 0; i < 4; i++) await env.pass();
    expect(await env.holderOf(IPS, '10.100.0.100')).toBe(sid('fin'));
    expect(await env.holderOf(IPS, '10.100.0.101')).toBeUndefined();
    expect(env.cluster.events).toEqual([]);

    // A live Service carrying it meanwhile is a duplicate until the deleted one is gone.
    env.cluster.withServices(service('next', { id: sid('nextid'), clusterIPs: ['10.100.0.100'] }));
    for (let i = 0; i < 3; i++) {
      expect((await env.pass()).findings).toEqual({ ClusterIPAlreadyAllocated: 1 });
    }
    expect(await env.holderOf(IPS, '10.100.0.100')).toBe(sid('fin'));
    env.cluster.services.delete('default/lb');
    expect((await env.pass()).findings).toEqual({ ClusterIPNotAllocated: 1 });
    expect(await env.holderOf(IPS, '10.100.0.100')).toBe(sid('nextid'));
  });

  it('deletes an owner record that holds nothing and has no Service, after the grace', async () => {
    const env = await repairEnv();
    await env.allocations.putOwner(
      {
        id: sid('intent'),
        owner: svcOwner('x'),
        claims: [],
        version: 1,
        createdAt: env.clock.now - SETTLED_MS,
      },
      0,
    );
    await env.pass();
    await env.pass();
    expect(await env.allocations.getOwner(sid('intent'))).toBeDefined();
    const third = await env.pass();
    expect(third.findings).toEqual({ OwnerRecordLeaked: 1 });
    expect(await env.allocations.getOwner(sid('intent'))).toBeUndefined();
  });

  it('keeps an owner record rewritten after the snapshot instead of deleting it', async () => {
    const env = await repairEnv();
    const record = {
      id: sid('intent'),
      owner: svcOwner('x'),
      claims: [],
      createdAt: env.clock.now - SETTLED_MS,
    };
    await env.allocations.putOwner({ ...record, version: 1 }, 0);
    await env.pass();
    await env.pass();
    // A webhook rewrites the record just before the third pass deletes the version it counted.
    const racing: RepairAllocationStore = {
      ...failingAllocations(env.allocations, 'claim', Number.POSITIVE_INFINITY, new Error()),
      deleteOwner: async (id, version) => {
        await env.allocations.putOwner({ ...record, version: 2 }, 1);
        return env.allocations.deleteOwner(id, version);
      },
    };
    const third = await env.pass({ allocations: racing });
    expect(third.findings).toEqual({});
    expect(third.conflicts).toBe(1);
    expect((await env.allocations.getOwner(sid('intent')))?.version).toBe(2);
  });

  it('maps only a failed lease acquisition to the snapshot stage', async () => {
    const env = await repairEnv();
    const down = new Error('lease table unavailable');
    const unreachable: Lease = {
      acquireLease: () => Promise.reject(down),
      renewLease: (n, h, t) => env.lease.renewLease(n, h, t),
      releaseLease: (n, h) => env.lease.releaseLease(n, h),
    };
    await expect(env.pass({ lease: unreachable })).rejects.toMatchObject({
      name: 'RepairIncompleteError',
      stage: 'snapshot',
      cause: down,
    });
    // A failed release loses nothing: the pass's summary stands, and the TTL frees the lease.
    const sticky: Lease = {
      acquireLease: (n, h, t) => env.lease.acquireLease(n, h, t),
      renewLease: (n, h, t) => env.lease.renewLease(n, h, t),
      releaseLease: () => Promise.reject(new Error('throttled')),
    };
    const summary = await env.pass({ lease: sticky, holder: 'sticky' });
    expect(summary).toMatchObject({ findings: {}, conflicts: 0 });
    expect(summary.skipped).toBeUndefined();
    // A failed pass keeps its own stage although the release fails too.
    env.cluster.failNext('listServices', new Error('apiserver unavailable'));
    await expect(env.pass({ lease: sticky, holder: 'sticky' })).rejects.toMatchObject({
      stage: 'list',
    });
  });

  it('never frees a value allocated while the pass is listing', async () => {
    const env = await repairEnv();
    env.cluster.withServices(service('a', { id: sid('aid'), clusterIPs: ['10.100.0.110'] }));
    const cluster = clusterDuring(env.cluster, async () => {
      // An admission racing the pass: allocated after the snapshot, its Service not listed yet.
      await env.allocator.assign(sid('racer'), svcOwner('r'), [ip('10.100.0.111')]);
    });
    const summary = await env.pass({ cluster }, { leakGracePasses: 1 });
    expect(summary.released).toBe(0);
    expect(await env.holderOf(IPS, '10.100.0.111')).toBe(sid('racer'));
  });

  it('never frees a value that changed hands while the pass was listing', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('g'), [ip('10.100.0.120')]);
    const cluster = clusterDuring(env.cluster, async () => {
      await freeOwner(env.allocator, sid('gone'));
      await env.allocator.assign(sid('racer'), svcOwner('r'), [ip('10.100.0.120')]);
    });
    env.cluster.withServices(service('other', { id: sid('o'), clusterIPs: ['10.100.0.121'] }));
    const summary = await env.pass({ cluster }, { leakGracePasses: 1 });
    expect(summary.released).toBe(0);
    expect(summary.conflicts).toBeGreaterThan(0);
    expect(await env.holderOf(IPS, '10.100.0.120')).toBe(sid('racer'));
  });

  it('finishes a release whose settle task was lost, and only once the Service no longer carries it', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('lost'), svcOwner('lb'), [ip('10.100.0.130')]);
    await env.allocator.giveBack(sid('lost'));
    // Still stored, held by a finalizer: the value stays its own.
    env.cluster.withServices(
      service('lb', { id: sid('lost'), clusterIPs: ['10.100.0.130'], deleting: true }),
    );
    env.clock.now += 5 * 60_000;
    expect((await env.pass()).released).toBe(0);
    expect(await env.holderOf(IPS, '10.100.0.130')).toBe(sid('lost'));
    // Gone: the first pass after frees it, without waiting out the leak grace.
    env.cluster.services.clear();
    env.clock.now += 5 * 60_000;
    expect((await env.pass()).released).toBe(1);
    expect(await env.holderOf(IPS, '10.100.0.130')).toBeUndefined();
    expect(await env.allocations.getOwner(sid('lost'))).toBeUndefined();
  });

  it('trims from a live Service record a claim it neither holds nor carries, on the grace-th pass', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('trim'), svcOwner('t'), [ip('10.100.0.140')]);
    // An UPDATE's intent that a crash cut short: recorded, never claimed, never stored.
    const record = await env.allocations.getOwner(sid('trim'));
    if (!record) throw new Error('no record');
    await env.allocations.putOwner(
      {
        ...record,
        claims: [...record.claims, { slot: 'nodePort/x', range: rangeKey(NODE_PORTS), offset: 42 }],
        version: record.version + 1,
      },
      record.version,
    );
    env.cluster.withServices(service('t', { id: sid('trim'), clusterIPs: ['10.100.0.140'] }));
    for (let pass = 1; pass <= 3; pass++) {
      await env.pass();
      const claims = (await env.allocations.getOwner(sid('trim')))?.claims ?? [];
      expect(claims.length).toBe(pass < 3 ? 2 : 1);
    }
    expect(await env.holderOf(IPS, '10.100.0.140')).toBe(sid('trim'));
  });

  it('reports no NotAllocated for a value its owner claimed after the pass read the store', async () => {
    const env = await repairEnv();
    env.cluster.withServices(
      service('early', { id: sid('early'), clusterIPs: ['10.100.0.160'] }),
      service('late', { id: sid('late'), clusterIPs: ['10.100.0.161'] }),
    );
    // The webhook allocates for `late` while the pass lists: the store said free, now it is not.
    const cluster = clusterDuring(env.cluster, async () => {
      await env.allocator.assign(sid('late'), svcOwner('late'), [ip('10.100.0.161')]);
    });
    const summary = await env.pass({ cluster });
    expect(summary.findings.ClusterIPNotAllocated).toBe(1);
    expect(env.cluster.events.map((e) => e.involvedObject.name)).toEqual(['early']);
    expect(await env.holderOf(IPS, '10.100.0.161')).toBe(sid('late'));
  });

  it('lets one of two overlapping passes run and reports the other as skipped', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('g'), [ip('10.100.0.130')]);
    let inner: RepairSummary | undefined;
    // The second pass starts while the first one is listing, as a slow pass and the next schedule.
    const cluster = clusterDuring(env.cluster, async () => {
      inner = await env.coldStart().pass();
    });
    const outer = await env.pass({ cluster });
    expect(outer.skipped).toBeUndefined();
    expect(inner?.skipped).toMatch(/^lease held by test-\d+ until 2036-03-01T12:05:00.000Z$/);
    expect(inner).toMatchObject({ findings: {}, released: 0, recorded: 0 });
    // Only one pass counted: the leak is on its first sighting.
    expect([...(await env.ledger.list()).values()].map((c) => c.passes)).toEqual([1]);
  });

  it('skips while a dead holder’s lease lasts, and runs once it expired', async () => {
    const env = await repairEnv();
    await env.lease.acquireLease('repair', 'crashed', 60_000);
    expect((await env.pass()).skipped).toContain('lease held by crashed');
    env.clock.now += 60_001;
    expect((await env.pass()).skipped).toBeUndefined();
  });

  it('stops a pass whose listing fails without advancing any leak counter', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('g'), [ip('10.100.0.140')]);
    await env.pass();
    env.cluster.failNext('listServices', new Error('apiserver unavailable'));
    const failed = env.pass();
    await expect(failed).rejects.toThrow(RepairIncompleteError);
    await expect(failed).rejects.toMatchObject({ stage: 'list' });
    expect([...(await env.ledger.list()).values()].map((c) => c.passes)).toEqual([1]);
    await env.pass();
    expect(await env.holderOf(IPS, '10.100.0.140')).toBe(sid('gone'));
    expect((await env.pass()).released).toBe(1);
  });

  it('recovers from a crash in the middle of the writes with a clean next pass', async () => {
    const env = await repairEnv();
    await env.allocator.assign(sid('gone'), svcOwner('g'), [ip('10.100.0.160')]);
    await env.pass();
    await env.pass();
    env.cluster.withServices(
      ...Array.from({ length: 6 }, (_, i) =>
        service(`s${i}`, { id: sid(`id${i}`), clusterIPs: [`10.100.0.${150 + i}`] }),
      ),
    );
    const crashing = failingAllocations(env.allocations, 'claim', 3, new Error('store crashed'));
    await expect(env.pass({ allocations: crashing }, { concurrency: 1 })).rejects.toMatchObject({
      name: 'RepairIncompleteError',
      stage: 'write',
      recorded: 2,
    });
    // The crashed pass advanced no counter: the leak is still at two sightings.
    expect([...(await env.ledger.list()).values()].map((c) => c.passes)).toEqual([2]);
    expect(await env.holderOf(IPS, '10.100.0.160')).toBe(sid('gone'));

    const clean = await env.pass();
    expect(clean.findings).toEqual({ ClusterIPNotAllocated: 4, ClusterIPLeaked: 1 });
    expect(clean).toMatchObject({ recorded: 4, released: 1, conflicts: 0 });
    for (let i = 0; i < 6; i++) {
      expect(await env.holderOf(IPS, `10.100.0.${150 + i}`)).toBe(sid(`id${i}`));
      expect((await env.allocations.getOwner(sid(`id${i}`)))?.claims).toHaveLength(1);
    }
    expect(await env.holderOf(IPS, '10.100.0.160')).toBeUndefined();
    expect((await env.pass()).findings).toEqual({});
  });
});

function ip2(value: string) {
  return { slot: 'clusterIP/extra', range: IPS, value };
}
