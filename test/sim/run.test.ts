import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { runSim, SIM_DEFAULTS } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { freshTable } from '../support/dynamo.js';

async function stack() {
  const { client, tableName } = await freshTable();
  const runtime = createRuntime({
    config: parseConfig({ cluster: 'sim' }),
    dynamo: client,
    tableName,
  });
  const internalFaults: unknown[] = [];
  const sim = await startSimServer({
    runtime,
    dynamo: client,
    tableName,
    listen: { host: '127.0.0.1', port: 0 },
    onError: (error) => internalFaults.push(error),
  });
  return { runtime, sim, internalFaults };
}

const SHORT = {
  ...SIM_DEFAULTS,
  hours: 0.25,
  speed: 1_000_000,
  nodes: 4,
  sessionsPerMinute: 6,
  services: 6,
  serviceChurnMinutes: 3,
  checkEvery: 25,
};

describe('berth sim', { timeout: 120_000 }, () => {
  it('runs a day of waves through the real server with every invariant held', async () => {
    const { sim, internalFaults } = await stack();
    try {
      const report = await runSim(sim.target, SHORT);
      expect(report.violations).toEqual([]);
      expect(report.sessions).toBeGreaterThan(40);
      expect(report.gameServersAdmitted).toBe(report.sessions);
      expect(report.bindings).toBe(report.gameServersAdmitted);
      expect(report.servicesDeleted).toBeGreaterThan(0);
      expect(report.checks).toBeGreaterThan(3);
      // berth's repair pass, reading the stand-in's Kubernetes API, found the store in order.
      expect(report.repairPasses).toBeGreaterThanOrEqual(4);
      expect(report.repairFindings).toBe(0);
      expect(report.reachedHours).toBe(0.25);
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });

  it("loses the failed node's game servers and keeps every invariant when a node fails", async () => {
    const { sim, internalFaults } = await stack();
    try {
      const report = await runSim(sim.target, { ...SHORT, scenario: 'node-failure' });
      expect(report.violations).toEqual([]);
      expect(report.gameServersLost).toBeGreaterThan(0);
      // Three nodes left for the rest of the day.
      expect(report.nodeHours).toBeLessThan(SHORT.nodes * SHORT.hours);
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });

  it('stops at the first violation with its evidence: a host port count berth got wrong', async () => {
    const { runtime, sim } = await stack();
    try {
      const report = await runSim(sim.target, SHORT, {
        // A use no pod holds, as a lost release would leave it.
        afterEvent: async (index) => {
          if (index !== 30) return;
          await runtime.hostPortStore.addUses([
            { name: 'lost', range: 'default', port: 7500, protocol: 'UDP' },
          ]);
        },
      });
      // One use more than the live pods holding the port (which may hold it too).
      expect(report.violations).toHaveLength(1);
      const [, counted, live] =
        /^host port 7500: berth counts (\d+) uses, (\d+) live pods hold it$/.exec(
          report.violations[0] ?? '',
        ) ?? [];
      expect(Number(counted)).toBe(Number(live) + 1);
      expect(report.reachedHours).toBeLessThan(0.25);
    } finally {
      await sim.close();
    }
  });
});
