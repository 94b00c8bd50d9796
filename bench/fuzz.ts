/**
 * `npm run bench -- fuzz`: 10,000 fuzzed admission requests (the generators of the fuzz test,
 * oversized names, namespaces and generateNames among them) against the real HTTP surface and
 * DynamoDB Local, then 200 generateName rounds (a Service and a pod each created, seen again and
 * copied). Counts answers by HTTP status and by verdict, and judges four rules: no answer of 500
 * or more, no copy admitted as its original (two live owners of one value), the server healthy
 * after, and no allocation held by a request that was denied.
 */
import fc from 'fast-check';
import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { dynamoClient } from '../shared/store/client.js';
import { ensureTable } from '../shared/store/ensure-table.js';
import {
  type FuzzOutcome,
  fuzzCase,
  generateNameRound,
  heldAllocationIds,
  sendCase,
  startFuzzTarget,
} from './support/fuzz-reviews.js';
import { writeResults } from './support/results.js';

const CASES = 10_000;
const SEED = 20261124;
/** Rounds of generateName identity: a Service and a pod, each seen again and copied. */
const ROUNDS = 200;

const tally = (keys: readonly (string | number)[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const key of keys) counts[String(key)] = (counts[String(key)] ?? 0) + 1;
  return counts;
};

/** Runs the benchmark and writes its results. */
export async function runFuzzBench(): Promise<void> {
  const started = performance.now();
  const dynamo = await startDynamoDbLocal();
  const client = dynamoClient({ endpoint: dynamo.endpoint });
  try {
    await ensureTable(client, 'fuzz');
    const { server, runtime, internalFaults } = await startFuzzTarget(client, 'fuzz');
    const outcomes: FuzzOutcome[] = [];
    try {
      const cases = fc.sample(fuzzCase, { numRuns: CASES, seed: SEED });
      for (const [index, fuzz] of cases.entries()) {
        outcomes.push(await sendCase(server.url, fuzz));
        if ((index + 1) % 1000 === 0) process.stdout.write(`  ${index + 1}/${CASES} sent\n`);
      }
      const rounds = [];
      for (let round = 0; round < ROUNDS; round++) {
        rounds.push(await generateNameRound(server.url, round));
      }
      const twoOwners = rounds.flatMap((r) => r.twoOwners);
      const roundFailures = rounds.flatMap((r) => r.failures);
      const healthy = (await fetch(`${server.url}/healthz`)).status === 200;
      const allowedIds = new Set([...outcomes, ...rounds].flatMap((o) => o.ids));
      const held = await heldAllocationIds(runtime);
      const heldByDenied = held.filter((id) => !allowedIds.has(id));
      const byStatus = tally(outcomes.map((o) => o.status));
      const byVerdict = tally(outcomes.map((o) => o.verdict));
      const violations = outcomes.flatMap((o) => (o.violation ? [o.violation] : []));
      const fiveHundreds = outcomes.filter((o) => o.status >= 500).length;

      console.log('  answers by HTTP status:');
      for (const [status, n] of Object.entries(byStatus)) console.log(`    ${status}  ${n}`);
      console.log('  answers by verdict:');
      for (const [verdict, n] of Object.entries(byVerdict))
        console.log(`    ${verdict.padEnd(12)} ${n}`);
      console.log(`  allocations held after the run: ${held.length}`);
      console.log(
        `  generateName rounds: ${ROUNDS} (a Service and a pod each: created, seen again, copied)`,
      );

      const targets = [
        {
          target: '0 responses >= 500',
          pass: fiveHundreds === 0 && internalFaults.length === 0,
          line: `${fiveHundreds} of ${CASES} responses were 5xx; ${internalFaults.length} internal faults logged`,
        },
        {
          target: '0 values held by two live owners (generateName copies)',
          pass: twoOwners.length === 0 && roundFailures.length === 0,
          line: `${twoOwners.length} copies of ${ROUNDS} stored generateName Services and ${ROUNDS} pods admitted as the original; ${roundFailures.length} rounds answered otherwise than expected`,
        },
        {
          target: 'server healthy after',
          pass: healthy,
          line: `GET /healthz after ${CASES} cases: ${healthy ? '200 ok' : 'not ok'}`,
        },
        {
          target: 'no allocation held by a denied request',
          pass: heldByDenied.length === 0 && violations.length === 0,
          line: `${held.length} allocations held, ${heldByDenied.length} of them by requests that were not allowed; ${violations.length} malformed answers`,
        },
      ];
      console.log('\ntargets:');
      for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
      await writeResults('fuzz', {
        command: 'npm run bench -- fuzz',
        cases: CASES,
        seed: SEED,
        byStatus,
        byVerdict,
        held: held.length,
        heldByDenied: heldByDenied.slice(0, 20),
        violations: violations.slice(0, 20),
        generateNameRounds: ROUNDS,
        twoOwners: twoOwners.slice(0, 20),
        roundFailures: roundFailures.slice(0, 20),
        internalFaults: internalFaults.slice(0, 20).map(String),
        durationMs: Math.round(performance.now() - started),
        targets,
      });
    } finally {
      await server.close();
    }
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}
