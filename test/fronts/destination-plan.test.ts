import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DestinationBatch,
  MAX_DESTINATIONS_PER_CALL,
} from '../../shared/fronts/accelerator.js';
import {
  type Cells,
  cellsOf,
  type DestinationPlan,
  planDestinations,
} from '../../shared/fronts/destination-plan.js';

const GROUP = 'arn:aws:globalaccelerator::1:accelerator/a/listener/l/endpoint-group/g';
const SUBNET = 'subnet-a';

const address = (host: number) => `10.0.${Math.floor(host / 256)}.${host % 256}`;
const cells = (list: readonly [number, number][]): Cells =>
  cellsOf(list.map(([host, port]) => ({ address: address(host), port })));

const plan = (wanted: Cells, allowed: Cells = new Map()) =>
  planDestinations({ endpointGroupArn: GROUP, endpointId: SUBNET, wanted, allowed });

/** The allowed cells after the calls, as Global Accelerator would keep them. */
function apply(allowed: Cells, result: DestinationPlan): Map<string, Set<number>> {
  const after = new Map([...allowed].map(([a, ports]) => [a, new Set(ports)]));
  for (const batch of result.allow) {
    for (const a of batch.addresses) {
      const ports = after.get(a) ?? new Set<number>();
      for (const p of batch.ports ?? []) ports.add(p);
      after.set(a, ports);
    }
  }
  for (const batch of result.deny) {
    for (const a of batch.addresses) {
      if (batch.ports === undefined) after.delete(a);
      else for (const p of batch.ports) after.get(a)?.delete(p);
    }
  }
  return after;
}

const within = (batch: DestinationBatch) =>
  batch.addresses.length >= 1 &&
  batch.addresses.length <= MAX_DESTINATIONS_PER_CALL &&
  (batch.ports === undefined ||
    (batch.ports.length >= 1 && batch.ports.length <= MAX_DESTINATIONS_PER_CALL));

const hosts = (cells: Cells, address: string) => (cells.get(address)?.size ?? 0) > 0;

/**
 * What a plan breaks, as lines (none for a good plan): plain checks rather than an expect each,
 * so a failing property shrinks in seconds.
 */
function violations(wanted: Cells, allowed: Cells, result: DestinationPlan): string[] {
  const found: string[] = [];
  const after = apply(allowed, result);
  const missing = [...wanted].flatMap(([a, ports]) =>
    [...ports].filter((p) => !(allowed.get(a)?.has(p) ?? false)).map((p) => [a, p] as const),
  );
  for (const [a, ports] of wanted) {
    for (const p of ports) if (!after.get(a)?.has(p)) found.push(`${a}:${p} wanted, not allowed`);
  }
  for (const batch of result.deny) {
    if (batch.ports !== undefined) found.push('a deny names ports');
    for (const a of batch.addresses) if (hosts(wanted, a)) found.push(`${a} denied, wanted`);
  }
  for (const [a, ports] of after) {
    if (ports.size > 0 && !hosts(wanted, a)) found.push(`${a} left allowed, nothing wanted`);
  }
  for (const batch of [...result.allow, ...result.deny]) {
    if (!within(batch)) found.push(`a call of ${batch.addresses.length} x ${batch.ports?.length}`);
    if (batch.endpointGroupArn !== GROUP || batch.endpointId !== SUBNET) found.push('elsewhere');
  }
  for (const batch of result.allow) {
    for (const a of batch.addresses) if (!hosts(wanted, a)) found.push(`${a} allowed, unwanted`);
  }
  const addresses = new Set(missing.map(([a]) => a)).size;
  const ports = new Set(missing.map(([, p]) => p)).size;
  const bound = Math.ceil(addresses / 100) * Math.ceil(ports / 100);
  if (result.allow.length > bound) found.push(`${result.allow.length} allows, bound ${bound}`);
  if (result.opened !== missing.length) found.push(`opened ${result.opened} of ${missing.length}`);
  const newlyAllowed = [...after].reduce(
    (sum, [a, p]) => sum + [...p].filter((port) => !(allowed.get(a)?.has(port) ?? false)).length,
    0,
  );
  if (result.opened + result.extraCells !== newlyAllowed) found.push('extra cells miscounted');
  if (result.calls !== result.allow.length + result.deny.length) found.push('calls miscounted');
  return found;
}

describe('planDestinations', () => {
  it('allows a burst of 100 game servers on five nodes in one call', () => {
    const wanted = cells(Array.from({ length: 100 }, (_, i) => [10 + (i % 5), 30_000 + i]));
    const result = plan(wanted);
    expect(result.allow).toHaveLength(1);
    expect(result.allow[0]).toEqual({
      endpointGroupArn: GROUP,
      endpointId: SUBNET,
      addresses: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.0.14'],
      ports: Array.from({ length: 100 }, (_, i) => 30_000 + i),
    });
    expect(result).toMatchObject({ calls: 1, opened: 100, extraCells: 400 });
  });

  it('splits more than 100 ports into calls of 100, an address only where it needs a port', () => {
    const wanted = cells([
      ...Array.from({ length: 100 }, (_, i): [number, number] => [10, 30_000 + i]),
      [11, 30_150],
    ]);
    const result = plan(wanted);
    expect(result.allow.map((b) => [b.addresses, b.ports?.length])).toEqual([
      [['10.0.0.10'], 100],
      [['10.0.0.11'], 1],
    ]);
    expect(result.extraCells).toBe(0);
  });

  it('groups addresses needing the same ports, 100 to a call', () => {
    const wanted = cells(
      Array.from({ length: 250 }, (_, i): [number, number] => [i, i % 2 === 0 ? 40_000 : 40_001]),
    );
    const result = plan(wanted);
    expect(result.allow).toHaveLength(3);
    expect(result.allow.map((b) => b.ports)).toEqual([[40_000], [40_000, 40_001], [40_001]]);
    expect(result.allow.map((b) => b.addresses.length)).toEqual([100, 100, 50]);
    // Only the mixed group's rectangle opens cells nobody wants: 100 x 2 - 100.
    expect(result).toMatchObject({ opened: 250, extraCells: 100 });
  });

  it('makes no call when every wanted cell is allowed and no address is empty', () => {
    const wanted = cells([[4, 30_000]]);
    expect(plan(wanted, cells([[4, 30_000]]))).toEqual({
      allow: [],
      deny: [],
      calls: 0,
      opened: 0,
      extraCells: 0,
    });
  });

  it('allows only the ports still missing, and counts allowed cells in a rectangle as no extra', () => {
    const wanted = cells([
      [4, 30_000],
      [4, 30_001],
      [5, 30_001],
    ]);
    const result = plan(wanted, cells([[4, 30_000]]));
    expect(result.allow).toEqual([
      {
        endpointGroupArn: GROUP,
        endpointId: SUBNET,
        addresses: ['10.0.0.4', '10.0.0.5'],
        ports: [30_001],
      },
    ]);
    expect(result).toMatchObject({ opened: 2, extraCells: 0 });
    const wider = plan(
      cells([
        [4, 30_000],
        [5, 30_001],
      ]),
      cells([[5, 30_000]]),
    );
    // 2 x 2 rectangle: 2 wanted, 1 allowed already, 1 extra.
    expect(wider).toMatchObject({ opened: 2, extraCells: 1 });
  });

  it('denies an address with nothing wanted whole, and leaves an address still hosting a game server alone', () => {
    const result = plan(
      cells([[4, 30_000]]),
      cells([
        [4, 30_000],
        [4, 30_005],
        [6, 30_002],
        [7, 30_003],
      ]),
    );
    expect(result.allow).toEqual([]);
    expect(result.deny).toEqual([
      { endpointGroupArn: GROUP, endpointId: SUBNET, addresses: ['10.0.0.6', '10.0.0.7'] },
    ]);
    expect(result.deny[0]).not.toHaveProperty('ports');
    expect(result.calls).toBe(1);
  });

  it('denies emptied addresses 100 to a call, in address order', () => {
    const allowed = cells(Array.from({ length: 250 }, (_, i): [number, number] => [i, 30_000]));
    const result = plan(new Map(), allowed);
    expect(result.deny.map((b) => b.addresses.length)).toEqual([100, 100, 50]);
    expect(result.deny[0]?.addresses.slice(0, 3)).toEqual(['10.0.0.0', '10.0.0.1', '10.0.0.2']);
    expect(result.deny[2]?.addresses.at(-1)).toBe('10.0.0.249');
  });

  it('neither denies nor allows an address whose sets are empty', () => {
    const result = plan(
      new Map([['10.0.0.4', new Set<number>()]]),
      new Map([['10.0.0.5', new Set<number>()]]),
    );
    expect(result.calls).toBe(0);
  });

  it('leaves every wanted cell allowed, denies no wanted cell, and keeps within the call bound', () => {
    // Just past 100 addresses and 100 ports: the chunking is exercised, and a failure shrinks
    // in seconds.
    const cellArb = fc.tuple(
      fc.integer({ min: 0, max: 119 }),
      fc.integer({ min: 30_000, max: 30_119 }),
    );
    // Small sets, and large ones (fast-check keeps arrays short unless told).
    const cellsArb = (most: number) =>
      fc.oneof(fc.array(cellArb), fc.array(cellArb, { maxLength: most, size: 'max' }));
    fc.assert(
      fc.property(cellsArb(400), cellsArb(200), (wantedList, allowedList) => {
        const wanted = cells(wantedList);
        const allowed = cells(allowedList);
        const found = violations(wanted, allowed, plan(wanted, allowed));
        // A plain throw: an expect's diff of a long list, made at every shrinking step, is slow.
        if (found.length > 0) throw new Error(found.slice(0, 5).join('; '));
      }),
      { numRuns: 200 },
    );
  });
});

describe('cellsOf', () => {
  it('gathers destinations by address, each port once', () => {
    expect(
      cellsOf([
        { address: '10.0.0.4', port: 1 },
        { address: '10.0.0.4', port: 1 },
        { address: '10.0.0.4', port: 2 },
        { address: '10.0.0.5', port: 1 },
      ]),
    ).toEqual(
      new Map([
        ['10.0.0.4', new Set([1, 2])],
        ['10.0.0.5', new Set([1])],
      ]),
    );
  });
});
