import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createManifestsCommand } from '../../cli/manifests.js';
import type { ManifestsOptions } from '../../shared/app/manifests.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ensureLocalTls } from '../../shared/local/tls.js';
import { CNI_CONFIG_FILE, UNINSTALL_ON_EXIT } from '../../shared/manifests/cni.js';
import { runPlugin } from '../../sim/cni-runtime.js';

const NODE_IPS_URL = 'https://xyz789.lambda-url.eu-west-1.on.aws/';
const LOCAL_CA = '-----BEGIN CERTIFICATE-----\nlocal CA\n-----END CERTIFICATE-----';

function options(overrides: Partial<ManifestsOptions> = {}): ManifestsOptions {
  return {
    config: parseConfig({ cluster: 'games', scale: { nodeSelector: 'role=game-server' } }),
    dataDir: '.berth-test',
    port: 8443,
    http: false,
    json: true,
    cni: true,
    ...overrides,
  };
}

async function print(
  overrides: Partial<ManifestsOptions>,
  outputs: Record<string, string> = { NodeIpsUrl: NODE_IPS_URL },
  localCa = async (_: string, host: string) => `${LOCAL_CA} for ${host}`,
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await createManifestsCommand({
    stacks: { outputs: async () => outputs },
    secrets: { secretString: async () => '' },
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    localCa,
  })(options(overrides));
  const items = out.length
    ? // biome-ignore lint/suspicious/noExplicitAny: the printed manifests, read back as plain JSON
      (JSON.parse(out.join('')) as { items: any[] }).items
    : [];
  return { code, err: err.join(''), items };
}

describe('berth manifests --cni', () => {
  it("points a cluster's node agents at its own routes in a stack of several clusters", async () => {
    const { code, items } = await print(
      { stack: 'berth', config: parseConfig({ cluster: 'games-b' }) },
      { NodeIpsUrl: NODE_IPS_URL, WebhookSecretArns: JSON.stringify({ 'games-b': 'arn:b' }) },
    );
    expect(code).toBe(0);
    const conf = JSON.parse(items[0]?.data[CNI_CONFIG_FILE]);
    expect(conf.plugins[0].ipam.endpoint).toBe(
      `${NODE_IPS_URL.replace(/\/$/, '')}/clusters/games-b`,
    );
  });

  it('prints a ConfigMap with the bundled plugin and a DaemonSet on the configured nodes, public images only', async () => {
    const { code, items } = await print({ stack: 'berth-games' });
    expect(code).toBe(0);
    const [configMap, daemonSet] = items;
    expect(configMap?.kind).toBe('ConfigMap');
    expect(daemonSet?.kind).toBe('DaemonSet');
    expect(configMap?.data['berth-cni.mjs'].length).toBeGreaterThan(5_000);
    // The chunks the entry loads travel beside it.
    const chunks = Object.keys(configMap?.data ?? {}).filter((k) => /^berth-cni-.+\.mjs$/.test(k));
    expect(chunks.length).toBeGreaterThan(0);
    expect(JSON.stringify(configMap).length).toBeLessThan(1024 * 1024);
    const conf = JSON.parse(configMap?.data[CNI_CONFIG_FILE]);
    expect(conf.plugins[0]).toMatchObject({
      type: 'ptp',
      ipMasq: false,
      ipam: {
        type: 'berth-cni',
        endpoint: NODE_IPS_URL.replace(/\/$/, ''),
        auth: 'sigv4',
        node: '__NODE__',
      },
    });
    expect(conf.plugins[1]).toMatchObject({
      type: 'portmap',
      capabilities: { portMappings: true },
    });
    const pod = daemonSet?.spec.template.spec;
    expect(pod.nodeSelector).toEqual({ role: 'game-server' });
    expect(pod.hostNetwork).toBe(true);
    const images = [...pod.initContainers, ...pod.containers].map(
      (c: { image: string }) => c.image,
    );
    expect(images.every((image: string) => image.startsWith('public.ecr.aws/'))).toBe(true);
    const hostPaths = pod.volumes.flatMap((v: { hostPath?: { path: string } }) =>
      v.hostPath ? [v.hostPath.path] : [],
    );
    expect(hostPaths.sort()).toEqual([
      '/etc/cni/net.d',
      '/opt/cni/bin',
      '/run/berth-cni.lock',
      '/var/lib/berth-cni',
    ]);
    // The node agent runs the same bundle, with the node's handout files and lock.
    const agent = pod.containers.find((c: { name: string }) => c.name === 'agent');
    expect(agent.command).toEqual(['node', '/config/berth-cni.mjs', 'agent']);
    expect(agent.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(
      expect.arrayContaining(['/var/lib/berth-cni', '/run/berth-cni.lock', '/host/etc/cni/net.d']),
    );
  });

  it('takes the node IP API of --url (SigV4 for a function URL, plain otherwise) or of --local, and another node selector', async () => {
    const local = await print({
      local: true,
      advertiseAddress: '172.18.0.1',
      port: 8080,
      cniNodes: 'berth=on',
    });
    const conf = JSON.parse(local.items[0]?.data[CNI_CONFIG_FILE]);
    // berth serve serves HTTPS unless --http: the plugin calls it so, trusting its local CA.
    expect(conf.plugins[0].ipam).toMatchObject({
      endpoint: 'https://172.18.0.1:8080',
      auth: 'none',
    });
    expect(local.items[0]?.data['ca.crt']).toBe(`${LOCAL_CA} for 172.18.0.1`);
    // Nothing to warn of: only the note of aws-node's patch, for these nodes.
    expect(local.err).toMatch(/^berth manifests --cni: berth keeps no ENI pool .*\(berth=on\)/);
    expect(local.items[1]?.spec.template.spec.nodeSelector).toEqual({ berth: 'on' });
    const plain = await print({ local: true, http: true, advertiseAddress: '172.18.0.1' });
    expect(JSON.parse(plain.items[0]?.data[CNI_CONFIG_FILE]).plugins[0].ipam.endpoint).toBe(
      'http://172.18.0.1:8443',
    );
    expect(plain.items[0]?.data['ca.crt']).toBeUndefined();
    const url = await print({ url: NODE_IPS_URL });
    expect(JSON.parse(url.items[0]?.data[CNI_CONFIG_FILE]).plugins[0].ipam.auth).toBe('sigv4');
    const none = await print({});
    expect(none).toMatchObject({ code: 2, items: [] });
    expect(none.err).toMatch(/no target for --cni/);
  });

  it("warns on stderr that a loopback address is out of a cluster's reach, and still prints", async () => {
    for (const advertiseAddress of [undefined, '::1', 'localhost']) {
      const loopback = await print({
        local: true,
        ...(advertiseAddress ? { advertiseAddress } : {}),
      });
      expect(loopback.code).toBe(0);
      expect(loopback.err).toMatch(
        /^berth manifests: warning: (127\.0\.0\.1|::1|localhost) is this machine's loopback address, which a cluster's nodes and apiserver cannot reach .*: pass --advertise-address ADDR, .* or --url URL\nberth manifests --cni: /,
      );
    }
    expect(
      JSON.parse(
        (await print({ local: true, advertiseAddress: '::1' })).items[0]?.data[CNI_CONFIG_FILE],
      ).plugins[0].ipam.endpoint,
    ).toBe('https://[::1]:8443');
  });

  it('installs on a node as the init container would, trusting the local CA, and removes it all when the DaemonSet goes', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-cni-node-'));
    const tls = await ensureLocalTls(join(root, 'tls'), Date.now, [], { say: () => {} });
    const { items } = await print({ local: true }, undefined, async () => tls.ca);
    // The local server, over HTTPS with a certificate of that CA.
    const server = createHttpsServer({ cert: tls.cert, key: tls.key }, (_, response) =>
      response.end('{}'),
    );
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const config = join(root, 'config');
      const { mkdir } = await import('node:fs/promises');
      await mkdir(config);
      for (const [file, text] of Object.entries(items[0]?.data as Record<string, string>))
        await writeFile(join(config, file), text);
      // The image's /usr/local/bin/node, /config and /host, moved under the temporary root.
      const rewrite = (script: string) =>
        script
          .replaceAll('/usr/local/bin/node', process.execPath)
          .replaceAll('/config/', `${config}/`)
          .replaceAll('/host/', `${root}/host/`);
      const run = promisify(execFile);
      await run('sh', ['-c', rewrite(items[0]?.data['install.sh'])], {
        env: { PATH: process.env.PATH, NODE_NAME: 'ip-10-0-0-7' },
      });
      const installed = JSON.parse(
        await readFile(join(root, 'host/etc/cni/net.d', CNI_CONFIG_FILE), 'utf8'),
      );
      expect(installed.plugins[0].ipam.node).toBe('ip-10-0-0-7');
      const version = await runPlugin(
        join(root, 'host/opt/cni/bin/berth-cni'),
        { CNI_COMMAND: 'VERSION' },
        '{"cniVersion":"1.0.0"}',
      );
      expect(version.json).toMatchObject({
        supportedVersions: expect.arrayContaining(['1.0.0']),
      });
      // The runtime the wrapper starts trusts the local CA installed beside the plugin: a script
      // in the bundle's place reaches the HTTPS server; without the CA file, it is refused.
      const support = join(root, 'host/opt/cni/bin/berth-cni.d');
      expect(await readFile(join(support, 'ca.crt'), 'utf8')).toBe(tls.ca);
      const bundle = await readFile(join(support, 'berth-cni.mjs'), 'utf8');
      await writeFile(
        join(support, 'berth-cni.mjs'),
        'const r = await fetch(process.argv[2]); process.stdout.write(String(r.status));',
      );
      const wrapper = join(root, 'host/opt/cni/bin/berth-cni');
      expect((await run(wrapper, [url])).stdout).toBe('200');
      await rm(join(support, 'ca.crt'));
      await expect(run(wrapper, [url])).rejects.toThrow(/fetch failed/);
      await writeFile(join(support, 'berth-cni.mjs'), bundle);
      // SIGTERM to the main container's shell runs the uninstall (once its trap is set).
      const child = execFile('sh', ['-c', rewrite(UNINSTALL_ON_EXIT)]);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      const { readdir } = await import('node:fs/promises');
      expect(await readdir(join(root, 'host/opt/cni/bin'))).toEqual([]);
      expect(await readdir(join(root, 'host/etc/cni/net.d'))).toEqual([]);
    } finally {
      server.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
