/**
 * The admission function's INIT when one cluster's secret read hangs (no route to Secrets
 * Manager, say): INIT waits a bounded time, and the other cluster is served.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { functionUrlEvent, lambdaContext } from '../../bench/support/lambda-events.js';
import { review } from '../../sim/reviews.js';
import { gamePod } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';
import { lambdaEnvironment } from '../support/lambda-environment.js';

const SECRET = 'AaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa';
const arnOf = (cluster: string) =>
  `arn:aws:secretsmanager:eu-west-1:111122223333:secret:berth-${cluster}-webhook`;
type Handler = (event: unknown, context: Context) => Promise<{ statusCode: number }>;

const secretsManager = mockClient(SecretsManagerClient);
let environment: { restore: () => void } | undefined;

afterAll(() => {
  secretsManager.restore();
  environment?.restore();
});

describe('the admission function whose INIT meets a secret read that hangs', () => {
  it("finishes INIT within its bound and serves the other cluster's reviews", async () => {
    const { tableName } = await freshTable();
    secretsManager
      .on(GetSecretValueCommand)
      .callsFake(({ SecretId }: { SecretId: string }) =>
        SecretId === arnOf('games-b')
          ? new Promise(() => {})
          : Promise.resolve({ SecretString: SECRET }),
      );
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
    const started = Date.now();
    const { handler } = (await import('../../functions/admission/handler.js')) as unknown as {
      handler: Handler;
    };
    expect(Date.now() - started).toBeLessThan(10_000);
    const pod = gamePod([{ name: 'game', containerPort: 7777 }], { name: 'gs-0' });
    const answer = await handler(
      functionUrlEvent('POST', `/clusters/games-a/admission/${SECRET}`, {
        body: review({ resource: 'pods', operation: 'CREATE', name: 'gs-0', object: pod }),
      }),
      lambdaContext('berth-admission', 1024),
    );
    expect(answer.statusCode).toBe(200);
  }, 30_000);
});
