/**
 * `berth sim`: the local stack (DynamoDB Local, the runtime, the HTTP server with its web view)
 * and a simulated game day run through it (`sim/`). Each run gets a table of its own, so what an
 * earlier run or `berth serve` left never meets this day's invariants. Exits 1 on a violation,
 * printing its evidence.
 */
import { createServer } from 'node:net';
import { openSimStore } from '../shared/app/local-commands.js';
import { EnvironmentError, UsageError } from '../shared/app/local-errors.js';
import { simConfig } from '../sim/config.js';
import { SCENARIOS, type Scenario } from '../sim/game-day.js';
import { runSim, SIM_DEFAULTS, type SimReport } from '../sim/run.js';
import { startSimServer } from '../sim/server.js';
import type { Command } from './options.js';

/**
 * Refuses a port another process listens on before anything starts (the day's Kubernetes API
 * stand-in and DynamoDB Local would otherwise be left running): `npm start` listens on the same
 * default port.
 */
async function portFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE') return reject(error);
      reject(
        new EnvironmentError(
          `${host}:${port} is in use (berth serve, npm start, listens there by default): stop it, or pass --port N (--port 0 picks a free port and prints it)`,
          { cause: error },
        ),
      );
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

function formatReport(report: SimReport): string {
  const lines = [
    `simulated ${report.reachedHours.toFixed(2)} h of ${report.simulatedHours} h (${report.scenario}) in ${report.wallSeconds.toFixed(1)} s`,
    `  sessions ${report.sessions}, game servers admitted ${report.gameServersAdmitted} (denied ${report.gameServersDenied}, found no node at first ${report.gameServersPending}, lost with a failed node ${report.gameServersLost}, interrupted by the scale pass ${report.gameServersInterrupted}), at most ${report.peakGameServers} at once, at most ${report.peakCreatesPerMinute} created in a minute`,
    `  Services created ${report.servicesCreated}, updated ${report.servicesUpdated}, deleted ${report.servicesDeleted}; bindings ${report.bindings} (${report.bindingsRefused} refused: node drained or removed by berth); admission requests ${report.admissionRequests} (p50 ${report.admissionMs.p50} ms, p99 ${report.admissionMs.p99} ms, max ${report.admissionMs.max} ms)`,
    `  repair passes ${report.repairPasses}: ${report.repairFindings} findings, ${report.repairReleased} released`,
    `  ENI passes ${report.eniPasses}; pod addresses given ${report.podIpsAssigned}; sandboxes that waited for one ${report.podsWaitedForIp} (longest ${report.longestIpWaitSeconds} s)`,
    `  EC2 calls ${report.ec2Calls} (${report.ec2MutatingCalls} mutating, ${report.ec2Throttled} throttled); busiest minute ${report.peakEc2MutatingPerMinute} mutating calls against a budget of ${report.ec2MutatingBudgetPerMinute}`,
    `  scale passes ${report.scalePasses}: ${report.nodesAdded} nodes added, ${report.nodesRemoved} removed, ${report.cordons} cordons`,
    `  node-hours ${report.nodeHours.toFixed(1)}; invariant checks ${report.checks}`,
  ];
  if (report.violations.length === 0) lines.push('  every invariant held');
  else
    lines.push('  VIOLATIONS (the run stopped here):', ...report.violations.map((v) => `    ${v}`));
  return lines.join('\n');
}

export const simCommand: Command = async (options) => {
  const flags = options.sim;
  if (!flags) throw new UsageError('sim: no flags parsed');
  const scenario = SCENARIOS.find((name) => name === flags.scenario) as Scenario | undefined;
  if (!scenario)
    throw new UsageError(`--scenario: "${flags.scenario}" is not one of ${SCENARIOS.join(', ')}`);
  if (options.table && !options.dynamodbEndpoint) {
    throw new UsageError(
      '--table: berth sim makes a table of its own, on DynamoDB Local or --dynamodb-endpoint, never in an AWS account',
    );
  }
  const out = (line: string) => process.stdout.write(`${line}\n`);
  await portFree(options.host, options.port);
  const store = await openSimStore(options, out);
  const { tableName } = store;
  try {
    const day = { ...SIM_DEFAULTS, ...flags, scenario };
    const sim = await startSimServer({
      config: simConfig(options.config, day),
      dynamo: store.client,
      tableName,
      listen: { host: options.host, port: options.port },
      onError: (error, where) => process.stderr.write(`${where} failed: ${String(error)}\n`),
    });
    try {
      out(`berth sim: ${sim.server.url}/ui shows the run (table ${tableName} on ${store.where})`);
      const report = await runSim(sim.target, day, { progress: out, watch: sim.watch });
      out(options.json ? JSON.stringify(report, null, 2) : formatReport(report));
      return report.violations.length === 0 ? 0 : 1;
    } finally {
      await sim.close();
    }
  } finally {
    await store.close();
  }
};
