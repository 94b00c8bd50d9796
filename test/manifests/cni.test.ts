import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runPlugin } from '../../bench/support/cni-plugin.js';
import { createManifestsCommand } from '../../cli/manifests.js';
import type { ManifestsOptions } from '../../shared/app/manifests.js';
import { parseConfig } from '../../shared/config/schema.js';
import { CNI_CONFIG_FILE, UNINSTALL_ON_EXIT } from '../../shared/manifests/cni.js';

const NODE_IPS_URL = 'https://xyz789.lambda-url.eu-west-1.on.aws/';

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
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await createManifestsCommand({
    stacks: { outputs: async () => outputs },
    secrets: { secretString: async () => '' },
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    localCa: async () => '',
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
    expect(configMap?.data['berth-cni.mjs'].length).toBeGreaterThan(10_000);
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
    expect(hostPaths.sort()).toEqual(['/etc/cni/net.d', '/opt/cni/bin']);
  });

  it('takes the node IP API of --url (SigV4 for a function URL, plain otherwise) or of --local, and another node selector', async () => {
    const local = await print({
      local: true,
      advertiseAddress: '172.18.0.1',
      port: 8080,
      cniNodes: 'berth=on',
    });
    const conf = JSON.parse(local.items[0]?.data[CNI_CONFIG_FILE]);
    expect(conf.plugins[0].ipam).toMatchObject({
      endpoint: 'http://172.18.0.1:8080',
      auth: 'none',
    });
    expect(local.items[1]?.spec.template.spec.nodeSelector).toEqual({ berth: 'on' });
    const url = await print({ url: NODE_IPS_URL });
    expect(JSON.parse(url.items[0]?.data[CNI_CONFIG_FILE]).plugins[0].ipam.auth).toBe('sigv4');
    const none = await print({});
    expect(none).toMatchObject({ code: 2, items: [] });
    expect(none.err).toMatch(/no target for --cni/);
  });

  it('installs on a node as the init container would, and removes it all when the DaemonSet goes', async () => {
    const { items } = await print({ local: true });
    const root = await mkdtemp(join(tmpdir(), 'berth-cni-node-'));
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
      await rm(root, { recursive: true, force: true });
    }
  });
});
