/**
 * The admission function's handler as Lambda runs it (its middy chain, its environment, its
 * module-scope set-up), serving two clusters from one stack: DynamoDB Local for the table,
 * Secrets Manager mocked for the two path secrets.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { functionUrlEvent, lambdaContext } from '../../bench/support/lambda-events.js';
import { review } from '../../sim/reviews.js';
import { gamePod } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';
import { lambdaEnvironment } from '../support/lambda-environment.js';

const SECRETS = {
  'games-a': 'AaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa',
  'games-b': 'BbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBb',
};
const arnOf = (cluster: string) =>
  `arn:aws:secretsmanager:eu-west-1:111122223333:secret:berth-${cluster}-webhook`;

const secretsManager = mockClient(SecretsManagerClient);
let environment: { restore: () => void };
type Handler = (event: unknown, context: Context) => Promise<{ statusCode: number; body: string }>;
let handler: Handler;
let tableName: string;

const context = lambdaContext('berth-admission', 1024);

/** A pod CREATE with one host port, sent to `path`; the review's answer. */
async function createPod(path: string, name: string) {
  const pod = gamePod([{ name: 'game', containerPort: 7777 }], { name });
  const answer = await handler(
    functionUrlEvent('POST', path, {
      body: review({ resource: 'pods', operation: 'CREATE', name, object: pod }),
    }),
    context,
  );
  return {
    statusCode: answer.statusCode,
    review: answer.body ? JSON.parse(answer.body) : undefined,
  };
}

beforeAll(async () => {
  ({ tableName } = await freshTable());
  // games-b's secret cannot be read during INIT nor at its first request: only games-b may
  // suffer for it.
  let refusals = 2;
  secretsManager.on(GetSecretValueCommand).callsFake(({ SecretId }: { SecretId: string }) => {
    const cluster = Object.keys(SECRETS).find((name) => arnOf(name) === SecretId);
    if (!cluster) throw new Error(`unknown secret ${SecretId}`);
    if (cluster === 'games-b' && refusals-- > 0) throw new Error('AccessDeniedException');
    return { SecretString: SECRETS[cluster as keyof typeof SECRETS] };
  });
  environment = lambdaEnvironment(tableName, ['games-a', 'games-b'], {
    BERTH_WEBHOOK_SECRETS: JSON.stringify({
      'games-a': arnOf('games-a'),
      'games-b': arnOf('games-b'),
    }),
  });
  // The suite shares one module graph per worker (vitest `isolate: false`): without a fresh
  // graph, a file that imported the handler earlier in this worker would have run its INIT,
  // with that file's environment and secrets, and this file's INIT would never run.
  vi.resetModules();
  ({ handler } = (await import('../../functions/admission/handler.js')) as unknown as {
    handler: Handler;
  });
}, 60_000);

afterAll(() => {
  secretsManager.restore();
  environment.restore();
});

describe('the admission function serving two clusters', () => {
  it("reads every cluster's secret during INIT; one it cannot read fails that cluster only, until read", async () => {
    const atInit = secretsManager.commandCalls(GetSecretValueCommand);
    expect(atInit.map((c) => c.args[0].input.SecretId)).toEqual([
      arnOf('games-a'),
      arnOf('games-b'),
    ]);
    const b = await createPod(`/clusters/games-b/admission/${SECRETS['games-b']}`, 'gs-0');
    expect(b.statusCode).toBe(500);
    const a = await createPod(`/clusters/games-a/admission/${SECRETS['games-a']}`, 'gs-0');
    expect(a.statusCode).toBe(200);
  });

  it("admits each cluster's pods at its own path, into its own keys", async () => {
    const a = await createPod(`/clusters/games-a/admission/${SECRETS['games-a']}`, 'gs-1');
    const b = await createPod(`/clusters/games-b/admission/${SECRETS['games-b']}`, 'gs-1');
    for (const answer of [a, b]) {
      expect(answer.statusCode).toBe(200);
      expect(answer.review.response.allowed).toBe(true);
    }
    // Each secret read until it could be, then kept: games-a's once, at INIT; games-b's at INIT,
    // at its refused request, and at this one.
    const asked = secretsManager
      .commandCalls(GetSecretValueCommand)
      .map((c) => c.args[0].input.SecretId);
    expect(asked).toEqual([arnOf('games-a'), arnOf('games-b'), arnOf('games-b'), arnOf('games-b')]);
  });

  it("answers a cluster's path with another's secret, or an unknown cluster, with a bare 404", async () => {
    const crossed = await createPod(`/clusters/games-a/admission/${SECRETS['games-b']}`, 'gs-2');
    const unknown = await createPod(`/clusters/games-c/admission/${SECRETS['games-a']}`, 'gs-2');
    const plain = await createPod(`/admission/${SECRETS['games-a']}`, 'gs-2');
    for (const answer of [crossed, unknown, plain]) {
      expect(answer).toEqual({ statusCode: 404, review: undefined });
    }
  });

  it("reports each cluster's own status: the same pod name holds a port in each", async () => {
    const status = async (cluster: keyof typeof SECRETS) => {
      const answer = await handler(
        functionUrlEvent('GET', `/clusters/${cluster}/v1/status/${SECRETS[cluster]}`),
        context,
      );
      return JSON.parse(answer.body) as { ranges: { kind: string; used: number }[] };
    };
    for (const cluster of ['games-a', 'games-b'] as const) {
      const hostPorts = (await status(cluster)).ranges.filter((r) => r.kind === 'hostPort');
      // games-a also admitted gs-0, while games-b could not read its secret.
      expect(hostPorts.map((r) => r.used)).toEqual([cluster === 'games-a' ? 2 : 1]);
    }
  });
});
