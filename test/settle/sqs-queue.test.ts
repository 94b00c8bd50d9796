import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { taggedWithCluster } from '../../shared/settle/settler.js';
import { SqsSettleQueue } from '../../shared/settle/sqs-queue.js';
import { parseSettleTask, type SettleTask } from '../../shared/settle/task.js';

const sqs = mockClient(SQSClient);
const task: SettleTask = {
  id: 'abcdefghijklmnopqrst',
  reason: 'create',
  admittedAt: 1,
  attempt: 2,
};
const URL = 'https://sqs.eu-west-1.amazonaws.com/111122223333/berth-settle';

afterEach(() => {
  sqs.reset();
});

describe('SqsSettleQueue', () => {
  it('sends the task as JSON with its delay, within SQS limits, and the message parses back', async () => {
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const queue = new SqsSettleQueue(new SQSClient({ region: 'eu-west-1' }), URL);
    await queue.submit(task, 4.2);
    await queue.submit(task, 3600);
    const calls = sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
    expect(calls.map((input) => [input.QueueUrl, input.DelaySeconds])).toEqual([
      [URL, 5],
      [URL, 900],
    ]);
    expect(parseSettleTask(calls[0]?.MessageBody ?? '')).toEqual(task);
  });

  it('tags each task with its cluster where one queue serves several, and the tag parses back', async () => {
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const queue = new SqsSettleQueue(new SQSClient({ region: 'eu-west-1' }), URL);
    await taggedWithCluster(queue, 'games-b').submit(task, 5);
    const body = sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageBody ?? '';
    expect(parseSettleTask(body)).toEqual({ ...task, cluster: 'games-b' });
    expect(() => parseSettleTask(JSON.stringify({ ...task, cluster: '' }))).toThrow(/cluster/);
  });

  it('carries the claims of an IPv6 /64 past 2^53 exactly, and keeps small offsets numbers', async () => {
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const queue = new SqsSettleQueue(new SQSClient({ region: 'eu-west-1' }), URL);
    const range = 'clusterIP#fd00::/64';
    const claims = [
      { slot: 'clusterIP/IPv6', range, offset: (1n << 64n) - 2n },
      { slot: 'nodePort/http', range: 'nodePort#30000-32767', offset: 1234 },
    ];
    const wide: SettleTask = { ...task, unrecorded: { namespace: 'ns', name: 'svc', claims } };
    await queue.submit(wide, 5);
    const body = sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageBody ?? '';
    expect(body).toContain('"offset":"18446744073709551614"');
    expect(parseSettleTask(body)).toEqual(wide);
  });

  it('refuses a message that is not a settle task, naming the field', () => {
    expect(() =>
      parseSettleTask('{"id":"x","reason":"create","admittedAt":1,"attempt":0}'),
    ).toThrow(/id: not an allocation id/);
    expect(() => parseSettleTask('nope')).toThrow(/body is not JSON/);
  });
});
