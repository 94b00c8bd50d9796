import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
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

  it('refuses a message that is not a settle task, naming the field', () => {
    expect(() =>
      parseSettleTask('{"id":"x","reason":"create","admittedAt":1,"attempt":0}'),
    ).toThrow(/id: not an allocation id/);
    expect(() => parseSettleTask('nope')).toThrow(/body is not JSON/);
  });
});
