import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { KubeConfigError } from '../../shared/k8s/errors.js';
import {
  bearerTokenKubeConfig,
  kubeconfigFiles,
  loadLocalKubeConfig,
} from '../../shared/k8s/kubeconfig.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';

/** A kubeconfig document with one cluster, user and context named `name`. */
function kubeconfigYaml(
  name: string,
  server: string,
  token: string,
  current = true,
  insecure = true,
): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${server}`,
    ...(insecure ? ['    insecure-skip-tls-verify: true'] : []),
    'users:',
    `- name: ${name}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}`,
    ...(current ? [`current-context: ${name}`] : []),
    '',
  ].join('\n');
}

describe('loadLocalKubeConfig', () => {
  let dir: string;
  let fake: KubeApiServer;

  beforeAll(async () => {
    fake = await startKubeApiServer({ token: 'from-file' });
  });

  afterAll(async () => {
    await fake.stop();
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-kubeconfig-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const write = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('loads the --kubeconfig file, and a client made from it reaches the cluster', async () => {
    const path = write('config', kubeconfigYaml('local', fake.url, 'from-file'));
    fake.addNode({ metadata: { name: 'n1' } });

    const kubeConfig = loadLocalKubeConfig({ kubeconfigPath: path, kubeconfigEnv: '/nope' });
    const api = new ClientNodeClusterApi({ kubeConfig });

    expect((await api.getNode('n1'))?.metadata?.name).toBe('n1');
    expect(fake.requests.at(-1)?.headers.authorization).toBe('Bearer from-file');
  });

  it('reaches a plain-HTTP server as kubectl proxy serves it, without insecure-skip-tls-verify', async () => {
    const path = write('proxy', kubeconfigYaml('proxy', fake.url, 'from-file', true, false));
    fake.addNode({ metadata: { name: 'n2' } });
    const api = new ClientNodeClusterApi({
      kubeConfig: loadLocalKubeConfig({ kubeconfigPath: path }),
    });
    expect((await api.getNode('n2'))?.metadata?.name).toBe('n2');
  });

  it('merges the KUBECONFIG files, keeping the first current context', () => {
    const a = write('a', kubeconfigYaml('a', 'https://a.example', 'ta'));
    const b = write('b', kubeconfigYaml('b', 'https://b.example', 'tb'));

    const kubeConfig = loadLocalKubeConfig({ kubeconfigEnv: [a, b].join(delimiter) });

    expect(kubeConfig.getCurrentContext()).toBe('a');
    expect(kubeConfig.getContexts().map((c) => c.name)).toEqual(['a', 'b']);
  });

  it('switches to a named context', () => {
    const a = write('a', kubeconfigYaml('a', 'https://a.example', 'ta'));
    const b = write('b', kubeconfigYaml('b', 'https://b.example', 'tb', false));

    const kubeConfig = loadLocalKubeConfig({ kubeconfigEnv: `${a}${delimiter}${b}`, context: 'b' });

    expect(kubeConfig.getCurrentCluster()?.server).toBe('https://b.example');
  });

  it('falls back to ~/.kube/config', () => {
    mkdirSync(join(dir, '.kube'));
    write('.kube/config', kubeconfigYaml('home', 'https://home.example', 't'));

    expect(kubeconfigFiles({ homeDir: dir })).toEqual([join(dir, '.kube', 'config')]);
    expect(loadLocalKubeConfig({ homeDir: dir }).getCurrentCluster()?.server).toBe(
      'https://home.example',
    );
  });

  it('reports a missing kubeconfig with the ways to give one', () => {
    expect(() => loadLocalKubeConfig({ homeDir: dir })).toThrow(KubeConfigError);
    expect(() => loadLocalKubeConfig({ homeDir: dir })).toThrow(/--kubeconfig/);
    expect(() => loadLocalKubeConfig({ kubeconfigPath: join(dir, 'absent') })).toThrow(
      /does not exist/,
    );
  });

  it('reports an unknown context and a file without one', () => {
    const none = write('none', kubeconfigYaml('x', 'https://x.example', 't', false));

    expect(() => loadLocalKubeConfig({ kubeconfigPath: none, context: 'y' })).toThrow(
      /no context y/,
    );
    expect(() => loadLocalKubeConfig({ kubeconfigPath: none })).toThrow(KubeConfigError);
  });
});

describe('bearerTokenKubeConfig', () => {
  it('makes one cluster, user and context with the token and CA', () => {
    const kubeConfig = bearerTokenKubeConfig({
      name: 'prod',
      server: 'https://api.example',
      caData: 'Q0E=',
      token: 'k8s-aws-v1.abc',
    });

    expect(kubeConfig.getCurrentContext()).toBe('prod');
    expect(kubeConfig.getCurrentCluster()).toMatchObject({
      server: 'https://api.example',
      caData: 'Q0E=',
      skipTLSVerify: false,
    });
    expect(kubeConfig.getCurrentUser()?.token).toBe('k8s-aws-v1.abc');
  });
});
