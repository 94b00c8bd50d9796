import type { V1Service } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { serviceCidrStatusLines } from '../../cli/status-text.js';
import { UsageError } from '../../shared/app/local-errors.js';
import { repairRunner } from '../../shared/app/repair-pass.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { checkServiceCidrs, refreshServiceCidrs } from '../../shared/app/service-cidrs.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { clusterServiceCidrs } from '../../shared/k8s/service-cidrs.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { freshTable } from '../support/dynamo.js';
import { serviceReviews } from '../support/service-reviews.js';

const NOW = Date.parse('2036-03-01T12:00:00Z');

const servers: KubeApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function apiserver(serviceCIDRs?: readonly string[]): Promise<KubeApiServer> {
  const server = await startKubeApiServer({
    now: () => NOW - 60_000,
    ...(serviceCIDRs ? { serviceCIDRs } : {}),
  });
  servers.push(server);
  return server;
}

const clusterIp = (name: string, ip?: string): V1Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: {
    type: 'ClusterIP',
    ports: [{ name: 'http', port: 80 }],
    ...(ip ? { clusterIP: ip } : {}),
  },
});

/** berth over a fresh table and the fake: its webhook, its repair pass, and the fake as its cluster. */
async function berthOn(fake: KubeApiServer, document: Record<string, unknown>) {
  const { client, tableName } = await freshTable();
  const config = parseConfig(document);
  const lines: string[] = [];
  const log = { info: (l: string) => lines.push(l), warn: (l: string) => lines.push(l) };
  const runtime = createRuntime({ config, dynamo: client, tableName, log });
  const clusterApi = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
  const repair = repairRunner({
    config,
    dynamo: client,
    tableName,
    clusterApi,
    serviceCidrs: runtime.serviceCidrs,
    now: () => NOW,
  });
  const send = serviceReviews(runtime.admission);
  /** Admits a Service and, allowed, stores it in the fake as the apiserver would. */
  const create = async (service: V1Service) => {
    const answer = await send('CREATE', service);
    if (answer.allowed) fake.addService(applyPatch(service, decodePatch(answer.patch)));
    return answer;
  };
  let passes = 0;
  return {
    runtime,
    clusterApi,
    lines,
    create,
    send,
    repair: () => repair(`test-${passes++}`),
  };
}

describe('the stand-in apiserver with ServiceCIDRs', () => {
  it('records a stored cluster IP as an IPAddress and refuses one outside every ServiceCIDR or already held', async () => {
    const fake = await apiserver(['10.100.0.0/24']);
    fake.addService(clusterIp('web', '10.100.0.10'));
    expect(fake.ipAddresses.get('10.100.0.10')?.spec?.parentRef).toEqual({
      group: '',
      resource: 'services',
      namespace: 'default',
      name: 'web',
    });
    expect(() => fake.addService(clusterIp('far', '10.200.0.10'))).toThrow(
      'Service "far" is invalid: spec.clusterIPs: Invalid value: ["10.200.0.10"]: failed to allocate IP 10.200.0.10: the provided network does not match the current range',
    );
    expect(() => fake.addService(clusterIp('copy', '10.100.0.10'))).toThrow(
      'failed to allocate IP 10.100.0.10: provided IP is already allocated',
    );
    // Over HTTP, as a client sees it: 422 Invalid.
    const response = await fetch(`${fake.url}/api/v1/namespaces/default/services`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body: JSON.stringify(clusterIp('far', '10.200.0.10')),
    });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { reason: string }).reason).toBe('Invalid');
  });

  it('keeps a deleted ServiceCIDR Terminating while a Service holds an address only it covers', async () => {
    const fake = await apiserver(['10.100.0.0/24']);
    fake.addServiceCidr('extra', ['10.101.0.0/24']);
    fake.addService(clusterIp('late', '10.101.0.7'));
    fake.deleteServiceCidr('extra');
    const extra = fake.serviceCidrs.get('extra');
    expect(extra?.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Terminating',
    });
    expect(() => fake.addService(clusterIp('newer', '10.101.0.8'))).toThrow(
      'the provided network does not match the current range',
    );
    fake.removeService('default', 'late');
    expect(fake.serviceCidrs.has('extra')).toBe(false);
  });

  it('answers 404 for ServiceCIDRs as a cluster before 1.33 does, which berth reads as none', async () => {
    const fake = await apiserver();
    const api = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
    expect(await clusterServiceCidrs(api)).toBeUndefined();
  });
});

describe('berth against the cluster ServiceCIDRs', () => {
  it('refuses to start, and denies Services, on a configured range the cluster does not have', async () => {
    const fake = await apiserver(['10.96.0.0/24']);
    const { clusterApi } = await berthOn(fake, {});
    const config = parseConfig({ cluster: 'games' });
    const refused = checkServiceCidrs(
      [config],
      new Map([['games', { api: clusterApi, context: 'fake', server: fake.url }]]),
    );
    await expect(refused).rejects.toThrow(UsageError);
    await expect(refused).rejects.toThrow(
      /serviceCIDRs: 10\.100\.0\.0\/16 is not a Service CIDR of this cluster \(its ServiceCIDRs: 10\.96\.0\.0\/24 \(kubernetes\)\)/,
    );

    // A range the cluster lost at runtime: the repair pass reads it, admission follows.
    const berth = await berthOn(fake, {});
    const summary = await berth.repair();
    expect(summary.findings.ServiceCIDRRefused).toBe(1);
    const denied = await berth.create(clusterIp('web'));
    expect(denied.allowed).toBe(false);
    expect(denied.status?.code).toBe(422);
    expect(denied.status?.message).toMatch(
      /^spec\.clusterIPs\[0\]: failed to allocate a serviceIP: 10\.100\.0\.0\/16 is not a Service CIDR of this cluster \(its ServiceCIDRs: 10\.96\.0\.0\/24 \(kubernetes\)\)/,
    );
  });

  it('follows a ServiceCIDR added at runtime when the config allows it, and only then', async () => {
    const fake = await apiserver(['10.100.0.0/24']);
    const following = await berthOn(fake, {
      serviceCIDRs: ['10.100.0.0/24'],
      services: { followClusterCIDRs: true },
    });
    const fixed = await berthOn(fake, { serviceCIDRs: ['10.100.0.0/24'] });
    await following.repair();
    await fixed.repair();
    expect((await following.create(clusterIp('before', '10.101.0.5'))).allowed).toBe(false);

    fake.addServiceCidr('extra', ['10.101.0.0/24']);
    const summary = await following.repair();
    await fixed.repair();
    expect(summary.serviceCidrs?.followed).toEqual(['10.101.0.0/24']);
    expect(following.lines.some((line) => line.includes('following'))).toBe(true);
    const allowed = await following.create(clusterIp('after', '10.101.0.6'));
    expect(allowed.allowed).toBe(true);
    expect(fake.ipAddresses.has('10.101.0.6')).toBe(true);
    expect((await following.runtime.status()).ranges.map((r) => r.name)).toContain('10.101.0.0/24');
    // Without followClusterCIDRs the new range is no range of berth's.
    const notFollowed = await fixed.create(clusterIp('other', '10.101.0.9'));
    expect(notFollowed.allowed).toBe(false);
    expect(notFollowed.status?.message).toContain('is not in the valid range');
  });

  it('moves dynamic picks to a followed ServiceCIDR once the configured range is full', async () => {
    const fake = await apiserver(['10.100.0.0/29']);
    fake.addServiceCidr('extra', ['10.101.0.0/29']);
    const berth = await berthOn(fake, {
      serviceCIDRs: ['10.100.0.0/29'],
      services: { followClusterCIDRs: true },
    });
    await berth.repair();
    const ips: string[] = [];
    for (let i = 0; i < 8; i++) {
      const answer = await berth.create(clusterIp(`s${i}`));
      expect(answer.allowed).toBe(true);
      ips.push(fake.services.get(`default/s${i}`)?.spec?.clusterIP ?? '');
    }
    // Six usable addresses in each /29: the configured range's first, then the followed one's.
    expect(ips.slice(0, 6).every((ip) => ip.startsWith('10.100.0.'))).toBe(true);
    expect(ips.slice(6).every((ip) => ip.startsWith('10.101.0.'))).toBe(true);
  });

  it('stops allocating from a terminating ServiceCIDR and reports what still holds addresses in it', async () => {
    const fake = await apiserver(['10.100.0.0/24', 'fd00::/120']);
    fake.addServiceCidr('extra', ['10.101.0.0/28']);
    const berth = await berthOn(fake, {
      serviceCIDRs: ['10.101.0.0/28'],
      services: { followClusterCIDRs: true },
    });
    await berth.repair();
    expect((await berth.create(clusterIp('web', '10.101.0.3'))).allowed).toBe(true);
    fake.deleteServiceCidr('extra');

    const summary = await berth.repair();
    expect(summary.findings.ServiceCIDRTerminating).toBe(1);
    expect(summary.serviceCidrs?.terminating).toEqual([
      { serviceCidr: 'extra', cidr: '10.101.0.0/28', holders: ['default/web (10.101.0.3)'] },
    ]);
    const status = await berth.runtime.status();
    expect(status.serviceCidrs?.terminating[0]?.holders).toEqual(['default/web (10.101.0.3)']);
    // berth status reads the cluster itself, on a runtime no pass has run in.
    const { runtime: fresh } = await berthOn(fake, {
      serviceCIDRs: ['10.101.0.0/28'],
      services: { followClusterCIDRs: true },
    });
    await refreshServiceCidrs(fresh.serviceCidrs, berth.clusterApi);
    const report = (await fresh.status()).serviceCidrs;
    expect(report && serviceCidrStatusLines(report)).toContain(
      '  being deleted: ServiceCIDR extra (10.101.0.0/28), still held by default/web (10.101.0.3)',
    );
    const denied = await berth.create(clusterIp('next', '10.101.0.4'));
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toContain('10.101.0.0/28 is being deleted from this cluster');
    // A dynamic pick comes from the range still ready (followed: the cluster's default one).
    const moved = await berth.create(clusterIp('moved'));
    expect(moved.allowed).toBe(true);
    expect(fake.services.get('default/moved')?.spec?.clusterIP).toMatch(/^10\.100\.0\./);
  });

  it('reports IPs the apiserver holds that berth does not, and the reverse', async () => {
    const fake = await apiserver(['10.100.0.0/24']);
    const berth = await berthOn(fake, { serviceCIDRs: ['10.100.0.0/24'] });
    // Stored while berth was not in the path: only the apiserver holds it.
    fake.addService(clusterIp('outside', '10.100.0.20'));
    // Admitted by berth, never stored: only berth holds it.
    const answer = await berth.send('CREATE', clusterIp('lost', '10.100.0.30'));
    expect(answer.allowed).toBe(true);

    const summary = await berth.repair();
    expect(summary.findings.IPAddressNotInBerth).toBe(1);
    expect(summary.findings.IPAddressMissing).toBe(1);
    expect(summary.serviceCidrs?.drift).toEqual([
      { ip: '10.100.0.20', heldBy: 'apiserver', holder: 'default/outside' },
      { ip: '10.100.0.30', heldBy: 'berth', holder: expect.stringMatching(/^allocation /) },
    ]);
  });

  it('reads the ServiceCIDRs before a Service write where no pass runs (the admission function), at most once a minute', async () => {
    const fake = await apiserver(['10.100.0.0/24']);
    const { client, tableName } = await freshTable();
    const source = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() });
    let now = NOW;
    const runtime = createRuntime({
      config: parseConfig({ serviceCIDRs: ['10.100.0.0/24'] }),
      dynamo: client,
      tableName,
      serviceCidrSource: source,
      now: () => now,
    });
    const send = serviceReviews(runtime.admission);
    expect((await send('CREATE', clusterIp('a'))).allowed).toBe(true);
    const reads = () =>
      fake.requests.filter((r) => r.path === '/apis/networking.k8s.io/v1/servicecidrs').length;
    expect(reads()).toBe(1);
    // The cluster loses the range: decided by the minute-old reading until it is a minute old.
    fake.serviceCidrs.clear();
    fake.addServiceCidr('kubernetes', ['10.96.0.0/24']);
    expect((await send('CREATE', clusterIp('b'))).allowed).toBe(true);
    expect(reads()).toBe(1);
    now += 60_000;
    const denied = await send('CREATE', clusterIp('c'));
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toContain('10.100.0.0/24 is not a Service CIDR of this cluster');
    expect(reads()).toBe(2);
  });

  it('keeps the configured ranges on a cluster without ServiceCIDRs, said once in the log', async () => {
    const fake = await apiserver();
    const berth = await berthOn(fake, { serviceCIDRs: ['10.100.0.0/24'] });
    const first = await berth.repair();
    await berth.repair();
    expect(first.serviceCidrs).toBeUndefined();
    expect(berth.lines.filter((line) => line.includes('no ServiceCIDR objects'))).toHaveLength(1);
    expect((await berth.create(clusterIp('web', '10.100.0.9'))).allowed).toBe(true);
  });

  it('warns about served clusters whose Service CIDRs overlap', async () => {
    const a = await apiserver(['10.100.0.0/16']);
    const b = await apiserver(['10.100.0.0/16']);
    const api = (fake: KubeApiServer) => ({
      api: new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig() }),
      context: 'fake',
      server: fake.url,
    });
    const start = await checkServiceCidrs(
      [parseConfig({ cluster: 'games-a' }), parseConfig({ cluster: 'games-b' })],
      new Map([
        ['games-a', api(a)],
        ['games-b', api(b)],
      ]),
    );
    expect(start.overlaps.map((o) => o.clusters)).toEqual([['games-a', 'games-b']]);
    expect(start.overlaps[0]?.message).toContain('overlapping Service CIDRs');
  });
});
