/**
 * The settle function's handler as Lambda runs it, in a stack of two clusters: each task goes to
 * the cluster it names; a task for a cluster the stack does not serve, or naming none, is dropped
 * (a queue would otherwise deliver it again until its dead-letter queue); a look that fails is
 * reported for SQS to deliver again. EKS is mocked to refuse, so a look never reaches a cluster.
 */
import { randomBytes } from 'node:crypto';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SettleTask } from '../../shared/settle/task.js';
import { ownerNamingAllocationId } from '../../shared/vocabulary/allocation-id.js';
import { freshTable } from '../support/dynamo.js';
import { lambdaEnvironment } from '../support/lambda-environment.js';

const eks = mockClient(EKSClient);
let environment: { restore: () => void };
type Handler = (event: SQSEvent, context: unknown) => Promise<SQSBatchResponse>;
let handler: Handler;

const task = (cluster: string | undefined): SettleTask => ({
  id: ownerNamingAllocationId({ kind: 'Service', namespace: 'default', name: 'svc' }, (n) =>
    randomBytes(n),
  ),
  ...(cluster === undefined ? {} : { cluster }),
  reason: 'create',
  admittedAt: 0,
  attempt: 0,
  unrecorded: { namespace: 'default', name: 'svc', claims: [] },
});

const record = (messageId: string, body: string) =>
  ({ messageId, body, receiptHandle: 'r', attributes: {}, messageAttributes: {} }) as never;

beforeAll(async () => {
  const { tableName } = await freshTable();
  eks.on(DescribeClusterCommand).callsFake(({ name }: { name: string }) => {
    throw Object.assign(new Error(`no access to ${name}`), { name: 'AccessDeniedException' });
  });
  environment = lambdaEnvironment(tableName, ['games-a', 'games-b']);
  ({ handler } = (await import('../../functions/settle/handler.js')) as unknown as {
    handler: Handler;
  });
}, 60_000);

afterAll(() => {
  eks.restore();
  environment.restore();
});

describe('the settle function serving two clusters', () => {
  it('looks in the cluster each task names, and drops what no served cluster can take', async () => {
    const answer = await handler(
      {
        Records: [
          record('for-games-b', JSON.stringify(task('games-b'))),
          record('for-games-c', JSON.stringify(task('games-c'))),
          record('for-nobody', JSON.stringify(task(undefined))),
          record('not-a-task', '{"id":"x"}'),
        ],
      },
      { awsRequestId: 'req-1', functionName: 'berth-settle' },
    );
    // games-b's look reached for its cluster (refused here) and goes back to the queue; the
    // others can never be looked at, so they are not retried.
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: 'for-games-b' }]);
    const described = eks.commandCalls(DescribeClusterCommand).map((c) => c.args[0].input.name);
    expect(new Set(described)).toEqual(new Set(['games-b']));
  });
});
