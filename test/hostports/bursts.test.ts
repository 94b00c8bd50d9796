/**
 * Bursts of pod CREATEs where every pod can only get the ports it gets: a range of one port, or
 * a pod taking every port of its range. Host ports are use counts (contract section 4: allocation
 * never fails for lack of ports), so such a burst is all allowed, whatever its concurrency, and
 * the counts come out exact. Against DynamoDB Local, through several processes' handlers.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { podAdmission } from '../../shared/admission/pods.js';
import { parseConfig } from '../../shared/config/schema.js';
import { HostPortConflictError } from '../../shared/hostports/errors.js';
import { ANY_COUNT, levelKey } from '../../shared/hostports/store.js';
import { CapacityMeter } from '../../shared/store/capacity.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { freshTable } from '../support/dynamo.js';
import { gamePod, podRequest } from './support.js';

const BURST = 60;

async function burst(hostPortRanges: Record<string, string>, ports: readonly unknown[]) {
  const { client, tableName } = await freshTable();
  const store = new DynamoHostPortStore({
    client,
    tableName,
    cluster: `burst${Math.random()}`,
    meter: new CapacityMeter(),
  });
  const config = parseConfig({ hostPortRanges });
  // Three processes (Lambda containers), each with its own view of the counts.
  const processes = Array.from({ length: 3 }, () =>
    podAdmission({
      config,
      store,
      random: Math.random,
      randomBytes: (size) => new Uint8Array(randomBytes(size)),
      now: () => 1_700_000_000_000,
    }),
  );
  const verdicts = await Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      (processes[i % processes.length] ?? processes[0])?.(
        podRequest(gamePod(ports, { name: `gs-${i}` })),
      ),
    ),
  );
  let records = 0;
  for await (const _ of store.listRecords()) records++;
  return { verdicts, store, config, records };
}

const refusals = (verdicts: readonly ({ allowed: boolean } | undefined)[]) =>
  verdicts.filter((v) => !v?.allowed);

describe('a burst of CREATEs that every pod can only answer one way', () => {
  it('allows 60 at once in a one-port range, and counts 60 uses of that port', async () => {
    const { verdicts, store, records } = await burst({ default: '7000-7000' }, [
      { name: 'game', containerPort: 7777 },
    ]);
    expect(refusals(verdicts)).toEqual([]);
    const { counts } = await store.readCounts({ name: 'default', first: 7000, size: 1 });
    expect(counts).toEqual([BURST]);
    expect(records).toBe(BURST);
  });

  it('allows 60 at once whose pods each take every port of a two-port range', async () => {
    const { verdicts, store } = await burst({ default: '7000-7001' }, [
      { name: 'a', containerPort: 7777 },
      { name: 'b', containerPort: 7778 },
    ]);
    expect(refusals(verdicts)).toEqual([]);
    const { counts } = await store.readCounts({ name: 'default', first: 7000, size: 2 });
    expect(counts).toEqual([BURST, BURST]);
  });

  it('allows 60 at once of a TCP and a UDP port sharing a one-port range', async () => {
    const { verdicts, store } = await burst({ default: '7000-7000' }, [
      { name: 'a', containerPort: 7777, protocol: 'TCP' },
      { name: 'b', containerPort: 7778, protocol: 'UDP' },
    ]);
    expect(refusals(verdicts)).toEqual([]);
    const { counts } = await store.readCounts({ name: 'default', first: 7000, size: 1 });
    expect(counts).toEqual([2 * BURST]);
  });
});

describe('a use at ANY_COUNT', () => {
  it('lands at whatever count, and never on a port held outside berth', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoHostPortStore({ client, tableName, cluster: `any${Math.random()}` });
    const port = (n: number) => ({
      name: 'p',
      range: 'default',
      port: n,
      protocol: 'UDP' as const,
    });
    const any = (n: number) => new Map([[levelKey('default', n), { level: ANY_COUNT }]]);
    for (let i = 0; i < 3; i++) await store.addUses([port(7000)], any(7000));
    const range = { name: 'default', first: 7000, size: 2 };
    expect((await store.readCounts(range)).counts).toEqual([3, 0]);
    await store.markForeign('default', 7001, true);
    await expect(store.addUses([port(7001)], any(7001))).rejects.toBeInstanceOf(
      HostPortConflictError,
    );
    expect((await store.readCounts(range)).counts).toEqual([3, 0]);
  });
});
