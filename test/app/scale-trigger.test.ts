/**
 * The scale-up trigger as the composition wires it: admissions in several containers count in one
 * item of the table, the scale function is asked once when they exhaust the slack a pass left,
 * and in AWS the ask is an asynchronous invoke the scale function's own parser accepts.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { lambdaScaleAsk, lambdaScaleAsks } from '../../shared/app/scale-ask.js';
import { scaleInput } from '../../shared/app/scale-pass.js';
import { parseConfig } from '../../shared/config/schema.js';
import { TRIGGER_DEBOUNCE_MS } from '../../shared/scale/trigger.js';
import { DynamoScaleTrigger } from '../../shared/store/dynamo-scale-trigger.js';
import { review } from '../../sim/reviews.js';
import { gamePod } from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';

const T0 = Date.UTC(2099, 0, 1);
const lambda = mockClient(LambdaClient);
afterEach(() => lambda.reset());

/** A game server's pod, and its CREATE and DELETE as the apiserver sends them. */
const pod = (name: string) =>
  gamePod([{ containerPort: 7777, protocol: 'UDP' }], { name, namespace: 'games' });
function create(name: string, dryRun = false) {
  return parseAdmissionReview(
    review({
      resource: 'pods',
      operation: 'CREATE',
      namespace: 'games',
      name,
      object: pod(name),
      dryRun,
    }),
  );
}
function remove(name: string) {
  return parseAdmissionReview(
    review({
      resource: 'pods',
      operation: 'DELETE',
      namespace: 'games',
      name,
      oldObject: pod(name),
    }),
  );
}

describe('admissions trigger scale-up passes', () => {
  it("asks once between containers when their game servers' net rise exhausts the slack", async () => {
    const { client, tableName } = await freshTable();
    let now = T0;
    const asked: number[] = [];
    const failures: unknown[] = [];
    const container = () =>
      createRuntime({
        config: parseConfig({ cluster: 'games' }),
        dynamo: client,
        tableName,
        now: () => now,
        scaleTrigger: {
          ask: async () => {
            asked.push(now);
          },
          failed: (error) => failures.push(error),
        },
      });
    const [a, b] = [container(), container()];
    // The last pass left 3 slots above the buffer.
    await new DynamoScaleTrigger({ client, tableName, cluster: 'games' }).passed(3, now);
    now += 20_000;
    // A dry run is no game server admitted; a DELETE gives its slot back.
    await a.admission.pods(create('gs-dry', true));
    await a.admission.pods(create('gs-1'));
    await b.admission.pods(create('gs-2'));
    await a.admission.pods(create('gs-3'));
    await b.admission.pods(remove('gs-1'));
    await b.admission.pods(create('gs-7'));
    expect(asked).toEqual([]);
    await b.admission.pods(create('gs-4'));
    expect(asked).toEqual([T0 + 20_000]);
    await a.admission.pods(create('gs-5'));
    expect(asked).toHaveLength(1);
    now += TRIGGER_DEBOUNCE_MS;
    await a.admission.pods(create('gs-6'));
    expect(asked).toEqual([T0 + 20_000, T0 + 20_000 + TRIGGER_DEBOUNCE_MS]);
    expect(failures).toEqual([]);
  });

  it('counts nothing when the scale pass is off', async () => {
    const { client, tableName } = await freshTable();
    const asked: string[] = [];
    const runtime = createRuntime({
      config: parseConfig({ cluster: 'games', scale: { intervalSeconds: 0 } }),
      dynamo: client,
      tableName,
      scaleTrigger: { ask: async () => void asked.push('asked'), failed: () => {} },
    });
    await runtime.admission.pods(create('gs-1'));
    expect(asked).toEqual([]);
    const state = await new DynamoScaleTrigger({ client, tableName, cluster: 'games' }).admitted(0);
    expect(state.admitted).toBe(0);
  });

  it('asks the scale function with an asynchronous invoke its parser reads', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const ask = lambdaScaleAsk(new LambdaClient({ region: 'eu-west-1' }), 'berth-scale', 'games-b');
    await ask();
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ FunctionName: 'berth-scale', InvocationType: 'Event' });
    const payload = JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array));
    expect(payload).toEqual({ cluster: 'games-b', triggered: true });
    expect(scaleInput.parse(payload)).toEqual({ cluster: 'games-b', triggered: true });
  });

  it('asks the function BERTH_SCALE_FUNCTION names, and nothing where none is named', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    expect(lambdaScaleAsks({ region: 'eu-west-1', scaleFunctionName: undefined })).toBeUndefined();
    const asks = lambdaScaleAsks({ region: 'eu-west-1', scaleFunctionName: 'berth-scale-fn' });
    await asks?.(undefined)();
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input?.FunctionName).toBe('berth-scale-fn');
    const payload = JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array));
    expect(payload).toEqual({ triggered: true });
  });
});
