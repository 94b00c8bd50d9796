import { mkdtemp } from 'node:fs/promises';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { createHttpApi } from '../../shared/http/api.js';
import { type RunningServer, startServer } from '../../shared/local/server.js';
import { ensureLocalTls } from '../../shared/local/tls.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

let server: RunningServer;
let ca: string;
const errors: unknown[] = [];

/** POSTs or GETs over HTTPS, trusting only berth's local CA. */
function call(
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.url}${path}`,
      { method, agent: new Agent({ ca }), headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  const { client, tableName } = await freshTable();
  const config = parseConfig({ cluster: 'itest', serviceCIDRs: ['10.50.0.0/24'] });
  const runtime = createRuntime({ config, dynamo: client, tableName });
  const tls = await ensureLocalTls(join(await mkdtemp(join(tmpdir(), 'berth-tls-')), 'tls'));
  ca = tls.ca;
  server = await startServer({
    host: '127.0.0.1',
    port: 0,
    tls,
    handle: createHttpApi({
      admission: runtime.admission,
      healthy: () => runtime.healthy(),
      status: () => runtime.status(),
    }),
    onError: (error) => errors.push(error),
  });
}, 600_000);

afterAll(async () => {
  await server?.close();
});

describe('local server', () => {
  it('answers healthz over TLS signed by the local CA', async () => {
    expect(await call('GET', '/healthz')).toEqual({ status: 200, body: 'ok' });
  });

  it('answers a Service review with the same uid and a patch, and counts it in /v1/status', async () => {
    const body = review({
      resource: 'services',
      operation: 'CREATE',
      object: { metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }] } },
    });
    const answer = await call('POST', '/admission', JSON.stringify(body));
    expect(answer.status).toBe(200);
    const parsed = JSON.parse(answer.body);
    expect(parsed).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    expect(parsed.response.uid).toBe(body.request.uid);
    const patched = applyPatch(body.request.object, decodePatch(parsed.response.patch)) as {
      spec: { clusterIP: string };
    };
    expect(patched.spec.clusterIP).toMatch(/^10\.50\.0\.\d+$/);

    const status = JSON.parse((await call('GET', '/v1/status')).body);
    expect(status.ranges).toEqual(
      expect.arrayContaining([
        { name: '10.50.0.0/24', kind: 'clusterIP', size: 254, used: 1 },
        { name: '30000-32767', kind: 'nodePort', size: 2768, used: 0 },
        {
          name: 'default',
          kind: 'hostPort',
          size: 1001,
          used: 0,
          minUse: 0,
          maxUse: 0,
          largestFreeBlock: 1001,
        },
      ]),
    );
  });

  it('answers 400 with a JSON error for a body that is not an AdmissionReview', async () => {
    const notJson = await call('POST', '/admission', '{nope');
    expect(notJson.status).toBe(400);
    expect(JSON.parse(notJson.body).error).toMatch(/not JSON/);
    const wrongShape = await call(
      'POST',
      '/admission',
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }),
    );
    expect(wrongShape.status).toBe(400);
    expect(JSON.parse(wrongShape.body).error).toMatch(
      /^not an admission.k8s.io\/v1 AdmissionReview: apiVersion/,
    );
  });

  it('answers 404 for unknown paths and allows resources berth does not manage', async () => {
    expect((await call('GET', '/nope')).status).toBe(404);
    const body = review({
      resource: 'configmaps',
      operation: 'CREATE',
      object: { metadata: { name: 'x' } },
    });
    const answer = JSON.parse((await call('POST', '/admission', JSON.stringify(body))).body);
    expect(answer.response).toEqual({ uid: body.request.uid, allowed: true });
    expect(errors).toEqual([]);
  });
});

describe('createHttpApi with a secret path', () => {
  it('serves admission only under the exact secret', async () => {
    const api = createHttpApi({
      admission: {
        services: async () => ({ allowed: true }),
        pods: async () => ({ allowed: true }),
        podBinding: async () => ({ allowed: true }),
      },
      healthy: async () => true,
      status: async () => ({}),
      pathSecret: 's3cr3t-path',
    });
    const body = JSON.stringify(review({ resource: 'services', operation: 'DELETE' }));
    expect((await api({ method: 'POST', path: '/admission/s3cr3t-path', body })).statusCode).toBe(
      200,
    );
    expect((await api({ method: 'POST', path: '/admission/s3cr3t-pat', body })).statusCode).toBe(
      404,
    );
    expect((await api({ method: 'POST', path: '/admission', body })).statusCode).toBe(404);
  });

  it('answers nothing without the secret: health and status included', async () => {
    const api = createHttpApi({
      healthy: async () => true,
      status: async () => ({ ranges: [] }),
      pathSecret: 's3cr3t-path',
    });
    for (const path of ['/healthz', '/v1/status', '/', '/healthz/wrong', '/s3cr3t-path']) {
      const response = await api({ method: 'GET', path, body: undefined });
      expect(response).toEqual({ statusCode: 404, headers: {}, body: '' });
    }
    expect((await api({ method: 'GET', path: '/healthz/s3cr3t-path', body: undefined })).body).toBe(
      'ok',
    );
    const status = await api({ method: 'GET', path: '/v1/status/s3cr3t-path', body: undefined });
    expect(JSON.parse(status.body)).toEqual({ ranges: [] });
  });
});

describe('the server under bodies it will not take', () => {
  it('answers every body over 3 MiB with 413, read to its end, so uploads on one connection are never reset', async () => {
    const plain = await startServer({
      host: '127.0.0.1',
      port: 0,
      handle: async () => ({ statusCode: 200, headers: {}, body: '{}' }),
      onError: (error) => errors.push(error),
    });
    // One kept-alive connection, as the apiserver's client keeps one.
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const huge = 'x'.repeat(5 * 1024 * 1024);
    const post = () =>
      new Promise<string>((resolve) => {
        const req = httpRequest(`${plain.url}/admission`, { method: 'POST', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(String(res.statusCode)));
        });
        req.on('error', (error) => resolve((error as NodeJS.ErrnoException).code ?? 'error'));
        req.end(huge);
      });
    try {
      const answers: string[] = [];
      for (let i = 0; i < 6; i++) answers.push(await post());
      expect(answers).toEqual(Array(6).fill('413'));
    } finally {
      agent.destroy();
      await plain.close();
    }
  });
});

describe('the server refuses what an apiserver never sends', () => {
  /** A plain server whose handler records each request it is given. */
  async function recording() {
    const handled: string[] = [];
    const faults: unknown[] = [];
    const plain = await startServer({
      host: '127.0.0.1',
      port: 0,
      handle: async (request) => {
        handled.push(`${request.method} ${request.path}`);
        return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
      },
      onError: (error) => faults.push(error),
    });
    return { plain, handled, faults };
  }

  it('answers a POST whose Content-Type is not JSON 415, and one with a browser Origin 403, handling neither', async () => {
    const { plain, handled } = await recording();
    const body = JSON.stringify(review({ resource: 'pods', operation: 'CREATE', object: {} }));
    const send = (path: string, method: string, headers: Record<string, string>) =>
      fetch(`${plain.url}${path}`, {
        method,
        headers,
        ...(method === 'POST' ? { body } : {}),
      }).then(async (response) => ({ status: response.status, text: await response.text() }));
    try {
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
      ]) {
        const answer = await send('/admission', 'POST', type ? { 'content-type': type } : {});
        expect(answer.status, type).toBe(415);
        expect(JSON.parse(answer.text).error).toMatch(/Content-Type/);
      }
      for (const [path, method] of [
        ['/admission', 'POST'],
        ['/v1/nodes/n/ips', 'POST'],
        ['/v1/nodes/n/ips/10.0.0.5', 'DELETE'],
        ['/v1/status', 'GET'],
      ] as const) {
        const answer = await send(path, method, {
          'content-type': 'application/json',
          origin: 'https://attacker.example',
        });
        expect(answer.status, `${method} ${path}`).toBe(403);
        expect(JSON.parse(answer.text).error).toMatch(/Origin/);
      }
      expect(handled).toEqual([]);
      const json = await send('/admission', 'POST', {
        'content-type': 'application/json; charset=utf-8',
      });
      expect(json.status).toBe(200);
      expect(handled).toEqual(['POST /admission']);
    } finally {
      await plain.close();
    }
  });

  it('takes a client that hangs up mid-body as no fault: nothing logged, nothing handled', async () => {
    const { plain, handled, faults } = await recording();
    const { port } = new URL(plain.url);
    try {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            'POST /admission HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"apiVersion":',
            () =>
              setTimeout(() => {
                socket.destroy();
                resolve();
              }, 100),
          );
        });
        socket.on('error', reject);
      });
      // Give the server time to see the hang-up.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(faults).toEqual([]);
      expect(handled).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
