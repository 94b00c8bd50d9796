import middy from '@middy/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { lambdaContext } from '../../bench/support/lambda-events.js';
import { observability, requestLogging } from '../../shared/app/observability.js';

/** The JSON lines the handler's logger writes while `run` runs. */
async function linesOf(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const written: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  await run();
  vi.restoreAllMocks();
  return written
    .flatMap((text) => text.split('\n'))
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('requestLogging', () => {
  afterEach(() => vi.restoreAllMocks());

  it('tags each line with the request id only, and forgets the invocation’s keys after it', async () => {
    const { logger, forCluster } = observability('test');
    const handler = middy(async () => {
      forCluster('games');
      logger.info('decision');
    }).use(requestLogging(logger));
    const context = lambdaContext('berth-test-Function', 512);
    const lines = await linesOf(async () => {
      await handler({}, context);
      logger.info('between invocations');
    });
    expect(lines[0]).toMatchObject({ message: 'decision', request_id: context.awsRequestId });
    expect(lines[0]?.cluster).toBe('games');
    for (const key of ['function_arn', 'function_name', 'function_memory_size', 'cold_start']) {
      expect(lines[0]).not.toHaveProperty(key);
    }
    expect(lines[1]?.message).toBe('between invocations');
    expect(lines[1]).not.toHaveProperty('request_id');
    expect(lines[1]).not.toHaveProperty('cluster');
  });
});
