import { describe, expect, it } from 'vitest';
import { createHttpApi } from '../../shared/http/api.js';
import type { HttpRequest } from '../../shared/http/exchange.js';

/** An API behind a path secret, as a function URL serves it, recording what reaches its routes. */
function behindSecret() {
  const reached: string[] = [];
  const api = createHttpApi({
    healthy: async () => {
      reached.push('healthz');
      return true;
    },
    status: async () => {
      reached.push('status');
      return { ranges: [] };
    },
    pathSecret: 's3cr3t',
  });
  return { api, reached };
}

const request = (overrides: Partial<HttpRequest>): HttpRequest => ({
  method: 'GET',
  path: '/healthz/s3cr3t',
  body: undefined,
  ...overrides,
});

describe('the API behind a function URL refuses what an apiserver never sends', () => {
  it('answers a browser Origin 403 and a POST that is not JSON 415, reaching no route', async () => {
    const { api, reached } = behindSecret();
    const fromPage = await api(
      request({ path: '/v1/status/s3cr3t', headers: { origin: 'https://page.example' } }),
    );
    expect(fromPage.statusCode).toBe(403);
    expect(JSON.parse(fromPage.body).error).toMatch(/Origin/);
    const textPlain = await api(
      request({
        method: 'POST',
        path: '/admission/s3cr3t',
        body: '{}',
        headers: { 'content-type': 'text/plain' },
      }),
    );
    expect(textPlain.statusCode).toBe(415);
    expect(JSON.parse(textPlain.body).error).toMatch(/Content-Type "text\/plain" is not JSON/);
    expect(reached).toEqual([]);
    const plain = await api(request({ headers: {} }));
    expect(plain.statusCode).toBe(200);
    expect(reached).toEqual(['healthz']);
  });

  it('says nothing of it to a caller without the secret: an empty 404', async () => {
    const { api } = behindSecret();
    const answer = await api(
      request({ path: '/v1/status/wrong', headers: { origin: 'https://page.example' } }),
    );
    expect(answer).toEqual({ statusCode: 404, headers: {}, body: '' });
  });
});
