import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import type { KubeConfig } from '@kubernetes/client-node';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EKS_TOKEN_REFRESH_MS,
  EksClusterApiFactory,
  type EksClusterEndpoint,
  type EksClusterLookup,
  SdkEksClusterLookup,
} from '../../shared/k8s/eks-cluster-api.js';
import { EksCredentials } from '../../shared/k8s/eks-credentials.js';
import { EKS_TOKEN_PREFIX } from '../../shared/k8s/eks-token.js';
import { EksClusterLookupError } from '../../shared/k8s/errors.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString(
  'base64',
);
const ENDPOINT = 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com';

describe('SdkEksClusterLookup', () => {
  const eks = mockClient(EKSClient);

  afterEach(() => {
    eks.reset();
  });

  it('reads endpoint and CA from DescribeCluster by cluster name', async () => {
    eks.on(DescribeClusterCommand, { name: 'games-prod' }).resolves({
      cluster: { name: 'games-prod', endpoint: ENDPOINT, certificateAuthority: { data: CA } },
    });

    const found = await new SdkEksClusterLookup(new EKSClient({})).describe('games-prod');

    expect(found).toEqual({ endpoint: ENDPOINT, caData: CA });
    expect(eks.commandCalls(DescribeClusterCommand)).toHaveLength(1);
    expect(eks.commandCalls(DescribeClusterCommand)[0]?.args[0].input).toEqual({
      name: 'games-prod',
    });
  });

  it('throws a lookup error while the cluster has no endpoint', async () => {
    eks.on(DescribeClusterCommand).resolves({ cluster: { name: 'c1', status: 'CREATING' } });

    const error = await new SdkEksClusterLookup(new EKSClient({}))
      .describe('c1')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(EksClusterLookupError);
    expect(String(error)).toContain('CREATING');
  });

  it('throws a lookup error when the CA is missing', async () => {
    eks.on(DescribeClusterCommand).resolves({ cluster: { name: 'c1', endpoint: ENDPOINT } });

    await expect(new SdkEksClusterLookup(new EKSClient({})).describe('c1')).rejects.toBeInstanceOf(
      EksClusterLookupError,
    );
  });

  it('lets an EKS error through unchanged', async () => {
    eks.on(DescribeClusterCommand).rejects(
      Object.assign(new Error('No cluster found for name: c1.'), {
        name: 'ResourceNotFoundException',
      }),
    );

    await expect(new SdkEksClusterLookup(new EKSClient({})).describe('c1')).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
  });
});

/** A lookup with scripted answers and a call count. */
class ScriptedLookup implements EksClusterLookup {
  calls = 0;
  readonly #answers: (EksClusterEndpoint | Error)[];

  constructor(...answers: (EksClusterEndpoint | Error)[]) {
    this.#answers = answers;
  }

  async describe(): Promise<EksClusterEndpoint> {
    const answer = this.#answers[Math.min(this.calls, this.#answers.length - 1)];
    this.calls++;
    if (answer === undefined || answer instanceof Error) throw answer ?? new Error('no answer');
    return answer;
  }
}

describe('EksClusterApiFactory', () => {
  const T0 = Date.parse('2026-03-01T12:00:00Z');

  function setup(
    lookup: EksClusterLookup = new ScriptedLookup({ endpoint: ENDPOINT, caData: CA }),
  ) {
    let now = T0;
    const built: KubeConfig[] = [];
    const factory = new EksClusterApiFactory({
      cluster: 'games-prod',
      region: 'eu-west-1',
      credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
      lookup,
      now: () => now,
      build: (kubeConfig) => {
        built.push(kubeConfig);
        return new FakeClusterApi();
      },
    });
    return {
      factory,
      built,
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  const tokenOf = (kubeConfig: KubeConfig | undefined): string =>
    kubeConfig?.getCurrentUser()?.token ?? '';

  it('builds a client for the described endpoint with an EKS bearer token', async () => {
    const { factory, built } = setup();

    await factory.get();

    expect(built).toHaveLength(1);
    const cluster = built[0]?.getCurrentCluster();
    expect(cluster).toMatchObject({ server: ENDPOINT, caData: CA, skipTLSVerify: false });
    const token = tokenOf(built[0]);
    expect(token.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
    const url = new URL(
      Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'),
    );
    expect(url.searchParams.get('X-Amz-Date')).toBe('20260301T120000Z');
  });

  it('reuses the client while its token is younger than 10 minutes', async () => {
    const { factory, built, advance } = setup();

    const first = await factory.get();
    advance(EKS_TOKEN_REFRESH_MS - 1);
    const second = await factory.get();

    expect(second).toBe(first);
    expect(built).toHaveLength(1);
  });

  it('rebuilds with a fresh token once the token is 10 minutes old, describing the cluster once', async () => {
    const lookup = new ScriptedLookup({ endpoint: ENDPOINT, caData: CA });
    const { factory, built, advance } = setup(lookup);

    const first = await factory.get();
    advance(EKS_TOKEN_REFRESH_MS);
    const second = await factory.get();

    expect(second).not.toBe(first);
    expect(built).toHaveLength(2);
    expect(tokenOf(built[1])).not.toBe(tokenOf(built[0]));
    expect(lookup.calls).toBe(1);
  });

  it('builds once for concurrent callers', async () => {
    const { factory, built } = setup();

    const [a, b, c] = await Promise.all([factory.get(), factory.get(), factory.get()]);

    expect(built).toHaveLength(1);
    expect(b).toBe(a);
    expect(c).toBe(a);
  });

  it('asks EKS again after a failed lookup', async () => {
    const lookup = new ScriptedLookup(new Error('throttled'), { endpoint: ENDPOINT, caData: CA });
    const { factory, built } = setup(lookup);

    await expect(factory.get()).rejects.toThrow('throttled');
    await factory.get();

    expect(lookup.calls).toBe(2);
    expect(built).toHaveLength(1);
  });

  it('rebuilds after invalidate', async () => {
    const { factory, built } = setup();

    await factory.get();
    factory.invalidate();
    await factory.get();

    expect(built).toHaveLength(2);
  });
});

describe('EksCredentials', () => {
  it('does not cache a token whose refresh was in flight when it was invalidated', async () => {
    let answer: (endpoint: EksClusterEndpoint) => void = () => {};
    const described = new Promise<EksClusterEndpoint>((resolve) => {
      answer = resolve;
    });
    let now = Date.parse('2026-03-01T12:00:00Z');
    const credentials = new EksCredentials({
      cluster: 'games-prod',
      region: 'eu-west-1',
      credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
      lookup: { describe: () => described },
      now: () => (now += 1_000),
    });

    const inFlight = credentials.get();
    credentials.invalidate();
    answer({ endpoint: ENDPOINT, caData: CA });
    const first = await inFlight;
    const second = await credentials.get();

    expect(second).not.toBe(first);
    expect(second.token).not.toBe(first.token);
    expect(await credentials.get()).toBe(second);
  });
});
