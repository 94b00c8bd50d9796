import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createManifestsCommand, manifestsCommand } from '../../cli/manifests.js';
import type { ManifestsDeps, ManifestsOptions } from '../../shared/app/manifests.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ensureLocalTls } from '../../shared/local/tls.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBlocal\n-----END CERTIFICATE-----\n';
const PRIVATE_CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBprivate\n-----END CERTIFICATE-----\n';
const SECRET = 'Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98765';
const BASE_URL = 'https://abc123.lambda-url.eu-west-1.on.aws/admission/';
const SECRET_ARN =
  'arn:aws:secretsmanager:eu-west-1:111122223333:secret:berth-games-webhook-AbCdEf';

function options(overrides: Partial<ManifestsOptions> = {}): ManifestsOptions {
  return {
    config: parseConfig({ cluster: 'games' }),
    dataDir: '.berth-test',
    port: 8443,
    http: false,
    json: false,
    ...overrides,
  };
}

/** A fake of the command's collaborators, recording what it was asked. */
function fakeDeps(overrides: Partial<ManifestsDeps> = {}) {
  const calls = { localCa: [] as string[], stacks: [] as string[], secrets: [] as string[] };
  const hosts: string[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const deps: ManifestsDeps = {
    stacks: {
      async outputs(stack) {
        calls.stacks.push(stack);
        return { WebhookBaseUrl: BASE_URL, WebhookSecretArn: SECRET_ARN, TableName: 't' };
      },
    },
    secrets: {
      async secretString(arn) {
        calls.secrets.push(arn);
        return SECRET;
      },
    },
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    localCa: async (dir, host) => {
      calls.localCa.push(dir);
      hosts.push(host);
      return CA_PEM;
    },
    ...overrides,
  };
  return { deps, calls, hosts, out: () => out.join(''), err: () => err.join('') };
}

function webhookConfiguration(jsonText: string): V1MutatingWebhookConfiguration {
  const list = JSON.parse(jsonText) as { items: { kind: string }[] };
  const found = list.items.find((item) => item.kind === 'MutatingWebhookConfiguration');
  if (!found) throw new Error('no MutatingWebhookConfiguration printed');
  return found as V1MutatingWebhookConfiguration;
}

function clientConfigs(jsonText: string) {
  return (webhookConfiguration(jsonText).webhooks ?? []).map((webhook) => webhook.clientConfig);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('berth manifests', () => {
  it('prints nothing without a target, says which to pass, and exits 2', async () => {
    const io = fakeDeps();
    expect(await createManifestsCommand(io.deps)(options())).toBe(2);
    expect(io.out()).toBe('');
    expect(io.err()).toMatch(/no target: pass --stack NAME .* --url URL .* --local/);
    expect(io.calls.localCa).toEqual([]);
  });

  it('targets the local server at an advertised address, with a CA valid for it', async () => {
    const io = fakeDeps();
    const local = options({ json: true, local: true, advertiseAddress: '192.168.49.1' });
    expect(await createManifestsCommand(io.deps)(local)).toBe(0);
    for (const config of clientConfigs(io.out())) {
      expect(config.url).toBe('https://192.168.49.1:8443/admission');
    }
    expect(io.hosts).toEqual(['192.168.49.1']);
  });

  it('targets the local server with --local, with the CA from the data dir', async () => {
    const io = fakeDeps();
    expect(
      await createManifestsCommand(io.deps)(options({ json: true, port: 9443, local: true })),
    ).toBe(0);
    expect(io.calls.localCa).toEqual([join(resolve('.berth-test'), 'tls')]);
    for (const config of clientConfigs(io.out())) {
      expect(config.url).toBe('https://127.0.0.1:9443/admission');
      expect(Buffer.from(config.caBundle ?? '', 'base64').toString()).toBe(CA_PEM);
    }
  });

  it('prints YAML unless --json is given', async () => {
    const io = fakeDeps();
    expect(await createManifestsCommand(io.deps)(options({ local: true }))).toBe(0);
    expect(io.out()).toMatch(
      /^---\napiVersion: rbac.authorization.k8s.io\/v1\nkind: ClusterRole\n/,
    );
    expect(io.out()).toContain('kind: MutatingWebhookConfiguration');
    expect(io.out()).toContain('url: "https://127.0.0.1:8443/admission"');
  });

  it('refuses --http: the apiserver calls webhooks over HTTPS only', async () => {
    const io = fakeDeps();
    expect(await createManifestsCommand(io.deps)(options({ http: true, local: true }))).toBe(2);
    expect(io.err()).toMatch(/HTTPS only/);
    expect(io.out()).toBe('');
  });

  it('uses --url as given and trusts public roots without --ca-file', async () => {
    const io = fakeDeps();
    const url = `${BASE_URL}${SECRET}`;
    expect(await createManifestsCommand(io.deps)(options({ json: true, url }))).toBe(0);
    expect(clientConfigs(io.out())).toEqual(Array(5).fill({ url }));
    expect(io.calls.localCa).toEqual([]);
  });

  it('adds the CA of --ca-file to --url', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-manifests-'));
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, PRIVATE_CA_PEM);
    const io = fakeDeps();
    expect(
      await createManifestsCommand(io.deps)(
        options({ json: true, url: 'https://berth.internal/admission', caFile }),
      ),
    ).toBe(0);
    for (const config of clientConfigs(io.out())) {
      expect(Buffer.from(config.caBundle ?? '', 'base64').toString()).toBe(PRIVATE_CA_PEM);
    }
  });

  it('rejects a --ca-file that is missing or not a PEM certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-manifests-'));
    const notPem = join(dir, 'key.txt');
    await writeFile(notPem, 'hello');
    const url = 'https://berth.internal/admission';
    for (const caFile of [join(dir, 'absent.pem'), notPem]) {
      const io = fakeDeps();
      expect(await createManifestsCommand(io.deps)(options({ url, caFile }))).toBe(2);
      expect(io.err()).toContain(`--ca-file ${caFile}`);
    }
  });

  it('rejects a --url the apiserver would refuse', async () => {
    const io = fakeDeps();
    expect(
      await createManifestsCommand(io.deps)(options({ url: 'http://example.com/admission' })),
    ).toBe(2);
    expect(io.err()).toMatch(/must use https/);
  });

  it('builds the URL of a deployed stack from its outputs and secret', async () => {
    const io = fakeDeps();
    expect(
      await createManifestsCommand(io.deps)(options({ json: true, stack: 'berth-games' })),
    ).toBe(0);
    expect(io.calls.stacks).toEqual(['berth-games']);
    expect(io.calls.secrets).toEqual([SECRET_ARN]);
    expect(clientConfigs(io.out())).toEqual(Array(5).fill({ url: `${BASE_URL}${SECRET}` }));
  });

  it("builds a cluster's own URL and secret for a stack of several clusters", async () => {
    const FUNCTION_URL = 'https://xyz789.lambda-url.eu-west-1.on.aws/';
    const stackOutputs = {
      WebhookUrl: FUNCTION_URL,
      WebhookSecretArns: JSON.stringify({
        'games-a': `${SECRET_ARN}-a`,
        'games-b': `${SECRET_ARN}-b`,
      }),
    };
    const io = fakeDeps({ stacks: { outputs: async () => stackOutputs } });
    const forCluster = (cluster: string) =>
      createManifestsCommand(io.deps)(
        options({ json: true, stack: 'berth', config: parseConfig({ cluster }) }),
      );
    expect(await forCluster('games-b')).toBe(0);
    expect(io.calls.secrets).toEqual([`${SECRET_ARN}-b`]);
    expect(clientConfigs(io.out())).toEqual(
      Array(5).fill({ url: `${FUNCTION_URL}clusters/games-b/admission/${SECRET}` }),
    );
    expect(await forCluster('games-c')).toBe(2);
    expect(io.err()).toMatch(
      /--stack berth: serves clusters games-a, games-b, not "games-c"; pass --config FILE --cluster NAME/,
    );
  });

  it('finds no secret for a cluster named constructor in a stack that does not serve it', async () => {
    const stackOutputs = {
      WebhookUrl: 'https://xyz789.lambda-url.eu-west-1.on.aws/',
      WebhookSecretArns: JSON.stringify({ 'games-a': `${SECRET_ARN}-a` }),
    };
    const io = fakeDeps({ stacks: { outputs: async () => stackOutputs } });
    const config = parseConfig({ cluster: 'constructor' });
    expect(
      await createManifestsCommand(io.deps)(options({ json: true, stack: 'berth', config })),
    ).toBe(2);
    expect(io.err()).toMatch(/--stack berth: serves clusters games-a, not "constructor"/);
  });

  it("points at a cluster's own routes on a local server that serves several", async () => {
    const io = fakeDeps();
    const code = await createManifestsCommand(io.deps)(
      options({
        json: true,
        local: true,
        configuredClusters: ['games-a', 'games-b'],
        config: parseConfig({ cluster: 'games-b' }),
      }),
    );
    expect(code).toBe(0);
    expect(clientConfigs(io.out()).map((config) => config.url)).toEqual(
      Array(5).fill('https://127.0.0.1:8443/clusters/games-b/admission'),
    );
  });

  it('refuses --url together with --stack', async () => {
    const io = fakeDeps();
    expect(
      await createManifestsCommand(io.deps)(
        options({ url: `${BASE_URL}${SECRET}`, stack: 'berth-games' }),
      ),
    ).toBe(2);
    expect(io.err()).toMatch(/give one target, not --stack and --url/);
  });

  it('says how to pass --url when it cannot read stack outputs', async () => {
    const io = fakeDeps({ stacks: undefined });
    expect(await createManifestsCommand(io.deps)(options({ stack: 'berth-games' }))).toBe(2);
    expect(io.err()).toMatch(/pass --url with the stack's WebhookBaseUrl output/);
  });

  it('names the missing outputs of a stack that is not berth', async () => {
    const io = fakeDeps({ stacks: { outputs: async () => ({ BucketName: 'b' }) } });
    expect(await createManifestsCommand(io.deps)(options({ stack: 'other' }))).toBe(2);
    expect(io.err()).toMatch(/outputs WebhookBaseUrl and WebhookSecretArn not found/);
  });

  it('exits 1 when an AWS call fails', async () => {
    const io = fakeDeps({
      secrets: {
        secretString: async () => {
          throw new Error('AccessDeniedException: not allowed');
        },
      },
    });
    expect(await createManifestsCommand(io.deps)(options({ stack: 'berth-games' }))).toBe(1);
    expect(io.err()).toContain('AccessDeniedException');
  });
});

describe('manifestsCommand', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'berth-manifests-data-'));
    await ensureLocalTls(join(dataDir, 'tls'));
  });

  it('writes the manifests for the local server to stdout with the CA berth serve uses', async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    const cliOptions = {
      ...options({ json: true, dataDir, local: true }),
      command: 'manifests',
      host: '127.0.0.1',
      passes: false,
      once: false,
      dryRun: false,
      verbose: false,
      local: true,
      cni: false,
      yes: false,
      clusters: [parseConfig({ cluster: 'games' })],
      configuredClusters: ['games'],
    };
    expect(await manifestsCommand(cliOptions)).toBe(0);
    const ca = await readFile(join(dataDir, 'tls', 'ca.crt'), 'utf8');
    for (const config of clientConfigs(out.join(''))) {
      expect(Buffer.from(config.caBundle ?? '', 'base64').toString()).toBe(ca);
    }
  });
});
