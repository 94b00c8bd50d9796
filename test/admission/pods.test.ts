import { describe, expect, it } from 'vitest';
import { hostPortRangesOf } from '../../shared/admission/pods.js';
import { hostPortRangeUsage } from '../../shared/hostports/allocator.js';
import { PACKING_POD_AFFINITY } from '../../shared/hostports/patch.js';
import { ALLOCATION_ID_ANNOTATION, GAME_SERVER_LABEL } from '../../shared/vocabulary/labels.js';
import {
  allocationIdOf,
  containerEnv,
  containerPorts,
  denial,
  gamePod,
  hostPortsOf,
  type Pod,
  patched,
  podHarness,
  podRequest,
} from '../hostports/support.js';

const sum = (counts: Map<number, number>): number =>
  [...counts.values()].reduce((a, b) => a + b, 0);
const used = (counts: Map<number, number>): number[] =>
  [...counts].filter(([, c]) => c > 0).map(([port]) => port);

describe('podAdmission patch', () => {
  it('gives a Dynamic UDP port a host port from the default range, an env var, annotations, label and affinity', async () => {
    const h = await podHarness();
    const pod = await h.create(gamePod([{ name: 'game', containerPort: 7777 }]));
    const [entry] = containerPorts(pod);
    expect(entry).toMatchObject({ name: 'game', containerPort: 7777, protocol: 'UDP' });
    const hostPort = entry?.hostPort as number;
    expect(hostPort).toBeGreaterThanOrEqual(7000);
    expect(hostPort).toBeLessThanOrEqual(8000);
    expect(containerEnv(pod)).toEqual([{ name: 'BERTH_PORT_GAME', value: String(hostPort) }]);
    expect(hostPortsOf(pod)).toEqual({ game: hostPort });
    expect(allocationIdOf(pod)).toMatch(/^[a-z2-7]{20}$/);
    const metadata = pod.metadata as { labels: Record<string, string> };
    expect(metadata.labels).toEqual({ [GAME_SERVER_LABEL]: 'true' });
    expect((pod.spec as { affinity: unknown }).affinity).toEqual({
      podAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: { 'berth.dev/game-server': 'true' } },
            },
          },
        ],
      },
    });
  });

  it('splits TCPUDP into name-tcp and name-udp entries sharing one host port', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([{ name: 'game', containerPort: 7777, protocol: 'TCPUDP' }]),
    );
    const [tcp, udp] = containerPorts(pod);
    expect(tcp).toMatchObject({ name: 'game-tcp', protocol: 'TCP', containerPort: 7777 });
    expect(udp).toMatchObject({ name: 'game-udp', protocol: 'UDP', containerPort: 7777 });
    expect(tcp?.hostPort).toBe(udp?.hostPort);
    expect(hostPortsOf(pod)).toEqual({ game: tcp?.hostPort });
    expect(containerEnv(pod)).toEqual([{ name: 'BERTH_PORT_GAME', value: String(tcp?.hostPort) }]);
  });

  it('sets containerPort to the host port for Passthrough', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([{ name: 'direct', portPolicy: 'Passthrough', protocol: 'TCP' }]),
    );
    const [entry] = containerPorts(pod);
    expect(entry?.containerPort).toBe(entry?.hostPort);
    expect(entry).toMatchObject({ name: 'direct', protocol: 'TCP' });
  });

  it('uses the given host port for Static, counts nothing, and splits a Static TCPUDP port', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([
        {
          name: 'fixed',
          portPolicy: 'Static',
          containerPort: 80,
          hostPort: 9000,
          protocol: 'TCPUDP',
        },
      ]),
    );
    expect(containerPorts(pod)).toEqual([
      { name: 'fixed-tcp', containerPort: 80, protocol: 'TCP', hostPort: 9000 },
      { name: 'fixed-udp', containerPort: 80, protocol: 'UDP', hostPort: 9000 },
    ]);
    expect(hostPortsOf(pod)).toEqual({ fixed: 9000 });
    expect(containerEnv(pod)).toEqual([{ name: 'BERTH_PORT_FIXED', value: '9000' }]);
    expect(sum(await h.counts())).toBe(0);
  });

  it('gives a None port a container port entry only: no host port, no env var, no host-ports key', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([
        { name: 'direct', portPolicy: 'None', containerPort: 7654 },
        { name: 'game-port', containerPort: 7777 },
      ]),
    );
    const ports = containerPorts(pod);
    expect(ports[0]).toEqual({ name: 'direct', containerPort: 7654, protocol: 'UDP' });
    expect(containerEnv(pod).map((e) => e.name)).toEqual(['BERTH_PORT_GAME_PORT']);
    expect(Object.keys(hostPortsOf(pod))).toEqual(['game-port']);
  });

  it('declares nothing for a None port without a containerPort', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([
        { name: 'unused', portPolicy: 'None' },
        { name: 'game-port', containerPort: 7777 },
      ]),
    );
    expect(containerPorts(pod).map((port) => port.name)).toEqual(['game-port']);
    expect(Object.keys(hostPortsOf(pod))).toEqual(['game-port']);
  });

  it('treats portPolicy "" as Dynamic and protocol "" as UDP', async () => {
    const h = await podHarness();
    const pod = await h.create(
      gamePod([{ name: 'game', containerPort: 7777, portPolicy: '', protocol: '' }]),
    );
    expect(containerPorts(pod)[0]).toMatchObject({ protocol: 'UDP', containerPort: 7777 });
    expect(containerPorts(pod)[0]?.hostPort).toBeGreaterThanOrEqual(7000);
  });

  it('puts ports in the named container and sidecar, and requires the container with several', async () => {
    const h = await podHarness();
    const containers = [{ name: 'sdk' }, { name: 'game', env: [{ name: 'KEEP', value: '1' }] }];
    const initContainers = [{ name: 'relay', restartPolicy: 'Always' }];
    const pod = await h.create(
      gamePod(
        [
          { name: 'game', container: 'game', containerPort: 7777 },
          { name: 'relay', container: 'relay', containerPort: 9999, protocol: 'TCP' },
        ],
        { containers, initContainers },
      ),
    );
    expect(containerPorts(pod, 0)).toEqual([]);
    expect(containerPorts(pod, 1)[0]).toMatchObject({ name: 'game', containerPort: 7777 });
    expect(containerEnv(pod, 1).map((e) => e.name)).toEqual(['KEEP', 'BERTH_PORT_GAME']);
    const relay = (pod.spec as { initContainers: { ports: Record<string, unknown>[] }[] })
      .initContainers[0];
    expect(relay?.ports[0]).toMatchObject({ name: 'relay', containerPort: 9999, protocol: 'TCP' });
  });

  it('replaces an existing entry with the same name or containerPort and protocol instead of duplicating it', async () => {
    const h = await podHarness();
    const containers = [
      {
        name: 'game',
        ports: [
          { name: 'metrics', containerPort: 9090 },
          { containerPort: 7777, protocol: 'UDP' },
          { name: 'query-tcp', containerPort: 27015 },
        ],
        env: [{ name: 'BERTH_PORT_GAME', value: 'stale' }],
      },
    ];
    const pod = await h.create(
      gamePod(
        [
          { name: 'game', containerPort: 7777 },
          { name: 'query', containerPort: 27016, protocol: 'TCPUDP' },
        ],
        { containers },
      ),
    );
    const ports = containerPorts(pod);
    expect(ports.map((p) => p.name)).toEqual(['metrics', 'game', 'query-tcp', 'query-udp']);
    expect(ports[2]).toMatchObject({ containerPort: 27016, protocol: 'TCP' });
    const env = containerEnv(pod);
    expect(env.map((e) => e.name)).toEqual(['BERTH_PORT_GAME', 'BERTH_PORT_QUERY']);
    expect(env[0]?.value).toBe(String(ports[1]?.hostPort));
  });

  it('adds no affinity with berth.dev/scheduling: Distributed or an existing podAffinity, and keeps other affinity', async () => {
    const h = await podHarness();
    const distributed = await h.create(
      gamePod([{ name: 'game', containerPort: 7777 }], {
        annotations: { 'berth.dev/scheduling': 'Distributed' },
      }),
    );
    expect((distributed.spec as { affinity?: unknown }).affinity).toBeUndefined();

    const own = { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [] } };
    const withOwn = await h.create(
      gamePod([{ name: 'game', containerPort: 7777 }], { affinity: own }),
    );
    expect((withOwn.spec as { affinity?: unknown }).affinity).toEqual(own);

    const nodeAffinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {} } };
    const merged = await h.create(
      gamePod([{ name: 'game', containerPort: 7777 }], {
        affinity: nodeAffinity,
        labels: { app: 'x' },
      }),
    );
    expect((merged.spec as { affinity?: unknown }).affinity).toEqual({
      ...nodeAffinity,
      podAffinity: PACKING_POD_AFFINITY,
    });
    expect((merged.metadata as { labels: unknown }).labels).toEqual({
      app: 'x',
      [GAME_SERVER_LABEL]: 'true',
    });
  });

  it('allows pods without berth.dev/ports untouched, and other operations with no patch', async () => {
    const h = await podHarness();
    const plain: Pod = {
      metadata: { name: 'web', namespace: 'default' },
      spec: { containers: [{ name: 'c' }] },
    };
    expect(await h.handler(podRequest(plain))).toEqual({ allowed: true });
    expect(await h.handler(podRequest(plain, { operation: 'DELETE' }))).toEqual({ allowed: true });
    const game = gamePod([{ name: 'game', containerPort: 7777 }]);
    expect(await h.handler(podRequest(game, { operation: 'UPDATE' }))).toEqual({ allowed: true });
  });

  it('handles an empty spec list as a game server holding no ports', async () => {
    const h = await podHarness();
    const pod = await h.create(gamePod([]));
    expect(hostPortsOf(pod)).toEqual({});
    expect(allocationIdOf(pod)).toBeDefined();
    expect((pod.metadata as { labels: unknown }).labels).toEqual({ [GAME_SERVER_LABEL]: 'true' });
  });
});

describe('podAdmission validation', () => {
  const containers2 = [{ name: 'game' }, { name: 'sdk' }];

  it('denies unparseable JSON with 400', async () => {
    const h = await podHarness();
    const message = denial(await h.handler(podRequest(gamePod('[{"name": "game",'))), 400);
    expect(message).toMatch(
      /^metadata\.annotations\[berth\.dev\/ports\]: Invalid value: not valid JSON/,
    );
  });

  it('denies a value that is not an array with 422', async () => {
    const h = await podHarness();
    const message = denial(await h.handler(podRequest(gamePod('{"name":"game"}'))), 422);
    expect(message).toMatch(
      /^metadata\.annotations\[berth\.dev\/ports\]: Invalid value: must be a JSON array/,
    );
  });

  it('lists every problem, one message each, in Agones words, starting with the field path', async () => {
    const h = await podHarness();
    const specs = [
      { name: 'a', portPolicy: 'Dynamic' },
      {
        name: 'b',
        portPolicy: 'Passthrough',
        containerPort: 7000,
        hostPort: 7001,
        container: 'game',
      },
      { name: 'c', portPolicy: 'Static', containerPort: 80, container: 'sdk' },
      { name: 'a', containerPort: 1, container: 'game' },
      { name: 'd', containerPort: 1, container: 'nope' },
      { name: 'e', containerPort: 1, container: 'game', range: 'tools' },
      { name: 'f', containerPort: 1, container: 'game', protocol: 'SCTP', portPolicy: 'Sticky' },
      { name: 'g', portPolicy: 'Static', containerPort: 1, hostPort: 7500, container: 'game' },
      { name: 'h', portPolicy: 'None', containerPort: 1, hostPort: 9000, container: 'game' },
    ];
    const message = denial(
      await h.handler(podRequest(gamePod(specs, { containers: containers2 }))),
      422,
    );
    const problems = message.split('\n');
    const p = 'metadata.annotations[berth.dev/ports]';
    expect(problems).toEqual([
      `${p}[0].container: Required value: Container is required when using multiple containers in the pod template`,
      `${p}[0].containerPort: Required value: ContainerPort must be defined for Dynamic and Static PortPolicies`,
      `${p}[1].containerPort: Forbidden: ContainerPort cannot be specified with Passthrough PortPolicy`,
      `${p}[1].hostPort: Forbidden: HostPort cannot be specified with a Dynamic or Passthrough PortPolicy`,
      `${p}[2].hostPort: Required value: HostPort must be defined for Static PortPolicy`,
      `${p}[3].name: Duplicate value: "a"`,
      `${p}[4].container: Invalid value: "nope": Could not find a container named nope`,
      `${p}[5].range: Not found: "tools": no host port range has this name; configured: "default"`,
      `${p}[6].portPolicy: Unsupported value: "Sticky": supported values: "Dynamic", "Passthrough", "Static", "None"`,
      `${p}[6].protocol: Unsupported value: "SCTP": supported values: "UDP", "TCP", "TCPUDP"`,
      `${p}[7].hostPort: Invalid value: 7500: a Static hostPort may not lie in host port range "default" (7000-8000), whose ports berth hands out; pick a port outside every configured range`,
      `${p}[8].hostPort: Forbidden: HostPort cannot be specified with None PortPolicy`,
    ]);
  });

  it('denies a Static host port inside any configured range, its end ports included', async () => {
    const h = await podHarness({ default: '7000-8000', tools: '9000-9010' });
    for (const hostPort of [7000, 8000, 9000, 9010]) {
      const pod = gamePod([{ name: 's', portPolicy: 'Static', containerPort: 1, hostPort }]);
      expect(denial(await h.handler(podRequest(pod)), 422)).toContain(
        `[0].hostPort: Invalid value: ${hostPort}`,
      );
    }
    const outside = gamePod([
      { name: 's', portPolicy: 'Static', containerPort: 1, hostPort: 8001 },
    ]);
    expect((await h.handler(podRequest(outside))).allowed).toBe(true);
  });

  it('denies names that cannot become container port names, unknown fields and bad numbers', async () => {
    const h = await podHarness();
    const specs = [
      { name: 'Game_1', containerPort: 1 },
      { name: 'longer-than-11', protocol: 'TCPUDP', containerPort: 2 },
      { containerPort: 3 },
      { name: 'x', containerPort: 70000, contianerPort: 4 },
      { name: 'y', containerPort: 5 },
      { name: 'y-tcp', containerPort: 6 },
      { name: 'y', containerPort: 7 },
      'port',
    ];
    const problems = denial(await h.handler(podRequest(gamePod(specs))), 422).split('\n');
    const p = 'metadata.annotations[berth.dev/ports]';
    expect(problems).toEqual([
      `${p}[0].name: Invalid value: "Game_1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
      `${p}[1].name: Invalid value: "longer-than-11": must be no more than 11 characters with protocol TCPUDP (the container ports are named longer-than-11-tcp and longer-than-11-udp)`,
      `${p}[2].name: Required value: every port needs a name, unique in the pod`,
      `${p}[3].contianerPort: Forbidden: unknown field; the fields are name, container, containerPort, portPolicy, protocol, hostPort, range, count, front`,
      `${p}[3].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
      `${p}[6].name: Duplicate value: "y"`,
      `${p}[7]: Invalid value: "port": must be an object with at least a name`,
    ]);
  });

  it('reports a TCPUDP port whose entry names clash with another port', async () => {
    const h = await podHarness();
    const specs = [
      { name: 'q-tcp', containerPort: 1, protocol: 'TCP' },
      { name: 'q', containerPort: 2, protocol: 'TCPUDP' },
    ];
    const message = denial(await h.handler(podRequest(gamePod(specs))), 422);
    expect(message).toBe(
      'metadata.annotations[berth.dev/ports][1].name: Duplicate value: "q": its container port q-tcp clashes with port [0]',
    );
  });

  it('requires a range when no range is named default', async () => {
    const h = await podHarness({ game: '7000-7100' });
    const message = denial(
      await h.handler(podRequest(gamePod([{ name: 'g', containerPort: 1 }]))),
      422,
    );
    expect(message).toBe(
      'metadata.annotations[berth.dev/ports][0].range: Required value: no host port range is named "default"; name one of "game"',
    );
    const ok = await h.create(gamePod([{ name: 'g', containerPort: 1, range: 'game' }]));
    expect(hostPortsOf(ok).g).toBeGreaterThanOrEqual(7000);
  });

  it('denies more distinct ports of one protocol in one range than it holds, and allows them across protocols', async () => {
    const h = await podHarness({ default: '7000-7002' });
    const udp4 = [1, 2, 3, 4].map((i) => ({ name: `u${i}`, containerPort: i }));
    expect(denial(await h.handler(podRequest(gamePod(udp4))), 422)).toBe(
      'metadata.annotations[berth.dev/ports]: Invalid value: asks for 4 distinct UDP host ports in range "default" (7000-7002), which holds 3',
    );
    const mixed = [
      ...[1, 2, 3].map((i) => ({ name: `u${i}`, containerPort: i })),
      ...[1, 2, 3].map((i) => ({ name: `t${i}`, containerPort: i, protocol: 'TCP' })),
    ];
    const pod = await h.create(gamePod(mixed));
    const ports = hostPortsOf(pod);
    expect(new Set([ports.u1, ports.u2, ports.u3]).size).toBe(3);
    expect(new Set([ports.t1, ports.t2, ports.t3]).size).toBe(3);
  });
});

describe('podAdmission allocation (Agones logical-node behaviour as counts)', () => {
  it('hands out every port of a range once before any port twice', async () => {
    const h = await podHarness({ default: '10-20' });
    const seen: number[] = [];
    for (let i = 0; i < 11; i++) {
      const pod = await h.create(
        gamePod([{ name: 'p', containerPort: 7777 }], { name: `gs-${i}` }),
      );
      seen.push(hostPortsOf(pod).p ?? 0);
    }
    expect(seen.sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
  });

  it('never fails for lack of ports: a port number is used more times than the range is large', async () => {
    const h = await podHarness({ default: '10-20' });
    for (let i = 0; i < 23; i++) {
      await h.create(gamePod([{ name: 'p', containerPort: 7777 }], { name: `gs-${i}` }));
    }
    const counts = [...(await h.counts()).values()];
    expect(counts.filter((c) => c === 3)).toHaveLength(1);
    expect(counts.filter((c) => c === 2)).toHaveLength(10);
  });

  it('regression: a multi-port pod never gets a duplicate host port when the range is full at its level', async () => {
    // Agones: range 10-20, 3-port GameServers, 8 allocations -> 29% of runs hold a duplicate.
    const h = await podHarness({ default: '10-20' });
    for (let i = 0; i < 40; i++) {
      const pod = await h.create(
        gamePod(
          [
            { name: 'a', containerPort: 1 },
            { name: 'b', containerPort: 2 },
            { name: 'c', containerPort: 3 },
          ],
          { name: `gs-${i}` },
        ),
      );
      const ports = Object.values(hostPortsOf(pod));
      expect(new Set(ports).size).toBe(3);
      const counts = [...(await h.counts()).values()];
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
    expect(sum(await h.counts())).toBe(120);
  });

  it('regression: a TCPUDP port is released once, so counts go back exactly', async () => {
    const h = await podHarness({ default: '10-11' });
    const spec = [{ name: 'game', containerPort: 7777, protocol: 'TCPUDP' }];
    const pods = [];
    for (let i = 0; i < 3; i++) pods.push(await h.create(gamePod(spec, { name: `gs-${i}` })));
    const before = await h.counts();
    expect(sum(before)).toBe(3);
    const [first] = pods;
    if (!first) throw new Error('no pod');
    await h.handler(podRequest(first, { operation: 'DELETE' }));
    const after = await h.counts();
    const port = hostPortsOf(first).game ?? 0;
    expect(after.get(port)).toBe((before.get(port) ?? 0) - 1);
    expect(sum(after)).toBe(2);
  });

  it('draws each port from its named range', async () => {
    const h = await podHarness({ default: '7000-7010', tools: '9000-9001' });
    const pod = await h.create(
      gamePod([
        { name: 'game', containerPort: 7777 },
        { name: 'rcon', containerPort: 27015, protocol: 'TCP', range: 'tools' },
      ]),
    );
    const ports = hostPortsOf(pod);
    expect(ports.game).toBeGreaterThanOrEqual(7000);
    expect(ports.game).toBeLessThanOrEqual(7010);
    expect([9000, 9001]).toContain(ports.rcon);
    expect(used(await h.counts('tools'))).toEqual([ports.rcon]);
  });

  it('releases on DELETE exactly once; a repeated DELETE and one for a pod never allocated change nothing', async () => {
    const h = await podHarness({ default: '10-13' });
    const a = await h.create(gamePod([{ name: 'p', containerPort: 1 }], { name: 'a' }));
    await h.create(gamePod([{ name: 'p', containerPort: 1 }], { name: 'b' }));
    expect(sum(await h.counts())).toBe(2);
    await h.handler(podRequest(a, { operation: 'DELETE' }));
    expect(sum(await h.counts())).toBe(1);
    await h.handler(podRequest(a, { operation: 'DELETE' }));
    expect(sum(await h.counts())).toBe(1);
    const stranger = gamePod([{ name: 'p', containerPort: 1 }], {
      name: 'c',
      annotations: { [ALLOCATION_ID_ANNOTATION]: 'aaaaaaaaaaaaaaaaaaaa' },
    });
    await h.handler(podRequest(stranger, { operation: 'DELETE' }));
    expect(sum(await h.counts())).toBe(1);
  });

  it('reports usage per range for /v1/status, a TCPUDP port counting once', async () => {
    const h = await podHarness({ default: '7000-7009', tools: '9000-9001' });
    await h.create(
      gamePod([
        { name: 'game', containerPort: 7777, protocol: 'TCPUDP' },
        { name: 'query', containerPort: 7778 },
        { name: 'rcon', containerPort: 1, range: 'tools' },
        { name: 'fixed', portPolicy: 'Static', containerPort: 2, hostPort: 8500 },
      ]),
    );
    const usage = await Promise.all(
      hostPortRangesOf(h.config).map(async (range) =>
        hostPortRangeUsage(range, (await h.store.readCounts(range)).counts),
      ),
    );
    expect(usage).toEqual([
      // The free blocks depend on where the ports fell.
      {
        name: 'default',
        kind: 'hostPort',
        size: 10,
        used: 2,
        minUse: 0,
        maxUse: 1,
        largestFreeBlock: expect.any(Number),
      },
      {
        name: 'tools',
        kind: 'hostPort',
        size: 2,
        used: 1,
        minUse: 0,
        maxUse: 1,
        largestFreeBlock: 1,
      },
    ]);
  });
});

describe('podAdmission identity and dry run', () => {
  const spec = [
    { name: 'game', containerPort: 7777, protocol: 'TCPUDP' },
    { name: 'query', containerPort: 7778 },
  ];

  it('recognises a re-invocation: same id, same ports, no new allocation', async () => {
    const h = await podHarness();
    // A pod with no name yet is only the same request seen again: the same request uid.
    const pod = gamePod(spec, { generateName: 'fleet-' });
    const request = podRequest(pod);
    const first = patched(pod, await h.handler(request));
    const countsBefore = await h.counts();
    const again = patched(first, await h.handler({ ...podRequest(first), uid: request.uid }));
    expect(allocationIdOf(again)).toBe(allocationIdOf(first));
    expect(hostPortsOf(again)).toEqual(hostPortsOf(first));
    expect(containerPorts(again)).toEqual(containerPorts(first));
    expect(containerEnv(again)).toEqual(containerEnv(first));
    expect(await h.counts()).toEqual(countsBefore);
  });

  it('gives a copied annotation a fresh allocation and a new id (other name, other namespace, other ports)', async () => {
    const h = await podHarness();
    const original = await h.create(gamePod(spec, { name: 'original' }));
    const meta = original.metadata as Record<string, unknown>;
    const copies: Pod[] = [
      { ...original, metadata: { ...meta, name: 'copy' } },
      { ...original, metadata: { ...meta, namespace: 'other' } },
    ];
    const spec0 = (original.spec as { containers: Record<string, unknown>[] }).containers[0];
    const shifted = containerPorts(original).map((p) => ({
      ...p,
      hostPort: (p.hostPort as number) + 1,
    }));
    copies.push({ ...original, spec: { containers: [{ ...spec0, ports: shifted }] } });
    for (const copy of copies) {
      const namespace = (copy.metadata as { namespace: string }).namespace;
      const before = sum(await h.counts());
      const result = await h.create(copy, { namespace });
      expect(allocationIdOf(result)).not.toBe(allocationIdOf(original));
      expect(sum(await h.counts())).toBe(before + 2);
    }
  });

  it('releases on DELETE only what is recorded for that very pod: its id, namespace and name', async () => {
    const h = await podHarness();
    const pod = await h.create(gamePod(spec, { name: 'gs' }));
    const elsewhere = { ...pod, metadata: { ...(pod.metadata as object), namespace: 'other' } };
    await h.handler(podRequest(elsewhere, { operation: 'DELETE', namespace: 'other' }));
    expect(sum(await h.counts())).toBe(2);
    // Another pod of the namespace that only carries gs's id (copied, no ports of its own).
    const carrier = { ...pod, metadata: { ...(pod.metadata as object), name: 'carrier' } };
    await h.handler(podRequest(carrier, { operation: 'DELETE' }));
    expect(sum(await h.counts())).toBe(2);
    await h.handler(podRequest(pod, { operation: 'DELETE' }));
    expect(sum(await h.counts())).toBe(0);
  });

  it('answers a dry run with the patch and writes nothing, CREATE and DELETE alike', async () => {
    const h = await podHarness();
    const dry = await h.create(gamePod(spec), { dryRun: true });
    expect(Object.keys(hostPortsOf(dry))).toEqual(['game', 'query']);
    expect(sum(await h.counts())).toBe(0);
    const id = allocationIdOf(dry) ?? '';
    expect(await h.store.getRecord(id)).toBeUndefined();

    const real = await h.create(gamePod(spec));
    await h.handler(podRequest(real, { operation: 'DELETE', dryRun: true }));
    expect(sum(await h.counts())).toBe(2);
    const rerun = await h.create(real, { dryRun: true });
    expect(hostPortsOf(rerun)).toEqual(hostPortsOf(real));
  });
});

describe('pod admission on input that is not what berth expects', () => {
  it('denies a deeply nested ports annotation with 422 naming the field, instead of overflowing the stack', async () => {
    const h = await podHarness();
    const nested = `[${'['.repeat(20_000)}${']'.repeat(20_000)}]`;
    const verdict = await h.handler(podRequest(gamePod(nested)));
    expect(denial(verdict, 422)).toMatch(/^metadata\.annotations\[berth\.dev\/ports\]\[0\]: /);
  });

  it('denies a ports annotation longer than 64 KiB', async () => {
    const h = await podHarness();
    const long = JSON.stringify([{ name: 'game', containerPort: 7777, range: 'x'.repeat(70_000) }]);
    expect(denial(await h.handler(podRequest(gamePod(long))), 422)).toMatch(/Too long/);
  });

  it('treats an empty or oversized allocation id as absent on CREATE and DELETE', async () => {
    const h = await podHarness();
    for (const carried of ['', 'x'.repeat(1500)]) {
      const pod = gamePod([{ name: 'game', containerPort: 7777 }], {
        annotations: { [ALLOCATION_ID_ANNOTATION]: carried },
      });
      const created = await h.create(pod);
      expect(allocationIdOf(created)).toMatch(/^[a-z2-7]{20}$/);
      const verdict = await h.handler(podRequest(pod, { operation: 'DELETE' }));
      expect(verdict.allowed).toBe(true);
    }
    expect([...(await h.counts()).values()].reduce((a, b) => a + b, 0)).toBe(2);
  });
});

describe('pod admission and other scalers', () => {
  it('tells Cluster Autoscaler and Karpenter not to evict the game, unless the pod says otherwise', async () => {
    const h = await podHarness();
    const guarded = await h.create(gamePod([{ name: 'game', containerPort: 7777 }]));
    const annotations = (guarded.metadata as { annotations: Record<string, string> }).annotations;
    expect(annotations['cluster-autoscaler.kubernetes.io/safe-to-evict']).toBe('false');
    expect(annotations['karpenter.sh/do-not-disrupt']).toBe('true');

    const own = await h.create(
      gamePod([{ name: 'game', containerPort: 7777 }], {
        name: 'own',
        annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'true' },
      }),
    );
    const kept = (own.metadata as { annotations: Record<string, string> }).annotations;
    expect(kept['cluster-autoscaler.kubernetes.io/safe-to-evict']).toBe('true');
    expect(kept['karpenter.sh/do-not-disrupt']).toBe('true');
  });
});
