/**
 * Runs each billed operation's real code path for one reference cluster and measures it: the
 * DynamoDB units AWS would bill (a ledger on the client, ../ledger.ts, beside the stores' own
 * CapacityMeters where the composition exposes them), the wall time of the invocation, the log
 * bytes it writes at the configured level, its answer's size, the settle messages it queues,
 * the Kubernetes and EC2 calls it makes.
 *
 * The world: DynamoDB Local with berth's table; the loopback fake of the Kubernetes API, reached
 * through the real client-node adapter; the EC2 fake behind the real rate budget (kept in
 * DynamoDB, as in AWS). It is brought to the reference cluster's steady state through the same
 * code paths: 100 c5.4xlarge nodes with ENI pools, 3,333 game servers admitted through the
 * webhook and given addresses through the node IP API, 667 Services admitted. Then each
 * operation runs `samples` times, and each pass at that size.
 *
 * The HTTP functions (admission, node IPs) run through the same middy chain as their handlers
 * (functions/admission/handler.ts, functions/node-ips/handler.ts) with a function URL event, so
 * their Powertools log lines and EMF metrics are the real ones. The other handlers build their
 * context from the Lambda environment at module scope; their bodies are exported from
 * shared/app (`settleMessages`, `eniInvocation`, `repairInvocation`, `scaleInvocation`) and run
 * here as they run there, over the reference cluster's wiring.
 *
 * Admission reviews are first passed through the webhook configuration (`berth manifests`): a
 * review the apiserver would not send to berth is still metered, and counted zero times a month.
 * The host-port and Service paths are metered twice: one writer at a time (durations, logs) and
 * with `racingWriters` containers writing at once (DynamoDB units, lost races, round trips).
 *
 * This module is the entry: world.ts builds the cluster, objects.ts its pods and Services,
 * lambda.ts makes an invocation look like Lambda's, session.ts keeps what each invocation
 * measured (samples.ts summarises it), and admission.ts, eni.ts and passes.ts meter the
 * operations; idle.ts meters the passes again in a cluster with no game sessions.
 */

import type { FunctionName } from '../../../infra/constructs/berth-function.js';
import { startDynamoDbLocal } from '../../../shared/local/dynamodb-local.js';
import { dynamoClient } from '../../../shared/store/client.js';
import { ensureTable } from '../../../shared/store/ensure-table.js';
import { startKubeApiServer } from '../../../sim/fakes/kube-api-server.js';
import { countRoundTrips } from '../../support/round-trips.js';
import type { MeasuredRatios, OperationKind } from '../fleet.js';
import { DynamoLedger } from '../ledger.js';
import type { StackFunction } from '../stack.js';
import { meterAdmission } from './admission.js';
import { meterEni } from './eni.js';
import { meterIdlePasses } from './idle.js';
import { meterPasses } from './passes.js';
import type { MeteredOperation, MeteredPass } from './samples.js';
import { Session } from './session.js';
import { buildWorld, TABLE, type TableSize, tableSize } from './world.js';

export type { MeteredOperation } from './samples.js';

/** Everything the meter found. */
export interface MeterResult {
  readonly operations: Readonly<Record<OperationKind, MeteredOperation>>;
  readonly ratios: MeasuredRatios;
  /** Distinct custom metrics (namespace, dimensions, name) one cluster emits. */
  readonly customMetrics: readonly string[];
  readonly table: TableSize;
  readonly setup: Readonly<Record<string, number | string>>;
  /** Each pass measured, for the report. */
  readonly passes: readonly MeteredPass[];
  /** The passes of a cluster with no game sessions (`idle.ts`), and each pass measured. */
  readonly idle: {
    readonly nodes: number;
    readonly operations: Readonly<Record<PassKind, MeteredOperation>>;
    readonly passes: readonly MeteredPass[];
  };
}

/** The scheduled passes, metered at fleet size and in the idle cluster. */
export const PASS_KINDS = ['eni-pass', 'repair-pass', 'scale-pass'] as const;
export type PassKind = (typeof PASS_KINDS)[number];

/** Runs everything; `log` hears progress. */
export async function meterOperations(options: {
  readonly samples: number;
  /** The stack's functions: memory, and whether Lambda writes its own log lines. */
  readonly functions: Readonly<Record<FunctionName, StackFunction>>;
  readonly log: (line: string) => void;
}): Promise<MeterResult> {
  const { samples, functions, log } = options;
  const started = performance.now();
  const dynamo = await startDynamoDbLocal();
  const dynamoStartMs = Math.round(performance.now() - started);
  const client = dynamoClient({ endpoint: dynamo.endpoint });
  try {
    const kube = await startKubeApiServer();
    try {
      await ensureTable(client, TABLE);
      const ledger = new DynamoLedger(client);
      countRoundTrips(client);
      const session = new Session(await buildWorld(client, ledger, kube, log), functions, log);
      session.setup.dynamoDbLocalStartMs = dynamoStartMs;
      const result = await measureAll(session, samples);
      session.setup.totalMeterMs = Math.round(performance.now() - started);
      return result;
    } finally {
      await kube.stop();
    }
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}

/** Everything measured in one run, in order: admission and settle, ENI, scale and repair. */
async function measureAll(session: Session, samples: number): Promise<MeterResult> {
  const admission = await meterAdmission(session, samples);
  const eni = await meterEni(session, samples, admission);
  await meterPasses(session);
  const operations = session.operations();
  const idle = await meterIdlePasses(session);
  const idleOperations = Object.fromEntries(
    PASS_KINDS.map((kind) => [kind, idle.operation(kind)]),
  ) as Record<PassKind, MeteredOperation>;
  return {
    operations,
    ratios: {
      settleLooksPer: admission.settleLooksPer,
      ...eni,
      calledShare: Object.fromEntries(
        Object.entries(operations).map(([kind, op]) => [kind, op.calledShare]),
      ) as MeasuredRatios['calledShare'],
    },
    customMetrics: [...session.metrics].sort(),
    table: await tableSize(session.world.client, session.world.config.cluster),
    setup: session.setup,
    passes: session.passes,
    idle: { nodes: idle.world.nodes.length, operations: idleOperations, passes: idle.passes },
  };
}
