/** The admission function's HTTPS reader against a real TLS server with its own CA. */
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EksCredentials } from '../../shared/k8s/eks-credentials.js';
import { EKS_TOKEN_PREFIX } from '../../shared/k8s/eks-token.js';
import {
  KubernetesApiError,
  KubernetesNotFoundError,
  KubernetesUnreachableError,
} from '../../shared/k8s/errors.js';
import {
  type BearerAccess,
  type BearerAccessSource,
  HttpsClusterReader,
} from '../../shared/k8s/https-node-reader.js';
import { ensureLocalTls } from '../../shared/local/tls.js';
import { failureStatus } from '../../sim/fakes/kube-api-server.js';

/** What the server answers for one path: a status and a body, or nothing at all. */
type Scripted = { readonly status: number; readonly body?: unknown } | 'hang' | 'reset';

interface SeenRequest {
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly headers: IncomingMessage['headers'];
  /** Requests seen on the same connection before this one. */
  readonly earlierOnConnection: number;
}

const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'gs-1', namespace: 'games', annotations: { 'berth.dev/allocation-id': 'a1' } },
  spec: { nodeName: 'ip-10-0-1-2' },
};
const NODE = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'ip-10-0-1-2' },
  status: { addresses: [{ type: 'ExternalIP', address: '203.0.113.7' }] },
};

/** An access source that counts its calls and can be told to hand out another token. */
/** An access source that hands out the next of its tokens after each `invalidate`. */
class RotatingAccess implements BearerAccessSource {
  invalidations = 0;
  constructor(
    readonly base: Omit<BearerAccess, 'token'>,
    readonly tokens: readonly string[],
  ) {}
  async get(): Promise<BearerAccess> {
    const token = this.tokens[Math.min(this.invalidations, this.tokens.length - 1)] ?? '';
    return { ...this.base, token };
  }
  invalidate(): void {
    this.invalidations++;
  }
}

class StaticAccess implements BearerAccessSource {
  calls = 0;
  constructor(public access: BearerAccess) {}
  async get(): Promise<BearerAccess> {
    this.calls++;
    return this.access;
  }
}

describe('HttpsClusterReader', () => {
  let dir: string;
  let server: Server;
  let endpoint: string;
  let caData: string;
  let otherCaData: string;
  const script = new Map<string, Scripted>();
  const seen: SeenRequest[] = [];
  let connections = 0;
  const perSocket = new WeakMap<Socket, number>();
  const readers: HttpsClusterReader[] = [];
  /** When set, a request with another bearer token is answered 401 without a body. */
  let requiredToken: string | undefined;

  // The production budget (1.2 s) is too tight for a TLS handshake on a loaded 2-core CI
  // machine; only the timeout test asks for a short one.
  const reader = (access: BearerAccessSource, timeoutMs = 30_000) => {
    const made = new HttpsClusterReader({ access, timeoutMs });
    readers.push(made);
    return made;
  };
  const staticAccess = (token = 'token-1') => new StaticAccess({ endpoint, caData, token });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-reader-'));
    const tls = await ensureLocalTls(join(dir, 'tls'));
    // A second, unrelated CA: the server's certificate must not verify against it.
    otherCaData = Buffer.from((await ensureLocalTls(join(dir, 'other'))).ca).toString('base64');
    caData = Buffer.from(tls.ca).toString('base64');
    server = createServer({ cert: tls.cert, key: tls.key }, (req, res: ServerResponse) => {
      const earlier = perSocket.get(req.socket) ?? 0;
      perSocket.set(req.socket, earlier + 1);
      seen.push({
        method: req.method,
        path: req.url,
        headers: req.headers,
        earlierOnConnection: earlier,
      });
      if (requiredToken !== undefined && req.headers.authorization !== `Bearer ${requiredToken}`) {
        res.writeHead(401);
        res.end();
        return;
      }
      const answer = script.get(req.url ?? '') ?? {
        status: 404,
        body: failureStatus(404, 'NotFound', 'not found'),
      };
      if (answer === 'hang') return;
      if (answer === 'reset') {
        // What a frozen Lambda finds on thaw: the server dropped the idle kept-alive connection.
        // Only a reused connection is dropped, so the retry on a new one gets the pod.
        if (earlier > 0) {
          req.socket.destroy();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(POD));
        return;
      }
      const payload = answer.body === undefined ? '' : JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(payload);
    });
    server.on('secureConnection', () => {
      connections++;
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    endpoint = `https://127.0.0.1:${port}`;
  });

  afterEach(() => {
    for (const made of readers.splice(0)) made.close();
    server.closeAllConnections();
    script.clear();
    requiredToken = undefined;
    seen.length = 0;
    connections = 0;
  });

  afterAll(async () => {
    await new Promise<void>((done) => server.close(() => done()));
    await rm(dir, { recursive: true, force: true });
  });

  it("lists the cluster's ServiceCIDRs in one GET, and none on a cluster before 1.33 (404)", async () => {
    const cidr = { metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.100.0.0/16'] } };
    script.set('/apis/networking.k8s.io/v1/servicecidrs', { status: 200, body: { items: [cidr] } });
    expect(await reader(staticAccess()).listServiceCidrs()).toEqual([cidr]);
    script.clear();
    expect(await reader(staticAccess()).listServiceCidrs()).toBeUndefined();
  });

  it('reads a pod with the bearer token and returns it', async () => {
    script.set('/api/v1/namespaces/games/pods/gs-1', { status: 200, body: POD });

    const pod = await reader(staticAccess('secret-token')).getPod('games', 'gs-1');

    expect(pod).toEqual(POD);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe('GET');
    expect(seen[0]?.headers.authorization).toBe('Bearer secret-token');
    expect(seen[0]?.headers.accept).toBe('application/json');
  });

  it('reads a node and returns it', async () => {
    script.set('/api/v1/nodes/ip-10-0-1-2', { status: 200, body: NODE });

    expect(await reader(staticAccess()).getNode('ip-10-0-1-2')).toEqual(NODE);
  });

  it('escapes names in the path', async () => {
    await reader(staticAccess()).getPod('games', 'a/b?c');

    expect(seen[0]?.path).toBe('/api/v1/namespaces/games/pods/a%2Fb%3Fc');
  });

  it('returns undefined for a pod or node that does not exist', async () => {
    const read = reader(staticAccess());

    expect(await read.getPod('games', 'ghost')).toBeUndefined();
    expect(await read.getNode('ghost')).toBeUndefined();
  });

  it('throws an Unauthorized API error on 401 without a body', async () => {
    script.set('/api/v1/nodes/n1', { status: 401 });

    const error = await reader(staticAccess())
      .getNode('n1')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesApiError);
    expect(error).toMatchObject({
      statusCode: 401,
      reason: 'Unauthorized',
      retryable: false,
      target: { verb: 'get', resource: 'nodes/n1' },
    });
  });

  it('invalidates a refused token and reads once more with a new one', async () => {
    script.set('/api/v1/namespaces/games/pods/gs-1', { status: 200, body: POD });
    requiredToken = 'token-2';
    const access = new RotatingAccess({ endpoint, caData }, ['token-1', 'token-2']);

    expect(await reader(access).getPod('games', 'gs-1')).toEqual(POD);
    expect(access.invalidations).toBe(1);
    expect(seen.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it('throws the 401 when the new token is refused too, after one retry', async () => {
    requiredToken = 'token-3';
    const access = new RotatingAccess({ endpoint, caData }, ['token-1', 'token-2', 'token-3']);

    await expect(reader(access).getNode('n1')).rejects.toMatchObject({ statusCode: 401 });
    expect(access.invalidations).toBe(1);
    expect(seen).toHaveLength(2);
  });

  it('throws an API error carrying the Status on 403', async () => {
    const message = 'nodes "n1" is forbidden: User "berth" cannot get resource "nodes"';
    script.set('/api/v1/nodes/n1', { status: 403, body: failureStatus(403, 'Forbidden', message) });

    const error = await reader(staticAccess())
      .getNode('n1')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesApiError);
    expect(error).not.toBeInstanceOf(KubernetesNotFoundError);
    expect(error).toMatchObject({ statusCode: 403, reason: 'Forbidden', status: { message } });
    expect(String(error)).toContain(message);
  });

  it('throws a retryable API error on 500', async () => {
    script.set('/api/v1/namespaces/games/pods/gs-1', {
      status: 500,
      body: failureStatus(500, 'InternalError', 'etcd is sad'),
    });

    const error = await reader(staticAccess())
      .getPod('games', 'gs-1')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesApiError);
    expect(error).toMatchObject({
      statusCode: 500,
      reason: 'InternalError',
      retryable: true,
      target: { verb: 'get', resource: 'namespaces/games/pods/gs-1' },
    });
  });

  it('throws an API error when a 200 body is not JSON', async () => {
    script.set('/api/v1/nodes/n1', { status: 200, body: undefined });

    await expect(reader(staticAccess()).getNode('n1')).rejects.toMatchObject({
      name: 'KubernetesApiError',
      statusCode: 200,
    });
  });

  it('throws an unreachable error when the server does not answer in time', async () => {
    script.set('/api/v1/nodes/slow', 'hang');

    const error = await reader(staticAccess(), 100)
      .getNode('slow')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesUnreachableError);
    expect(error).toMatchObject({ statusCode: undefined, retryable: true });
    expect((error as Error).cause).toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('refuses a server whose certificate the cluster CA did not sign', async () => {
    script.set('/api/v1/nodes/n1', { status: 200, body: NODE });
    const access = new StaticAccess({ endpoint, caData: otherCaData, token: 'token-1' });

    const error = await reader(access)
      .getNode('n1')
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(KubernetesUnreachableError);
    expect(seen).toHaveLength(0);
  });

  it('throws an unreachable error when nothing listens', async () => {
    const closed = new StaticAccess({ endpoint: 'https://127.0.0.1:1', caData, token: 't' });

    await expect(reader(closed).getNode('n1')).rejects.toBeInstanceOf(KubernetesUnreachableError);
  });

  it('reuses one kept-alive connection across reads', async () => {
    script.set('/api/v1/nodes/n1', { status: 200, body: NODE });
    const read = reader(staticAccess());

    await read.getNode('n1');
    await read.getNode('n1');
    await read.getPod('games', 'ghost');

    expect(seen.map((r) => r.earlierOnConnection)).toEqual([0, 1, 2]);
    expect(connections).toBe(1);
  });

  it('sends a read again on a new connection when the kept-alive one was dropped', async () => {
    script.set('/api/v1/namespaces/games/pods/gs-1', 'reset');
    const read = reader(staticAccess());

    await read.getPod('games', 'gs-1');
    const pod = await read.getPod('games', 'gs-1');

    expect(pod).toEqual(POD);
    expect(seen.map((r) => r.earlierOnConnection)).toEqual([0, 1, 0]);
  });

  it('asks its source for the access on every read, so a renewed token is used', async () => {
    script.set('/api/v1/nodes/n1', { status: 200, body: NODE });
    const access = staticAccess('token-1');
    const read = reader(access);

    await read.getNode('n1');
    access.access = { ...access.access, token: 'token-2' };
    await read.getNode('n1');

    expect(seen.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect(access.calls).toBe(2);
  });

  it('reads through EKS credentials with a signed EKS token', async () => {
    script.set('/api/v1/nodes/n1', { status: 200, body: NODE });
    const credentials = new EksCredentials({
      cluster: 'games-prod',
      region: 'eu-west-1',
      credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
      lookup: { describe: async () => ({ endpoint, caData }) },
      now: () => Date.parse('2026-03-01T12:00:00Z'),
    });

    expect(await reader(credentials).getNode('n1')).toEqual(NODE);
    expect(seen[0]?.headers.authorization?.startsWith(`Bearer ${EKS_TOKEN_PREFIX}`)).toBe(true);
  });
});
