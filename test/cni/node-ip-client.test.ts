/**
 * How the plugin reads berth's node IP answers that are not 200: which are worth kubelet's retry
 * (CNI error 11, try again later) and which are berth's final word.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CNI_ERROR, CniError } from '../../cni/errors.js';
import { NodeIpClient } from '../../cni/node-ip-client.js';

let status = 200;
const server = createServer((_request, response) => {
  response.statusCode = status;
  response.setHeader('content-type', 'application/json');
  if (status === 429) response.setHeader('retry-after', '1');
  response.end(JSON.stringify({ error: `answered ${status}` }));
});
let client: NodeIpClient;
const pod = { namespace: 'games', name: 'gs-1', containerId: 'c2' } as const;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new NodeIpClient(
    {
      endpoint: `http://127.0.0.1:${port}`,
      node: 'node-a',
      auth: { kind: 'none' },
      timeoutMs: 10_000,
      podGateway: undefined,
      dataDir: '/var/lib/berth-cni',
      routeTableBase: 1000,
      sourceRouting: true,
    },
    AbortSignal.timeout(10_000),
  );
});

afterAll(() => {
  server.close();
});

const codeOf = (failure: unknown) => (failure as CniError).code;

describe('NodeIpClient', () => {
  it("takes 429 (the pod's own requests raced) for try again later, on ADD and on DEL", async () => {
    status = 429;
    const added = await client.assign(pod).catch((error: unknown) => error);
    expect(added).toBeInstanceOf(CniError);
    expect(codeOf(added)).toBe(CNI_ERROR.tryAgainLater);
    // Never "held by another": that DEL would undo nothing and leave the address assigned.
    const deleted = await client.release('10.0.0.17', pod).catch((error: unknown) => error);
    expect(codeOf(deleted)).toBe(CNI_ERROR.tryAgainLater);
  });

  it('takes 503 for try again later, and 409 as berth’s answer', async () => {
    status = 503;
    expect(codeOf(await client.assign(pod).catch((e: unknown) => e))).toBe(CNI_ERROR.tryAgainLater);
    status = 409;
    expect(codeOf(await client.assign(pod).catch((e: unknown) => e))).toBe(CNI_ERROR.refused);
    expect(await client.release('10.0.0.17', pod)).toBe('held-by-another');
  });
});
