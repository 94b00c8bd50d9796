/**
 * A node whose berth-cni hands its addresses out itself: berth gives it its set, assigns nothing
 * per pod there from then on, sizes the pool from the node's report, and takes an address back
 * only once the node returned it.
 */
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../cli/status-text.js';
import { NodeHandsOutError } from '../../shared/eni/errors.js';
import { handleNodeReport, handleNodeSet } from '../../shared/eni/handout/node-api.js';
import type { NodeReport, NodeSet } from '../../shared/eni/handout/wire.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { assignIp } from '../../shared/eni/service.js';
import { eniPoolStatus } from '../../shared/eni/status.js';
import { type EniWorld, eniWorld } from '../../sim/eni-world.js';

const MINUTE = 60_000;
const NODE = 'node-a';

function report(overrides: Partial<NodeReport> = {}): NodeReport {
  return { leased: [], rested: [], returned: [], refill: false, ...overrides };
}

const free = (set: NodeSet) => set.addresses.filter((a) => a.state === 'free');

async function world(eni: Record<string, unknown> = {}): Promise<EniWorld> {
  const w = eniWorld({ eni: { minIdle: 1, maxIdle: 3, cooldownSeconds: 0, ...eni } });
  w.addNode(NODE, 'c5.4xlarge');
  await runEniPass(w.deps);
  return w;
}

describe('a node that hands its addresses out itself', () => {
  it('gets its set, and berth assigns nothing per pod on it from then on', async () => {
    const w = await world();
    const set = await handleNodeSet(w.deps, NODE);
    expect(set.node).toBe(NODE);
    expect(free(set)).toHaveLength(3);
    expect(set.gateway).toBe('10.0.0.1');
    await expect(assignIp(w.deps, NODE, { namespace: 'g', pod: 'p' })).rejects.toBeInstanceOf(
      NodeHandsOutError,
    );
  });

  it('writes nothing when the node asks for its set again', async () => {
    const w = await world();
    await handleNodeSet(w.deps, NODE);
    const version = (await w.store.getPool(NODE))?.version;
    await handleNodeSet(w.deps, NODE);
    expect((await w.store.getPool(NODE))?.version).toBe(version);
  });

  it('shows in berth status who hands the pool out and what the node last reported', async () => {
    const w = await world();
    expect((await eniPoolStatus(w.deps))[0]).toMatchObject({ handout: 'berth', assigned: 0 });
    const set = await handleNodeSet(w.deps, NODE);
    const leased = free(set)
      .slice(0, 2)
      .map((a) => ({ ip: a.ip, since: w.clock.now }));
    await handleNodeReport(w.deps, NODE, report({ leased }));
    const [pool] = await eniPoolStatus(w.deps);
    expect(pool).toMatchObject({ handout: 'node', assigned: 2, reportedAt: w.clock.now });
    const text = formatStatus({ cluster: 'c', ranges: [], pools: pool ? [pool] : [] });
    expect(text).toContain(new Date(w.clock.now).toISOString());
    expect(text).toMatch(/HANDED OUT BY/);
  });

  it('shows an address a pod holds the earlier way as held, never free', async () => {
    const w = await world();
    const { ip } = await assignIp(w.deps, NODE, { namespace: 'g', pod: 'old' });
    const set = await handleNodeSet(w.deps, NODE);
    expect(set.addresses.find((a) => a.ip === ip)?.state).toBe('held');
  });

  it('grows the pool from what the node reports it holds, without a call per pod', async () => {
    const w = await world();
    const set = await handleNodeSet(w.deps, NODE);
    const leased = free(set).map((a) => ({ ip: a.ip, since: w.clock.now }));
    const calls = w.ec2.mutatingCalls();
    await handleNodeReport(w.deps, NODE, report({ leased }));
    w.clock.now += MINUTE;
    await runEniPass(w.deps);
    expect(w.ec2.mutatingCalls()).toBeGreaterThan(calls);
    const after = await handleNodeSet(w.deps, NODE);
    expect(free(after).filter((a) => !leased.some((l) => l.ip === a.ip)).length).toBeGreaterThan(0);
  });

  it('refills at once when the node says it has no free address', async () => {
    const w = await world();
    const set = await handleNodeSet(w.deps, NODE);
    const leased = free(set).map((a) => ({ ip: a.ip, since: w.clock.now }));
    const after = await handleNodeReport(w.deps, NODE, report({ leased, refill: true }));
    expect(free(after).length).toBeGreaterThan(leased.length);
  });

  it('takes an address back only once the node returned it, and never one it keeps', async () => {
    const w = await world({ maxIdle: 3 });
    const first = await handleNodeSet(w.deps, NODE);
    // The node leases all but one, then lets them go: the pool is then far above maxIdle.
    const leased = free(first).map((a) => ({ ip: a.ip, since: w.clock.now }));
    let set = await handleNodeReport(w.deps, NODE, report({ leased, refill: true }));
    set = await handleNodeReport(w.deps, NODE, report({ leased, refill: true }));
    const all = free(set);
    expect(all.length).toBeGreaterThan(6);
    const kept = all[0]?.ip ?? '';
    await handleNodeReport(
      w.deps,
      NODE,
      report({
        leased: [{ ip: kept, since: w.clock.now }],
        rested: all.slice(1).map((a) => ({ ip: a.ip, at: w.clock.now })),
      }),
    );
    w.clock.now += ENI_TIMINGS.trimIdleAfterMs + MINUTE;
    await runEniPass(w.deps);
    // Marked, not taken: EC2 was asked for nothing back yet.
    expect(w.ec2.counts.get('UnassignPrivateIpAddresses') ?? 0).toBe(0);
    set = await handleNodeSet(w.deps, NODE);
    const wanted = set.addresses.filter((a) => a.state === 'wanted');
    expect(wanted.length).toBeGreaterThan(0);
    expect(wanted.some((a) => a.ip === kept)).toBe(false);
    // The node returns all but one wanted address (a container took it meanwhile).
    const [stillHeld, ...empty] = wanted;
    await handleNodeReport(
      w.deps,
      NODE,
      report({
        leased: [
          { ip: kept, since: 0 },
          { ip: stillHeld?.ip ?? '', since: w.clock.now },
        ],
        returned: empty.map((a) => ({ ip: a.ip, createdAt: a.createdAt })),
      }),
    );
    w.clock.now += MINUTE;
    await runEniPass(w.deps);
    expect(w.ec2.counts.get('UnassignPrivateIpAddresses')).toBe(1);
    const left = new Set((await handleNodeSet(w.deps, NODE)).addresses.map((a) => a.ip));
    for (const a of empty) expect(left.has(a.ip)).toBe(false);
    expect(left.has(stillHeld?.ip ?? '')).toBe(true);
    expect(left.has(kept)).toBe(true);
  });

  it('ignores a return of an address it never asked back', async () => {
    const w = await world();
    const set = await handleNodeSet(w.deps, NODE);
    const returned = free(set).map((a) => ({ ip: a.ip, createdAt: a.createdAt }));
    await handleNodeReport(w.deps, NODE, report({ returned }));
    w.clock.now += ENI_TIMINGS.trimIdleAfterMs + MINUTE;
    await runEniPass(w.deps);
    expect(w.ec2.counts.get('UnassignPrivateIpAddresses') ?? 0).toBe(0);
  });

  it('refuses a report that is not one, naming the field', async () => {
    const w = await world();
    await expect(handleNodeReport(w.deps, NODE, { leased: 'x' })).rejects.toThrow(/leased/);
  });
});
