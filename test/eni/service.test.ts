import { describe, expect, it } from 'vitest';
import { BERTH_TAGS, tagValue } from '../../shared/ec2/network.js';
import {
  EniBadRequestError,
  EniConflictError,
  IpHeldByAnotherError,
  PoolExhaustedError,
  UnknownNodeError,
} from '../../shared/eni/errors.js';
import type { NodeState } from '../../shared/eni/model.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp, handleAssignIp, handleReleaseIp, releaseIp } from '../../shared/eni/service.js';
import { eniPoolStatus } from '../../shared/eni/status.js';
import type { NodeWrite } from '../../shared/eni/store.js';
import { eniWorld, SUBNET_CIDR } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';

/** The in-memory store, recording every commit's writes. */
class CommitRecordingStore extends InMemoryEniStore {
  readonly commits: NodeWrite[][] = [];
  override async commit(node: string, writes: readonly NodeWrite[]) {
    this.commits.push([...writes]);
    return super.commit(node, writes);
  }
}

/**
 * The in-memory store whose first node read for `staleFor` is served from before a claim: what a
 * retried request sees when it reads while its first attempt's claim is still in flight.
 */
class StaleReadStore extends InMemoryEniStore {
  stale: NodeState | undefined;
  override async loadNode(node: string) {
    const stale = this.stale;
    this.stale = undefined;
    return stale ?? super.loadNode(node);
  }
}

/**
 * The in-memory store whose next commit lands and then fails its condition, as a write does when
 * the SDK resends it after a lost answer; `meanwhile` runs between the two.
 */
class ResentWriteStore extends InMemoryEniStore {
  resendNext: (() => Promise<void>) | undefined;
  override async commit(node: string, writes: readonly NodeWrite[]) {
    await super.commit(node, writes);
    const meanwhile = this.resendNext;
    if (!meanwhile) return;
    this.resendNext = undefined;
    await meanwhile();
    const [write] = writes;
    throw new EniConflictError(
      node,
      0,
      write && 'put' in write ? { kind: write.put.kind, id: 'resent' } : undefined,
    );
  }
}

/** The in-memory store, counting lease attempts (each one is a refill or a pass over a pool). */
class LeaseCountingStore extends InMemoryEniStore {
  leases = 0;
  override async tryLease(node: string, holder: string, now: number, until: number) {
    this.leases++;
    return super.tryLease(node, holder, now, until);
  }
}

describe('assignIp', () => {
  it('creates the pool on first use and answers an address of the primary ENI, naming its device and MAC', async () => {
    const world = eniWorld();
    const instanceId = world.addNode('node-a');
    const answer = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    expect(answer.subnetCidr).toBe(SUBNET_CIDR);
    expect(answer.gateway).toBe('10.0.0.1');
    const eni = world.ec2.networkInterface(answer.eniId);
    expect(eni?.attachment).toMatchObject({ instanceId, deviceIndex: 0 });
    expect(eni?.secondaryIps).toContain(answer.ip);
    expect(answer.ip).not.toBe(eni?.primaryIp);
    // The CNI plugin routes it by the main table, as the node's own traffic (no source routing).
    expect(answer).toMatchObject({ deviceIndex: 0, macAddress: eni?.macAddress });
    expect(world.ec2.counts.get('CreateNetworkInterface') ?? 0).toBe(0);
  });

  it('creates a tagged berth ENI once the primary ENI is full, and answers the subnet gateway', async () => {
    const world = eniWorld();
    const instanceId = world.addNode('node-a');
    world.ec2.occupyPrimary(instanceId);
    const answer = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    expect(answer.subnetCidr).toBe(SUBNET_CIDR);
    expect(answer.gateway).toBe('10.0.0.1');
    const eni = world.ec2.networkInterface(answer.eniId);
    expect(eni?.secondaryIps).toContain(answer.ip);
    expect(eni?.attachment).toMatchObject({ instanceId, deleteOnTermination: true });
    expect(eni?.attachment?.deviceIndex).toBe(1);
    expect(tagValue(eni?.tags ?? [], BERTH_TAGS.cluster)).toBe('test');
    expect(tagValue(eni?.tags ?? [], BERTH_TAGS.node)).toBe('node-a');
    expect(tagValue(eni?.tags ?? [], BERTH_TAGS.instance)).toBe(instanceId);
    expect(tagValue(eni?.tags ?? [], BERTH_TAGS.createdAt)).toBe(
      new Date(world.clock.now).toISOString(),
    );
    // aws-node's ipamd leaves it alone, and the CNI plugin finds its link by MAC.
    expect(tagValue(eni?.tags ?? [], 'node.k8s.amazonaws.com/no_manage')).toBe('true');
    expect(answer).toMatchObject({ deviceIndex: 1, macAddress: eni?.macAddress });
    expect(eni?.macAddress).toMatch(/^0a(:[0-9a-f]{2}){5}$/);
  });

  it('answers a repeated request with the same address', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    const first = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    const calls = world.ec2.mutatingCalls();
    const again = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    expect(again).toEqual(first);
    expect(world.ec2.mutatingCalls()).toBe(calls);
  });

  it('answers concurrent requests of one pod with one address', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    await runEniPass(world.deps);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' }),
      ),
    );
    expect(new Set(answers.map((a) => a.ip)).size).toBe(1);
  });

  it('claims with one write of the address record, and releases with one', async () => {
    const store = new CommitRecordingStore();
    const world = eniWorld({ store });
    world.addNode('node-a');
    await runEniPass(world.deps);
    store.commits.length = 0;
    const held = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    await releaseIp(world.deps, 'node-a', held.ip, { namespace: 'games', pod: 'gs-1' });
    expect(
      store.commits.map((writes) => writes.map((w) => ('put' in w ? w.put.kind : 'delete'))),
    ).toEqual([['ip'], ['ip']]);
  });

  it('answers a retry that lost its address to its own first attempt with that address', async () => {
    const store = new StaleReadStore();
    const world = eniWorld({ store });
    world.addNode('node-a');
    await runEniPass(world.deps);
    const before = await store.loadNode('node-a');
    const first = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    // The retry read the pool before the first claim landed: it tries the same address first.
    store.stale = before;
    const retry = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    expect(retry).toEqual(first);
    const held = (await store.loadNode('node-a')).ips.filter((ip) => ip.pod === 'games/gs-1');
    expect(held.map((ip) => ip.ip)).toEqual([first.ip]);
  });

  it('knows its own release landed when the resent write fails, even after another pod claimed the address', async () => {
    const store = new ResentWriteStore();
    const world = eniWorld({ store, eni: { cooldownSeconds: 0, minIdle: 0, maxIdle: 1 } });
    world.addNode('node-a');
    const held = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    let next: { ip: string } | undefined;
    store.resendNext = async () => {
      next = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-2' });
    };
    const released = await releaseIp(world.deps, 'node-a', held.ip, {
      namespace: 'games',
      pod: 'gs-1',
    });
    expect(next?.ip).toBe(held.ip);
    expect(released).toEqual({ released: true });
  });

  it('gives concurrent pods distinct addresses', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    await runEniPass(world.deps);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        assignIp(world.deps, 'node-a', { namespace: 'games', pod: `gs-${i}` }),
      ),
    );
    expect(new Set(answers.map((a) => a.ip)).size).toBe(12);
  });

  it('refuses a node that is not in the cluster with UnknownNodeError', async () => {
    const world = eniWorld();
    await expect(
      assignIp(world.deps, 'ghost', { namespace: 'games', pod: 'gs-1' }),
    ).rejects.toBeInstanceOf(UnknownNodeError);
  });

  it('refuses with PoolExhaustedError once the instance type is full', async () => {
    // t3.medium: 3 ENIs × 6 IPv4, the primary ENI among them → 3 × 5 = 15 pod IPs.
    const world = eniWorld({ eni: { minIdle: 0, maxIdle: 2 } });
    world.addNode('node-a', 't3.medium');
    for (let i = 0; i < 15; i++) {
      await assignIp(world.deps, 'node-a', { namespace: 'games', pod: `gs-${i}` });
    }
    await expect(
      assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-15' }),
    ).rejects.toBeInstanceOf(PoolExhaustedError);
    const berthEnis = world.ec2
      .allInterfaces()
      .filter((eni) => tagValue(eni.tags, BERTH_TAGS.cluster) === 'test');
    expect(berthEnis).toHaveLength(2);
  });

  it('answers a full pool with PoolExhaustedError without trying to refill', async () => {
    const store = new LeaseCountingStore();
    const world = eniWorld({ store, eni: { minIdle: 0, maxIdle: 2 } });
    world.addNode('node-a', 't3.medium');
    for (let i = 0; i < 15; i++) {
      await assignIp(world.deps, 'node-a', { namespace: 'games', pod: `gs-${i}` });
    }
    const leases = store.leases;
    const calls = world.ec2.mutatingCalls();
    await expect(
      assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-15' }),
    ).rejects.toBeInstanceOf(PoolExhaustedError);
    expect(store.leases).toBe(leases);
    expect(world.ec2.mutatingCalls()).toBe(calls);
  });

  it('answers a repeated request without reading the pod from the cluster again', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    const first = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    const getPod = world.deps.cluster.getPod.bind(world.deps.cluster);
    let lookups = 0;
    const cluster = Object.assign(Object.create(world.deps.cluster), {
      getPod: (namespace: string, name: string) => {
        lookups++;
        return getPod(namespace, name);
      },
    });
    const again = await assignIp({ ...world.deps, cluster }, 'node-a', {
      namespace: 'games',
      pod: 'gs-1',
    });
    expect(again).toEqual(first);
    expect(lookups).toBe(0);
  });

  it('creates a second ENI only when the first is full', async () => {
    const world = eniWorld({ eni: { minIdle: 0, maxIdle: 1 } });
    world.addNode('node-a', 'c5.large');
    const eniIds = new Set<string>();
    for (let i = 0; i < 9; i++) {
      eniIds.add((await assignIp(world.deps, 'node-a', { namespace: 'g', pod: `p${i}` })).eniId);
    }
    expect(eniIds.size).toBe(1);
    eniIds.add((await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p9' })).eniId);
    expect(eniIds.size).toBe(2);
  });
});

describe('releaseIp', () => {
  it('releases once and answers released: false for a repeated release', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    const { ip } = await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    const holder = { namespace: 'games', pod: 'gs-1' };
    expect(await releaseIp(world.deps, 'node-a', ip, holder)).toEqual({ released: true });
    expect(await releaseIp(world.deps, 'node-a', ip, holder)).toEqual({ released: false });
  });

  it('keeps a released address out of reach until the cooldown has passed', async () => {
    const world = eniWorld({ eni: { minIdle: 0, maxIdle: 1, cooldownSeconds: 60 } });
    world.addNode('node-a');
    const first = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'a' });
    await releaseIp(world.deps, 'node-a', first.ip, { namespace: 'g', pod: 'a' });
    const second = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'b' });
    expect(second.ip).not.toBe(first.ip);
    await releaseIp(world.deps, 'node-a', second.ip, { namespace: 'g', pod: 'b' });
    world.clock.now += 61_000;
    // Both rested now; the longest-rested (first) goes out first.
    const third = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'c' });
    expect(third.ip).toBe(first.ip);
  });

  it('gives a StatefulSet pod its previous address back within stickySeconds', async () => {
    const world = eniWorld({ eni: { stickySeconds: 300, cooldownSeconds: 60 } });
    world.addNode('node-a');
    world.cluster.withPods(boundPod('db', 'web-0', 'node-a', { statefulSet: true }));
    const first = await assignIp(world.deps, 'node-a', { namespace: 'db', pod: 'web-0' });
    await releaseIp(world.deps, 'node-a', first.ip, { namespace: 'db', pod: 'web-0' });
    world.clock.now += 10_000;
    const other = await assignIp(world.deps, 'node-a', { namespace: 'db', pod: 'other' });
    expect(other.ip).not.toBe(first.ip);
    const again = await assignIp(world.deps, 'node-a', { namespace: 'db', pod: 'web-0' });
    expect(again.ip).toBe(first.ip);
  });

  it('honours the sticky-ip annotation, and lets the reservation lapse after stickySeconds', async () => {
    const world = eniWorld({
      eni: { stickySeconds: 120, cooldownSeconds: 0, minIdle: 0, maxIdle: 1 },
    });
    world.addNode('node-a');
    world.cluster.withPods(boundPod('g', 'pinned', 'node-a', { stickyAnnotation: true }));
    const first = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'pinned' });
    await releaseIp(world.deps, 'node-a', first.ip, { namespace: 'g', pod: 'pinned' });
    world.clock.now += 121_000;
    const stranger = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'stranger' });
    expect(stranger.ip).toBe(first.ip);
  });
});

describe('releaseIp keyed by holder', () => {
  it('refuses a late release for a pod whose IP has since gone to another pod, and changes nothing', async () => {
    const world = eniWorld({ eni: { minIdle: 0, maxIdle: 1, cooldownSeconds: 30 } });
    world.addNode('node-a');
    const a = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'a', containerId: 'ca' });
    expect(await releaseIp(world.deps, 'node-a', a.ip, { namespace: 'g', pod: 'a' })).toEqual({
      released: true,
    });
    world.clock.now += 31_000;
    const b = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'b', containerId: 'cb' });
    expect(b.ip).toBe(a.ip);
    // kubelet retries the DEL of pod a: it must not free b's address.
    const late = await releaseIp(world.deps, 'node-a', a.ip, {
      namespace: 'g',
      pod: 'a',
      containerId: 'ca',
    }).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(IpHeldByAnotherError);
    expect((late as IpHeldByAnotherError).statusCode).toBe(409);
    expect((await world.store.getIp('node-a', a.ip))?.pod).toBe('g/b');
    world.clock.now += 31_000;
    const c = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'c' });
    expect(c.ip).not.toBe(a.ip);
  });

  it('frees only for the container that holds the IP, and follows a new sandbox of the same pod', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    const first = await assignIp(world.deps, 'node-a', {
      namespace: 'g',
      pod: 'p',
      containerId: 'old',
    });
    const again = await assignIp(world.deps, 'node-a', {
      namespace: 'g',
      pod: 'p',
      containerId: 'new',
    });
    expect(again).toEqual(first);
    await expect(
      releaseIp(world.deps, 'node-a', first.ip, { namespace: 'g', pod: 'p', containerId: 'old' }),
    ).rejects.toBeInstanceOf(IpHeldByAnotherError);
    expect(
      await releaseIp(world.deps, 'node-a', first.ip, {
        namespace: 'g',
        pod: 'p',
        containerId: 'new',
      }),
    ).toEqual({ released: true });
  });

  it('answers released: false for an address that is free or was never assigned, on any node', async () => {
    const world = eniWorld();
    // No pool yet (a DEL before any ADD), and a node that is no node of the cluster.
    for (const node of ['node-a', 'ghost']) {
      expect(await releaseIp(world.deps, node, '10.0.0.9', { namespace: 'g', pod: 'p' })).toEqual({
        released: false,
      });
    }
    world.addNode('node-a');
    const { ip } = await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p' });
    await releaseIp(world.deps, 'node-a', ip, { namespace: 'g', pod: 'p' });
    expect(await releaseIp(world.deps, 'node-a', ip, { namespace: 'g', pod: 'other' })).toEqual({
      released: false,
    });
    expect(await releaseIp(world.deps, 'node-a', '10.9.9.9', { namespace: 'g', pod: 'p' })).toEqual(
      { released: false },
    );
  });

  it('names a missing namespace or pod in the query', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    await expect(handleReleaseIp(world.deps, 'node-a', '10.0.0.1', { pod: 'p' })).rejects.toThrow(
      /namespace: /,
    );
    await expect(
      handleReleaseIp(world.deps, 'node-a', '10.0.0.1', { namespace: 'g' }),
    ).rejects.toThrow(/pod: /);
  });

  it('takes namespaces that are DNS labels and node names that are DNS subdomains, as Kubernetes does', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    for (const namespace of ['d..x', 'a.b', 'n'.repeat(64)]) {
      await expect(
        handleAssignIp(world.deps, 'node-a', { namespace, pod: 'p' }),
        namespace,
      ).rejects.toThrow(/^namespace: /);
    }
    await expect(
      handleAssignIp(world.deps, 'a..b', { namespace: 'g', pod: 'p' }),
    ).rejects.toBeInstanceOf(EniBadRequestError);
  });
});

describe('handleAssignIp', () => {
  it('names the bad field in EniBadRequestError', async () => {
    const world = eniWorld();
    world.addNode('node-a');
    await expect(handleAssignIp(world.deps, 'node-a', { namespace: 'g' })).rejects.toThrow(/pod: /);
    await expect(
      handleAssignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p', extra: 1 }),
    ).rejects.toThrow(/extra: unknown field/);
    await expect(handleAssignIp(world.deps, 'node-a', 'nope')).rejects.toBeInstanceOf(
      EniBadRequestError,
    );
  });

  it('maps errors to 400, 404 and 409 status codes', async () => {
    const world = eniWorld();
    const bad = await handleAssignIp(world.deps, 'node-a', {}).catch((e: unknown) => e);
    const unknown = await handleAssignIp(world.deps, 'ghost', { namespace: 'g', pod: 'p' }).catch(
      (e: unknown) => e,
    );
    const badIp = await handleReleaseIp(world.deps, 'node-a', '10.0.0.999', {}).catch(
      (e: unknown) => e,
    );
    expect((bad as EniBadRequestError).statusCode).toBe(400);
    expect((unknown as UnknownNodeError).statusCode).toBe(404);
    expect((badIp as EniBadRequestError).statusCode).toBe(400);
    expect(new PoolExhaustedError('n', 'full').statusCode).toBe(409);
  });
});

describe('eniPoolStatus', () => {
  it('reports each pool with its capacity, assigned and idle addresses', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 8 } });
    world.addNode('node-a', 'c5.large');
    await assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p' });
    expect(await eniPoolStatus(world.deps)).toEqual([
      expect.objectContaining({
        node: 'node-a',
        instanceType: 'c5.large',
        // The primary ENI: 3 ENIs × 9 slots of capacity, the first 9 on the primary.
        enis: 1,
        capacity: 27,
        assigned: 1,
        // The first pod's on-demand refill brought maxIdle plus one for itself; it holds one.
        idle: 8,
        ready: 8,
      }),
    ]);
  });
});
