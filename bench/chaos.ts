/**
 * `npm run bench -- chaos`: 64 concurrent clients drive Services and game-server pods through
 * berth's admission, settle and repair, and ENI IPs through the CNI's ADD and DEL (with kubelet's
 * late DEL retries), on DynamoDB Local while the store throttles, times out
 * after writes that landed, and crashes callers between writes, and the simulated apiserver
 * refuses writes admission allowed and keeps Services behind finalizers (test/support/chaos.ts).
 */

import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { dynamoClient } from '../shared/store/client.js';
import { ensureTable } from '../shared/store/ensure-table.js';
import { runChaos } from '../test/support/chaos.js';
import { writeResults } from './support/results.js';

const RESULTS = 'bench/results/chaos.json';
const OPTIONS = {
  seed: 20261124,
  actors: 64,
  operations: 5_000,
  throttle: 0.03,
  ambiguous: 0.02,
  crash: 0.01,
  refuse: 0.1,
  finalizer: 0.3,
};

/** Runs the benchmark and writes its results. */
export async function runChaosBench(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  const client = dynamoClient({ endpoint: dynamo.endpoint });
  try {
    await ensureTable(client, 'chaos');
    console.log(
      `  ${OPTIONS.actors} clients, ${OPTIONS.operations} operations, seed ${OPTIONS.seed}; faults per store request: throttle ${OPTIONS.throttle}, ambiguous timeout ${OPTIONS.ambiguous}, crash ${OPTIONS.crash}; apiserver refuses ${OPTIONS.refuse} of allowed writes, finalizer on ${OPTIONS.finalizer} of Service DELETEs`,
    );
    const report = await runChaos(client, 'chaos', OPTIONS);
    console.log('  operations:');
    for (const [kind, n] of Object.entries(report.operations))
      console.log(`    ${kind.padEnd(28)} ${n}`);
    console.log('  faults injected:');
    for (const [kind, n] of Object.entries(report.faults))
      console.log(`    ${kind.padEnd(28)} ${n}`);
    console.log(
      `  invariant checks: ${report.invariantChecks}; violations: ${report.violations.length}`,
    );
    console.log(
      `  leaks once quiet: ${report.leaks}, freed after ${report.maxPassesToFree} repair pass(es) (grace ${report.leakGracePasses})`,
    );
    const targets = [
      {
        target: '0 values held by two live owners',
        pass: report.violations.length === 0 && report.unexpected.length === 0,
        line: `${report.violations.length} violations and ${report.unexpected.length} unexpected errors in ${report.invariantChecks} store checks and a duplicate check after every operation`,
      },
      {
        target: 'every leak freed within leakGracePasses',
        pass: report.maxPassesToFree <= report.leakGracePasses,
        line: `${report.leaks} leaks freed within ${report.maxPassesToFree} passes (leakGracePasses ${report.leakGracePasses})`,
      },
      {
        target: 'counts equal records',
        pass: report.countsEqualRecords,
        line: report.countsEqualRecords
          ? 'held values, owner records, host port counts and pod records equal what the live objects carry'
          : `${report.mismatches.length} mismatches, first: ${report.mismatches[0]}`,
      },
    ];
    console.log('\ntargets:');
    for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
    await writeResults(RESULTS, {
      command: 'npm run bench -- chaos',
      options: OPTIONS,
      ...report,
      targets,
    });
    console.log(`\nwrote ${RESULTS}`);
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}
