import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessFrontQueue, type QueueTimers } from '../../shared/fronts/in-process-queue.js';
import { SqsFrontQueue } from '../../shared/fronts/sqs-queue.js';
import type { FrontWork, FrontWorkOutcome, ReleaseWork } from '../../shared/fronts/work.js';
import {
  frontWorkBody,
  MalformedFrontWorkError,
  parseFrontWork,
} from '../../shared/fronts/work-message.js';

const release: ReleaseWork = {
  kind: 'release',
  cluster: 'prod',
  namespace: 'games',
  pod: 'gs-1',
  allocationId: 'abcdefghijklmnopqrst',
  admittedAt: 5,
  attempt: 0,
};

/** Timers on a hand-driven clock. */
function manualTimers() {
  let now = 0;
  const due: { at: number; run: () => void }[] = [];
  const timers: QueueTimers = {
    setTimeout: (run, ms) => {
      const timer = { at: now + ms, run };
      due.push(timer);
      return timer;
    },
    clearTimeout: (timer) => {
      due.splice(due.indexOf(timer as (typeof due)[number]), 1);
    },
  };
  const advance = async (ms: number) => {
    const until = now + ms;
    for (;;) {
      due.sort((a, b) => a.at - b.at);
      const next = due[0];
      if (next === undefined || next.at > until) break;
      due.shift();
      now = next.at;
      next.run();
      await new Promise((resolve) => setImmediate(resolve));
    }
    now = until;
  };
  return { timers, advance };
}

describe('front work messages', () => {
  it('round-trips bind and release work', () => {
    const bind: FrontWork = {
      kind: 'bind',
      cluster: 'prod',
      namespace: 'games',
      pod: 'gs-1',
      allocationId: 'abcdefghijklmnopqrst',
      node: 'node-a',
      nodeAddress: '10.0.1.20',
      ports: [{ name: 'game', front: 'nlb', protocol: 'TCPUDP', hostPort: 7100 }],
      boundAt: 1,
    };
    for (const work of [bind, release]) expect(parseFrontWork(frontWorkBody(work))).toEqual(work);
  });

  it('refuses a body that is not front work, naming each problem', () => {
    expect(() => parseFrontWork('nope')).toThrow(MalformedFrontWorkError);
    expect(() =>
      parseFrontWork(JSON.stringify({ ...release, allocationId: 'x', extra: 1 })),
    ).toThrow(/allocationId: not an allocation id.*extra|extra.*allocationId/);
    expect(() => parseFrontWork(JSON.stringify({ ...release, kind: 'destroy' }))).toThrow(
      MalformedFrontWorkError,
    );
  });
});

describe('the in-process fronts queue', () => {
  it('hands work due within the window over as one batch', async () => {
    const { timers, advance } = manualTimers();
    const batches: FrontWork[][] = [];
    const queue = new InProcessFrontQueue({
      handle: async (batch) => {
        batches.push([...batch]);
        return batch.map((): FrontWorkOutcome => ({ kind: 'released' }));
      },
      timers,
      windowMs: 1_000,
    });
    await queue.submit({ ...release, pod: 'a' }, 0);
    await advance(300);
    await queue.submit({ ...release, pod: 'b' }, 0);
    // The window opened when a was gathered, at 300 ms, and closes at 1,300 ms.
    await advance(1_100);
    await queue.submit({ ...release, pod: 'c' }, 0);
    await advance(1_000);
    expect(batches.map((batch) => batch.map((work) => work.pod))).toEqual([['a', 'b'], ['c']]);
  });

  it('waits out a delay, and tries a failed item again a bounded number of times', async () => {
    const { timers, advance } = manualTimers();
    let tries = 0;
    const queue = new InProcessFrontQueue({
      handle: async (batch) => {
        tries += batch.length;
        return batch.map((): FrontWorkOutcome => ({ kind: 'failed', error: new Error('down') }));
      },
      timers,
    });
    await queue.submit(release, 5);
    await advance(4_000);
    expect(tries).toBe(0);
    for (let i = 0; i < 20; i++) await advance(6_000);
    expect(tries).toBe(5);
  });
});

describe('the SQS fronts queue', () => {
  const sqs = mockClient(SQSClient);
  afterEach(() => sqs.reset());

  it('sends the work as a message body that parses back, with its delay', async () => {
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const url = 'https://sqs.eu-west-1.amazonaws.com/111122223333/berth-fronts';
    await new SqsFrontQueue(new SQSClient({ region: 'eu-west-1' }), url).submit(release, 2.5);
    const [input] = sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
    expect(input).toMatchObject({ QueueUrl: url, DelaySeconds: 3 });
    expect(parseFrontWork(input?.MessageBody ?? '')).toEqual(release);
  });
});
