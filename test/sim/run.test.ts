import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { cidrContains, parseCidr, parseIp } from '../../shared/net/ip.js';
import { simConfig } from '../../sim/config.js';
import { runSim, SIM_DEFAULTS, type SimOptions } from '../../sim/run.js';
import { startSimServer } from '../../sim/server.js';
import { freshTable } from '../support/dynamo.js';

async function stack(options: Partial<SimOptions> = {}) {
  const { client, tableName } = await freshTable();
  const internalFaults: unknown[] = [];
  const sim = await startSimServer({
    config: simConfig(parseConfig({ cluster: 'sim' }), { ...SHORT, ...options }),
    dynamo: client,
    tableName,
    listen: { host: '127.0.0.1', port: 0 },
    onError: (error) => internalFaults.push(error),
  });
  return { runtime: sim.runtime, sim, internalFaults };
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
      // Type changes went through admission: node ports given and taken back, checked each time.
      expect(report.servicesUpdated).toBeGreaterThan(0);
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

  it('reports its peaks over a quiet day, whose minutes mostly see no game server or EC2 call', async () => {
    const { sim } = await stack();
    try {
      const report = await runSim(sim.target, { ...SHORT, sessionsPerMinute: 0.5, scale: false });
      expect(report.sessions).toBeGreaterThan(0);
      expect(report.peakCreatesPerMinute).toBeGreaterThanOrEqual(1);
      expect(Number.isFinite(report.peakEc2MutatingPerMinute)).toBe(true);
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

  it("grows and shrinks the fleet with berth's scale pass, every pod address from berth's pools on its node, no game interrupted", async () => {
    const { sim, internalFaults } = await stack();
    try {
      const report = await runSim(sim.target, { ...SHORT, hours: 0.5, scenario: 'waves' });
      expect(report.violations).toEqual([]);
      expect(report.scalePasses).toBe(29);
      expect(report.cordons + report.nodesAdded).toBeGreaterThan(0);
      expect(report.gameServersInterrupted).toBe(0);
      expect(report.eniPasses).toBe(29);
      // Every bound game server asked berth for an address and got one on its node.
      expect(report.podIpsAssigned).toBe(report.bindings);
      expect(report.ec2MutatingCalls).toBeGreaterThan(0);
      expect(report.peakEc2MutatingPerMinute).toBeLessThanOrEqual(
        report.ec2MutatingBudgetPerMinute,
      );
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });

  it('keeps sandboxes waiting while the subnet is dry and gives them addresses when it is back', async () => {
    const { sim, internalFaults } = await stack();
    try {
      const report = await runSim(sim.target, {
        ...SHORT,
        hours: 0.3,
        sessionsPerMinute: 10,
        scenario: 'subnet-dry',
      });
      expect(report.violations).toEqual([]);
      expect(report.podsWaitedForIp).toBeGreaterThan(0);
      expect(report.longestIpWaitSeconds).toBeGreaterThan(0);
      // The subnet is dry for 30% of the day: no sandbox waits longer than that and a pass.
      expect(report.longestIpWaitSeconds).toBeLessThanOrEqual(0.3 * 0.3 * 3600 + 60);
      expect(internalFaults).toEqual([]);
    } finally {
      await sim.close();
    }
  });

  it('reports a node removed under live games, with the games it carried', async () => {
    const { sim } = await stack();
    try {
      let removed = '';
      const report = await runSim(
        sim.target,
        { ...SHORT, hours: 0.5 },
        {
          afterEvent: async (index) => {
            if (index !== 120) return;
            // A Node deleted as a careless scaler would: under its game servers.
            const busy = [...sim.api.pods.values()].find((pod) => pod.spec?.nodeName);
            removed = busy?.spec?.nodeName ?? '';
            sim.api.nodes.delete(removed);
          },
        },
      );
      expect(removed).not.toBe('');
      expect(report.gameServersInterrupted).toBeGreaterThan(0);
      expect(report.violations).toHaveLength(1);
      expect(report.violations[0]).toMatch(
        new RegExp(
          `^node ${removed} left the cluster after the scale pass at [\\d.]+ h with game servers running: gs-\\d+`,
        ),
      );
    } finally {
      await sim.close();
    }
  });

  it("reports a pod address EC2 no longer has on the pod's node", async () => {
    const { sim } = await stack();
    try {
      const { ec2 } = sim.target.world.machines;
      let taken = '';
      const report = await runSim(sim.target, SHORT, {
        afterEvent: async (index) => {
          if (index !== 60) return;
          const ip = [...sim.api.pods.values()].find((pod) => pod.status?.podIP)?.status?.podIP;
          const eni = ec2.allInterfaces().find((e) => ip && e.secondaryIps.includes(ip));
          const prefix = ec2
            .allInterfaces()
            .flatMap((e) => e.ipv4Prefixes.map((p) => ({ eni: e, p })))
            .find(({ p }) => ip && sameSlash28(p, ip));
          if (eni && ip) await ec2.unassignPrivateIpAddresses({ eniId: eni.eniId, ips: [ip] });
          else if (prefix)
            await ec2.unassignIpv4Prefixes({ eniId: prefix.eni.eniId, prefixes: [prefix.p] });
          taken = ip ?? '';
        },
      });
      expect(taken).not.toBe('');
      expect(report.violations.length).toBeGreaterThan(0);
      expect(report.violations).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^pod gs-\\d+ has ${taken.replaceAll('.', '\\.')}, which no ENI of node game-node-\\d+'s instance i-[0-9a-f]+ holds$`,
          ),
        ),
      );
    } finally {
      await sim.close();
    }
  });
});

/** Whether `ip` lies in the /28 `prefix`. */
function sameSlash28(prefix: string, ip: string): boolean {
  const block = parseCidr(prefix);
  const address = parseIp(ip);
  return block !== undefined && address !== undefined && cidrContains(block, address);
}
