/**
 * A DynamoDB endpoint that accepts connections and never answers: a command gives up after one
 * request timeout, exit 3, naming the endpoint and the fix, instead of waiting on it.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { captureOutput } from '../support/capture.js';

/** A TCP server that takes every connection and never writes a byte; counts the connections. */
async function silentServer(): Promise<{
  endpoint: string;
  connections: () => number;
  close: () => void;
}> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    connections: () => sockets.length,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** A kubeconfig whose API server is never reached: the store is opened first. */
async function kubeconfig(): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'berth-silent-')), 'config');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: games',
      'clusters: [{ name: games, cluster: { server: "https://127.0.0.1:1" } }]',
      'contexts: [{ name: games, context: { cluster: games, user: me } }]',
      'users: [{ name: me, user: { token: t } }]',
    ].join('\n'),
  );
  return file;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('a DynamoDB endpoint that never answers', () => {
  // Generous: bounded is the point, not fast. The old behaviour (three attempts) fails on the
  // connection count, whatever the machine's speed.
  const BOUND_MS = 90_000;

  it.each([
    ['status', async () => ['status']],
    ['repair --once', async () => ['repair', '--once', '--kubeconfig', await kubeconfig()]],
  ])(
    '%s exits 3 after one unanswered request, naming the endpoint and the fix',
    async (_, args) => {
      const silent = await silentServer();
      try {
        const io = captureOutput();
        expect(await main([...(await args()), '--dynamodb-endpoint', silent.endpoint])).toBe(3);
        expect(io.err()).toBe(
          `berth: DynamoDB at ${silent.endpoint} did not answer (no answer in time): start it, or fix --dynamodb-endpoint (without the flag, berth uses or starts the DynamoDB Local of --data-dir)\n`,
        );
        // One attempt: the probe's, not retried; nothing else was sent there.
        expect(silent.connections()).toBe(1);
      } finally {
        silent.close();
      }
    },
    BOUND_MS,
  );

  it(
    'status --table (DynamoDB in AWS) exits 3 after one unanswered request, naming the Region and the fix',
    async () => {
      const silent = await silentServer();
      // The SDK's own setting for a service's endpoint: the path to "AWS" runs into the silent server.
      vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', silent.endpoint);
      vi.stubEnv('AWS_ACCESS_KEY_ID', 'berth');
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'berth-test');
      try {
        const io = captureOutput();
        expect(await main(['status', '--table', 'berth', '--region', 'eu-west-1'])).toBe(3);
        expect(io.err()).toBe(
          'berth: DynamoDB in eu-west-1 did not answer (no answer in time): check the network path to it (a proxy, a VPC endpoint, a firewall) and --region, or pass --dynamodb-endpoint\n',
        );
        expect(silent.connections()).toBe(1);
      } finally {
        silent.close();
      }
    },
    BOUND_MS,
  );
});
