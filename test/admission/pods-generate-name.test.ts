/**
 * Pods created with generateName reach admission with no name. A copy of the stored pod (its
 * annotations, ports and generateName carried over) is a new pod; only the same request seen
 * again is a re-invocation; and a release is keyed by the pod the record belongs to.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podBindingAdmission } from '../../shared/admission/binding.js';
import { podAdmission } from '../../shared/admission/pods.js';
import { MalformedReviewError, parseAdmissionReview } from '../../shared/admission/review.js';
import type { HostPortStore } from '../../shared/hostports/store.js';
import { clusterCarriers } from '../../shared/k8s/allocation-carriers.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import {
  allocationIdOf,
  gamePod,
  hostPortsOf,
  type Pod,
  type PodHarness,
  patched,
  podHarness,
  podRequest,
} from '../hostports/support.js';

const spec = [
  { name: 'game', containerPort: 7777, protocol: 'TCPUDP' },
  { name: 'query', containerPort: 7778 },
];

const total = async (h: PodHarness) => [...(await h.counts()).values()].reduce((a, b) => a + b, 0);

/** The pod as the apiserver stores it: named from its generateName, with a uid. */
function stored(pod: Pod, name: string): Pod {
  const copy = structuredClone(pod);
  const metadata = copy.metadata as Record<string, unknown>;
  metadata.name = name;
  metadata.uid = `uid-${name}`;
  return copy;
}

/** `kubectl get pod -o json`, name, uid and resourceVersion dropped, generateName kept. */
function copyOf(pod: Pod): Pod {
  const copy = structuredClone(pod);
  const metadata = copy.metadata as Record<string, unknown>;
  delete metadata.name;
  delete metadata.uid;
  return copy;
}

async function remove(h: PodHarness, pod: Pod) {
  const verdict = await h.handler(podRequest(pod, { operation: 'DELETE' }));
  expect(verdict.allowed).toBe(true);
}

describe('pods created with generateName', () => {
  it('gives a copy of the stored pod a fresh allocation; deleting either leaves the other its use', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const a = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-aaaaa');
    const copy = await h.create(copyOf(a));
    expect(allocationIdOf(copy)).not.toBe(allocationIdOf(a));
    expect(hostPortsOf(copy)).not.toEqual(hostPortsOf(a));
    expect(await total(h)).toBe(4);

    await remove(h, a);
    expect(await total(h)).toBe(2);
    await remove(h, stored(copy, 'gs-bbbbb'));
    expect(await total(h)).toBe(0);
  });

  it('recognises the same request seen again (same request uid): same id, nothing new', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const pod = gamePod(spec, { generateName: 'gs-' });
    const request = podRequest(pod);
    const first = patched(pod, await h.handler(request));
    const again = patched(first, await h.handler({ ...podRequest(first), uid: request.uid }));
    expect(allocationIdOf(again)).toBe(allocationIdOf(first));
    expect(hostPortsOf(again)).toEqual(hostPortsOf(first));
    expect(await total(h)).toBe(2);
  });

  it("never releases another pod's ports for a pod an UPDATE gave that pod's id", async () => {
    const h = await podHarness({ default: '7000-7009' });
    const a = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-aaaaa');
    const b = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-bbbbb');
    const forged = structuredClone(b);
    const annotations = (forged.metadata as { annotations: Record<string, string> }).annotations;
    annotations['berth.dev/allocation-id'] = allocationIdOf(a) ?? '';
    expect((await h.handler(podRequest(forged, { operation: 'UPDATE' }))).allowed).toBe(true);
    await remove(h, forged);
    expect(await total(h)).toBe(4);
    // a's own DELETE still gives back exactly its ports.
    await remove(h, a);
    expect(await total(h)).toBe(2);
  });

  it('learns the name at binding: a later pod carrying the id under another name releases nothing', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const a = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-aaaaa');
    const cluster = new FakeClusterApi()
      .withPods(a as V1Pod)
      .withNodes({ metadata: { name: 'n1' }, status: { addresses: [] } });
    const binding = podBindingAdmission({
      cluster,
      nodeAddressTypes: ['InternalIP'],
      now: () => 0,
      records: h.store,
    });
    const bound = await binding({
      ...podRequest(a, { operation: 'CREATE' }),
      subResource: 'binding',
      name: 'gs-aaaaa',
      object: { metadata: { name: 'gs-aaaaa', namespace: 'default' }, target: { name: 'n1' } },
    });
    expect(bound.allowed).toBe(true);
    const id = allocationIdOf(a) ?? '';
    expect((await h.store.getRecord(id))?.pod.name).toBe('gs-aaaaa');
    // Another pod of the same generateName, its ports equal to a's, carrying a's id.
    await remove(h, stored(a, 'gs-ccccc'));
    expect(await total(h)).toBe(2);
    await remove(h, a);
    expect(await total(h)).toBe(0);
  });
});

describe('a re-invocation racing a DELETE the apiserver stopped waiting for', () => {
  it('keeps either the release or the re-invoked pod, never a pod holding freed ports', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const cluster = new FakeClusterApi();
    // The unnamed release of the DELETE below waits here, as a webhook call still running after
    // the apiserver gave up on it (failurePolicy Ignore) and deleted the pod anyway.
    let reached!: () => void;
    const atRelease = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const release = h.store.deleteRecord.bind(h.store);
    const store: HostPortStore = new Proxy(h.store, {
      get(target, property) {
        if (property === 'deleteRecord') {
          return async (...args: Parameters<HostPortStore['deleteRecord']>) => {
            if (args[1].name === '') {
              reached();
              await resumed;
            }
            return release(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const handler = podAdmission({
      config: h.config,
      store,
      carriers: clusterCarriers(cluster),
      random: Math.random,
      randomBytes: (size) => new Uint8Array(size).map(() => Math.floor(Math.random() * 256)),
      now: () => 1_700_000_000_000,
    });
    const pod = gamePod(spec, { generateName: 'gs-' });
    const first = patched(pod, await handler(podRequest(pod)));
    const a = stored(first, 'gs-aaaaa');
    cluster.withPods(a as V1Pod);
    const deleting = handler(podRequest(a, { operation: 'DELETE' }));
    await atRelease;
    cluster.pods.clear();
    // A copy of the pod, made before it went, created with no stored pod carrying its id: as
    // far as berth can tell, a re-invocation of the first CREATE.
    const copy = patched(copyOf(a), await handler(podRequest(copyOf(a))));
    resume();
    expect((await deleting).allowed).toBe(true);
    const record = await h.store.getRecord(allocationIdOf(copy) ?? '');
    // Whichever won, the ports the copy is told it holds are recorded and counted.
    expect(new Set(record?.ports.map((p) => p.port))).toEqual(
      new Set(Object.values(hostPortsOf(copy))),
    );
    expect(await total(h)).toBe(2);
  });
});

describe('learning the name at binding', () => {
  it('still annotates the binding when the store cannot be reached', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const a = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-aaaaa');
    const cluster = new FakeClusterApi()
      .withPods(a as V1Pod)
      .withNodes({ metadata: { name: 'n1' }, status: { addresses: [] } });
    const failing = {
      getRecord: async () => {
        throw new Error('store unreachable');
      },
      learnName: async () => false,
    };
    const binding = podBindingAdmission({
      cluster,
      nodeAddressTypes: ['InternalIP'],
      now: () => 0,
      records: failing,
    });
    const bound = await binding({
      ...podRequest(a, { operation: 'CREATE' }),
      subResource: 'binding',
      name: 'gs-aaaaa',
      object: { metadata: { name: 'gs-aaaaa', namespace: 'default' }, target: { name: 'n1' } },
    });
    expect(bound.allowed).toBe(true);
    expect(JSON.stringify(bound)).toContain('berth.dev/node');
  });
});

describe('pod fields too large for the store', () => {
  it('denies a generateName or namespace longer than Kubernetes allows with 422 naming the field', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const long = gamePod(spec, { generateName: `${'g'.repeat(500_000)}-` });
    const verdict = await h.handler(podRequest(long));
    expect(verdict.allowed).toBe(false);
    if (verdict.allowed) return;
    expect(verdict.code).toBe(422);
    expect(verdict.message).toMatch(
      /^metadata\.generateName: .*must be no more than 253 characters/,
    );
    expect(verdict.message.length).toBeLessThan(1000);

    const namespace = 'n'.repeat(70);
    const elsewhere = await h.handler(
      podRequest(gamePod(spec, { name: 'gs', namespace }), { namespace }),
    );
    expect(elsewhere.allowed).toBe(false);
    if (elsewhere.allowed) return;
    expect(elsewhere.message).toMatch(/^metadata\.namespace: .*must be no more than 63 characters/);
    expect(await total(h)).toBe(0);
  });

  it('refuses a review whose request uid is far longer than the UUID an apiserver sends', () => {
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { ...podRequest(gamePod(spec)), uid: 'u'.repeat(500_000) },
    };
    expect(() => parseAdmissionReview(review)).toThrow(MalformedReviewError);
    expect(() => parseAdmissionReview(review)).toThrow(/request\.uid: /);
  });

  it('lets the DELETE of such a pod through, releasing nothing', async () => {
    const h = await podHarness({ default: '7000-7009' });
    const a = stored(await h.create(gamePod(spec, { generateName: 'gs-' })), 'gs-aaaaa');
    const long = structuredClone(a);
    (long.metadata as Record<string, unknown>).name = 'x'.repeat(500_000);
    await remove(h, long);
    expect(await total(h)).toBe(2);
  });
});
