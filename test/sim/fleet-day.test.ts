/**
 * The `agones-fleet` day of `berth sim`: an Agones fleet with a Ready buffer through the real
 * server, berth's scale pass draining its nodes (deleting their Ready GameServers, which the
 * fleet makes again), and never interrupting an Allocated one.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { simConfig } from '../../sim/config.js';
import { fleetReadyBuffer, runSim, SIM_DEFAULTS } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { freshTable } from '../support/dynamo.js';

const DAY = {
  ...SIM_DEFAULTS,
  scenario: 'agones-fleet' as const,
  hours: 0.5,
  speed: 1_000_000,
  nodes: 8,
  sessionsPerMinute: 6,
  services: 2,
  serviceChurnMinutes: 10,
  checkEvery: 50,
};

describe('berth sim --scenario agones-fleet', { timeout: 300_000 }, () => {
  it('serves every allocation and drains nodes of the fleet without interrupting an Allocated one', async () => {
    const { client, tableName } = await freshTable();
    const internalFaults: unknown[] = [];
    const sim = await startSimServer({
      config: simConfig(parseConfig({ cluster: 'sim' }), DAY),
      dynamo: client,
      tableName,
      listen: { host: '127.0.0.1', port: 0 },
      onError: (error) => internalFaults.push(error),
    });
    try {
      const report = await runSim(sim.target, DAY);
      expect(report.violations).toEqual([]);
      expect(report.fleet?.allocations).toBe(report.sessions);
      expect(report.fleet?.allocatedInterrupted).toBe(0);
      expect(report.gameServersInterrupted).toBe(0);
      // Eight nodes are more than the day needs: berth cordons and removes some. (Packed keeps the
      // Ready servers on the fullest nodes, so the cordoned ones rarely hold any to move; the
      // moves themselves are tested in test/sim/agones-fleet.test.ts.)
      expect(report.cordons).toBeGreaterThan(0);
      expect(report.nodesRemoved).toBeGreaterThan(0);
      // The buffer: every session's server plus the Ready ones were admitted.
      expect(report.gameServersAdmitted).toBeGreaterThanOrEqual(
        report.sessions + fleetReadyBuffer(DAY),
      );
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });
});
