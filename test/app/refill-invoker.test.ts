import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { refillPoolEvent } from '../../shared/app/eni-pass.js';
import { LambdaRefillInvoker, refillInvokers } from '../../shared/app/refill-invoker.js';
import { ConfigError } from '../../shared/config/errors.js';
import { lambdaSettings } from '../../shared/config/load.js';

const lambda = mockClient(LambdaClient);
afterEach(() => lambda.reset());

const ENV = {
  BERTH_TABLE: 'berth',
  AWS_REGION: 'eu-west-1',
  BERTH_CONFIG: JSON.stringify({ cluster: 'games' }),
};

describe('LambdaRefillInvoker', () => {
  it('hands the ENI function a refill-pool event with an asynchronous invoke', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const invoker = new LambdaRefillInvoker({
      client: new LambdaClient({ region: 'eu-west-1' }),
      functionName: 'berth-games-eni',
      onError: () => {
        throw new Error('no error expected');
      },
    });
    await invoker.request('ip-10-0-1-7.ec2.internal');
    const calls = lambda.commandCalls(InvokeCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]?.args[0].input;
    expect(input).toMatchObject({ FunctionName: 'berth-games-eni', InvocationType: 'Event' });
    const payload = JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array));
    // The ENI function's own parser accepts exactly what the invoker sends.
    expect(refillPoolEvent.parse(payload)).toEqual({
      kind: 'refill-pool',
      node: 'ip-10-0-1-7.ec2.internal',
    });
  });

  it("names the node's cluster when the stack serves several, and the ENI function reads it", async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const invoker = new LambdaRefillInvoker({
      client: new LambdaClient({ region: 'eu-west-1' }),
      functionName: 'berth-eni',
      cluster: 'games-b',
      onError: () => {
        throw new Error('no error expected');
      },
    });
    await invoker.request('node-b1');
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    const payload = JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array));
    expect(refillPoolEvent.parse(payload)).toEqual({
      kind: 'refill-pool',
      cluster: 'games-b',
      node: 'node-b1',
    });
  });

  it('reports a refused hand-over to onError instead of failing the assign', async () => {
    lambda
      .on(InvokeCommand)
      .rejects(Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException' }));
    const errors: string[] = [];
    const invoker = new LambdaRefillInvoker({
      client: new LambdaClient({ region: 'eu-west-1', maxAttempts: 1 }),
      functionName: 'berth-games-eni',
      onError: (node, error) => errors.push(`${node}: ${(error as Error).name}`),
    });
    await expect(invoker.request('node-a')).resolves.toBeUndefined();
    expect(errors).toEqual(['node-a: TooManyRequestsException']);
  });

  it('is built from BERTH_ENI_FUNCTION, which the node IP function must have', () => {
    const settings = lambdaSettings({ ...ENV, BERTH_ENI_FUNCTION: 'berth-games-eni' });
    expect(settings.eniFunctionName).toBe('berth-games-eni');
    expect(refillInvokers(settings, () => {})('games')).toBeInstanceOf(LambdaRefillInvoker);
    expect(() => refillInvokers(lambdaSettings(ENV), () => {})).toThrow(ConfigError);
    expect(() => refillInvokers(lambdaSettings(ENV), () => {})).toThrow(/BERTH_ENI_FUNCTION/);
  });
});
