import { describe, expect, it } from 'vitest';
import { RepairIncompleteError } from '../../shared/repair/errors.js';
import { carriedHostPorts } from '../../shared/repair/host-port-diff.js';
import type { HostPortRepairStore } from '../../shared/repair/store.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { sid } from '../support/shaped-id.js';
import {
  eventsOf,
  expectNoSuspectsWithinCommitWindow,
  gamePod,
  HOST_PORTS,
  held,
  repairEnv,
  SETTLED_MS,
} from './support.js';

describe('runRepairPass: host ports', () => {
  it('releases the record of a deleted pod on the third pass and not before', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('gone'), 'default', 'gs-1', [
      held('game', 7001),
      held('query', 7002, 'TCP'),
    ]);

    expect((await env.pass()).released).toBe(0);
    expect((await env.coldStart().pass()).released).toBe(0);
    expect(await env.hostCounts()).toEqual(
      new Map([
        [7001, 1],
        [7002, 1],
      ]),
    );

    const third = await env.coldStart().pass();
    expect(third.released).toBe(2);
    expect(third.findings).toEqual({ HostPortLeaked: 2 });
    expect(await env.hostPorts.getRecord(sid('gone'))).toBeUndefined();
    expect(await env.hostCounts()).toEqual(new Map());
    expect(env.cluster.events).toEqual([]);
  });

  it('never suspects the record of a pod not yet stored, however often passes run within the commit window', async () => {
    const env = await repairEnv();
    const admitted = env.clock.now;
    await env.admitPod(sid('new'), 'default', 'gs-new', [held('game', 7006)]);
    await expectNoSuspectsWithinCommitWindow(env, admitted);
    expect(await env.hostCounts()).toEqual(new Map([[7006, 1]]));

    // Past the window and the grace: the CREATE was refused, and its record goes.
    env.clock.now = admitted + COMMIT_WINDOW_MS + 1_000;
    expect((await env.pass({}, { leakGracePasses: 2 })).released).toBe(0);
    expect((await env.pass({}, { leakGracePasses: 2 })).findings).toEqual({ HostPortLeaked: 1 });
    expect(await env.hostPorts.getRecord(sid('new'))).toBeUndefined();
    expect(await env.hostCounts()).toEqual(new Map());
  });

  it('gives a freed record’s quota units back to its namespace, once', async () => {
    const env = await repairEnv();
    const refused = {
      id: sid('refused'),
      pod: { kind: 'Pod' as const, namespace: 'games', name: 'gs-r', generateName: '' },
      ports: [held('game', 7007), held('query', 7008)],
      createdAt: env.clock.now - SETTLED_MS,
      token: 't',
      quotaUnits: 2,
    };
    // A CREATE the apiserver refused: its record took two units, and no pod came.
    await env.hostPorts.putRecord(refused, 2);
    await env.hostPorts.addUses(refused.ports);
    // One of 0.2.0, whose port the CREATE took from the count apart from the record.
    await env.hostPorts.adjustNamespaceUse('games', 1, 3);
    await env.commitPod(sid('old'), 'games', 'gs-o', [held('game', 7009)]);
    expect(await env.hostPorts.namespaceUse('games')).toBe(3);

    const quotas = { hostPortQuotas: { games: 3 }, leakGracePasses: 1 };
    expect((await env.pass({}, quotas)).released).toBe(3);
    expect(await env.hostPorts.namespaceUse('games')).toBe(0);
    expect((await env.pass({}, quotas)).released).toBe(0);
    expect(await env.hostPorts.namespaceUse('games')).toBe(0);
  });

  it('counts a pod in phase Succeeded or Failed as gone', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('done'), 'default', 'gs-done', [held('game', 7003)]);
    await env.commitPod(sid('failed'), 'default', 'gs-failed', [held('game', 7004)]);
    env.cluster.withPods(
      gamePod('gs-done', sid('done'), [{ name: 'game', hostPort: 7003 }], { phase: 'Succeeded' }),
      gamePod('gs-failed', sid('failed'), [{ name: 'game', hostPort: 7004 }], { phase: 'Failed' }),
    );
    const summary = await env.pass({}, { leakGracePasses: 1 });
    expect(summary.findings).toEqual({ HostPortLeaked: 2 });
    expect(await env.hostCounts()).toEqual(new Map());
  });

  it('restarts the countdown when the pod is seen again', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('gs'), 'default', 'gs-2', [held('game', 7005)]);
    await env.pass();
    await env.pass();
    env.cluster.withPods(gamePod('gs-2', sid('gs'), [{ name: 'game', hostPort: 7005 }]));
    await env.pass();
    env.cluster.pods.clear();
    await env.pass();
    await env.pass();
    expect(await env.hostPorts.getRecord(sid('gs'))).toBeDefined();
    expect((await env.pass()).released).toBe(1);
    expect(await env.hostPorts.getRecord(sid('gs'))).toBeUndefined();
  });

  it('records the host ports of a live pod whose allocation id has no record', async () => {
    const env = await repairEnv();
    env.cluster.withPods(
      gamePod('gs-3', sid('lost'), [
        { name: 'game-tcp', hostPort: 7010, protocol: 'TCP' },
        { name: 'game-udp', hostPort: 7010, protocol: 'UDP' },
        { name: 'rcon', hostPort: 7011, protocol: 'TCP' },
        { name: 'static', hostPort: 9000, protocol: 'TCP' },
      ]),
      gamePod('plain', undefined, [{ name: sid('other'), hostPort: 7012 }]),
    );
    const summary = await env.pass();
    // The pod without an id holds 7012 outside berth: reported, and no longer handed out.
    expect(summary.findings).toEqual({ HostPortNotAllocated: 2, HostPortHeldOutsideBerth: 1 });
    expect(summary.recorded).toBe(2);
    expect(eventsOf(env.cluster)).toEqual([
      'HostPortNotAllocated Pod/default/gs-3',
      'HostPortNotAllocated Pod/default/gs-3',
    ]);
    const record = await env.hostPorts.getRecord(sid('lost'));
    expect(record?.pod).toEqual({
      kind: 'Pod',
      namespace: 'default',
      name: 'gs-3',
      generateName: '',
    });
    expect(record?.ports).toEqual(
      expect.arrayContaining([held('game', 7010, 'TCPUDP'), held('rcon', 7011, 'TCP')]),
    );
    // A TCPUDP port is one use; ports outside berth's ranges and pods without an id are not berth's.
    expect(await env.hostCounts()).toEqual(
      new Map([
        [7010, 1],
        [7011, 1],
      ]),
    );
    expect((await env.pass()).findings).toEqual({ HostPortHeldOutsideBerth: 1 });
  });

  it('records live pods with one write each and no count reads, even on a shared port', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('other'), 'default', 'gs-o', [held('game', 7015)]);
    env.cluster.withPods(
      gamePod('gs-o', sid('other'), [{ name: 'game', hostPort: 7015 }]),
      ...[sid('a'), 'b', 'c', 'd'].map((id) =>
        gamePod(`gs-${id}`, sid(`lost-${id}`), [{ name: 'game', hostPort: 7015 }]),
      ),
    );
    const calls = { readCounts: 0, adds: [] as unknown[] };
    const counted: HostPortRepairStore = {
      readCounts: (range) => {
        calls.readCounts++;
        return env.hostPorts.readCounts(range);
      },
      listRecords: () => env.hostPorts.listRecords(),
      putRecord: (record, quota) => env.hostPorts.putRecord(record, quota),
      addUses: (ports, levels) => {
        calls.adds.push(levels);
        return env.hostPorts.addUses(ports, levels);
      },
      deleteRecord: (id, pod, token) => env.hostPorts.deleteRecord(id, pod, token),
      removeUses: (ports) => env.hostPorts.removeUses(ports),
      correctCount: (range, port, from, to) => env.hostPorts.correctCount(range, port, from, to),
      markForeign: (range, port, held) => env.hostPorts.markForeign(range, port, held),
      adjustNamespaceUse: (namespace, delta, limit) =>
        env.hostPorts.adjustNamespaceUse(namespace, delta, limit),
      namespaceUse: (namespace) => env.hostPorts.namespaceUse(namespace),
    };
    const summary = await env.pass({ hostPorts: counted }, { concurrency: 4 });
    expect(summary).toMatchObject({ recorded: 4, conflicts: 0 });
    // The snapshot's two reads of the one range; the commits read nothing and condition on nothing.
    expect(calls.readCounts).toBe(2);
    expect(calls.adds).toEqual([undefined, undefined, undefined, undefined]);
    expect(await env.hostCounts()).toEqual(new Map([[7015, 5]]));
  });

  it('records nothing for a pod being deleted and keeps its record', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('kept'), 'default', 'gs-4', [held('game', 7020)]);
    env.cluster.withPods(
      gamePod('gs-4', sid('kept'), [{ name: 'game', hostPort: 7020 }], { deleting: true }),
      gamePod('gs-5', sid('released'), [{ name: 'game', hostPort: 7021 }], { deleting: true }),
    );
    for (let i = 0; i < 3; i++) await env.pass();
    expect(await env.hostPorts.getRecord(sid('kept'))).toBeDefined();
    expect(await env.hostPorts.getRecord(sid('released'))).toBeUndefined();
  });

  it('corrects a use count that drifted from the records once the drift is seen on the grace-th pass', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('a'), 'default', 'gs-a', [held('game', 7030)]);
    env.cluster.withPods(gamePod('gs-a', sid('a'), [{ name: 'game', hostPort: 7030 }]));
    // Drift: two extra uses on a port nobody holds, one missing on a port someone holds.
    expect(await env.hostPorts.correctCount('default', 7031, 0, 2)).toBe(true);
    expect(await env.hostPorts.correctCount('default', 7030, 1, 0)).toBe(true);

    expect((await env.pass()).findings).toEqual({});
    expect((await env.pass()).findings).toEqual({});
    const third = await env.pass();
    expect(third.findings).toEqual({ HostPortCountDrift: 2 });
    expect(await env.hostCounts()).toEqual(new Map([[7030, 1]]));
    expect((await env.pass()).findings).toEqual({});
  });

  it('releases a leaked record and corrects drift on the same port in one pass', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('gone'), 'default', 'gs-g', [held('game', 7040)]);
    expect(await env.hostPorts.correctCount('default', 7040, 1, 3)).toBe(true);
    const summary = await env.pass({}, { leakGracePasses: 1 });
    expect(summary.findings).toEqual({ HostPortLeaked: 1, HostPortCountDrift: 1 });
    expect(summary.conflicts).toBe(0);
    expect(await env.hostCounts()).toEqual(new Map());
  });

  it('never releases a record committed while the pass is listing', async () => {
    const env = await repairEnv();
    const pods = env.cluster.listPods.bind(env.cluster);
    env.cluster.listPods = async function* (options) {
      await env.commitPod(sid('racer'), 'default', 'gs-r', [held('game', 7050)]);
      yield* pods(options);
    };
    const summary = await env.pass({}, { leakGracePasses: 1 });
    expect(summary.released).toBe(0);
    expect(await env.hostPorts.getRecord(sid('racer'))).toBeDefined();
    expect(await env.hostCounts()).toEqual(new Map([[7050, 1]]));
  });

  it('stops without advancing a counter when the pods cannot be listed', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('gone'), 'default', 'gs-x', [held('game', 7060)]);
    await env.pass();
    env.cluster.failNext('listPods', new Error('apiserver unavailable'));
    await expect(env.pass()).rejects.toBeInstanceOf(RepairIncompleteError);
    await env.pass();
    expect(await env.hostPorts.getRecord(sid('gone'))).toBeDefined();
    expect((await env.pass()).released).toBe(1);
  });
});

describe('carriedHostPorts', () => {
  it('reads a name-tcp/name-udp pair sharing a host port as one TCPUDP port', () => {
    expect(
      carriedHostPorts(
        [
          {
            name: 'game',
            ports: [
              { name: 'gs-tcp', containerPort: 7000, hostPort: 7000, protocol: 'TCP' },
              { name: 'gs-udp', containerPort: 7000, hostPort: 7000, protocol: 'UDP' },
              { name: 'lone-udp', containerPort: 1, hostPort: 7001, protocol: 'UDP' },
              { name: 'web', containerPort: 80 },
            ],
          },
        ],
        [HOST_PORTS],
      ),
    ).toEqual([held('gs', 7000, 'TCPUDP'), held('lone-udp', 7001, 'UDP')]);
  });
});
