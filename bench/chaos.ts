/**
 * `npm run bench -- chaos`: 64 concurrent clients drive Services and game-server pods through
 * berth's admission, settle and repair, and ENI IPs through the CNI's ADD and DEL (with kubelet's
 * late DEL retries), on DynamoDB Local while the store throttles, times out after writes that
 * landed, answers 500 after writes that landed (so the SDK sends them again), and kills callers
 * between writes, and the simulated apiserver refuses or delays writes admission allowed and
 * keeps Services behind finalizers (bench/support/chaos.ts). A third of the Services and half the
 * pods are created with generateName (the apiserver names them after admission); some CREATEs are
 * seen again under the same request uid, some are called again under a new one after another
 * webhook changed them (a re-invocation, which must keep its first allocation), stored
 * generateName objects are copied under another request, which must never be admitted as the
 * original, and live game servers are copied outside berth and the copies deleted, which must
 * free nothing of the original.
 */

import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { dynamoClient } from '../shared/store/client.js';
import { ensureTable } from '../shared/store/ensure-table.js';
import { runChaos } from './support/chaos.js';
import { writeResults } from './support/results.js';

const OPTIONS = {
  seed: 20261124,
  actors: 64,
  operations: 5_000,
  throttle: 0.03,
  ambiguous: 0.02,
  retried: 0.02,
  crash: 0.01,
  refuse: 0.1,
  delay: 0.2,
  finalizer: 0.3,
};

const row = (label: string, value: string | number) =>
  console.log(`    ${label.padEnd(50)} ${String(value).padStart(8)}`);

/** Runs the benchmark and writes its results. */
export async function runChaosBench(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  const client = dynamoClient({ endpoint: dynamo.endpoint, maxSockets: 512 });
  try {
    await ensureTable(client, 'chaos');
    console.log(
      `  ${OPTIONS.actors} clients, ${OPTIONS.operations} operations, seed ${OPTIONS.seed}; per store request: throttle ${OPTIONS.throttle}; per write: timeout after it landed ${OPTIONS.ambiguous}, 500 after it landed (SDK retry) ${OPTIONS.retried}, crash after it landed ${OPTIONS.crash}; the apiserver refuses ${OPTIONS.refuse} and delays ${OPTIONS.delay} of allowed writes, finalizer on ${OPTIONS.finalizer} of Service DELETEs`,
    );
    const report = await runChaos(client, 'chaos', OPTIONS);
    const byCount = (counts: Record<string, number>) =>
      Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
    console.log('  operations:');
    for (const [kind, n] of byCount(report.operations)) row(kind, n);
    console.log('  faults injected:');
    for (const [kind, n] of byCount(report.faults)) row(kind, n);
    console.log('  checks:');
    row('store checks (plus a duplicate check per operation)', report.invariantChecks);
    row('violations (two live owners of one value)', report.violations.length);
    row('unexpected errors (berth faults)', report.unexpected.length);
    row('leaks found by completed repair passes', report.leaks);
    row('most passes that found one leak before it was gone', report.maxPassesToFree);
    row('leaks still held after leakGracePasses passes', report.overdueLeaks.length);
    row('leaks once quiet', report.leaksWhenQuiet);
    row('repair passes to free them', report.passesWhenQuiet);
    row('count/record mismatches once quiet', report.mismatches.length);
    row('duration (s)', (report.durationMs / 1000).toFixed(1));
    for (const line of [...report.violations, ...report.unexpected, ...report.overdueLeaks])
      console.log(`    ! ${line}`);
    const targets = [
      {
        target: '0 values held by two live owners',
        pass: report.violations.length === 0 && report.unexpected.length === 0,
        line: `${report.violations.length} violations and ${report.unexpected.length} unexpected errors in ${report.invariantChecks} store checks and a duplicate check after every operation and commit`,
      },
      {
        target: 'every leak freed within leakGracePasses',
        pass: report.overdueLeaks.length === 0 && report.maxPassesToFree <= report.leakGracePasses,
        line: `${report.leaks} leaks found by completed repair passes, each gone within ${report.maxPassesToFree} of them (leakGracePasses ${report.leakGracePasses}); ${report.overdueLeaks.length} overdue`,
      },
      {
        target: 'counts equal records',
        pass: report.countsEqualRecords,
        line: report.countsEqualRecords
          ? 'held values, owner records, host port counts, pod records and ENI IPs equal what the live objects carry'
          : `${report.mismatches.length} mismatches, first: ${report.mismatches[0]}`,
      },
    ];
    console.log('\ntargets:');
    for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
    await writeResults('chaos', {
      command: 'npm run bench -- chaos',
      options: OPTIONS,
      ...report,
      targets,
    });
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}
