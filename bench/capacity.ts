/**
 * The capacity benchmark: `GET /v1/capacity` on the local server (`berth serve`) over DynamoDB
 * Local, for 3 clusters of 300 nodes and 10,000 game servers each, with every table request the
 * answers make counted on the wire.
 *
 * Each cluster's record is written as the passes write it: its scale figures by the scale pass
 * itself (`scaleRunner`) over an in-memory cluster of that size (12 fleets, a fifth of the game
 * servers ready), its host port, fronts and ENI figures through the same ledger at the sizes such
 * a cluster has (two host port ranges, 20 NLBs, 300 ENI pools). Then the server answers the view
 * of every cluster, and of one, sequentially; a proxy in front of DynamoDB Local counts each
 * request berth sends and the read units DynamoDB reports.
 *
 * Targets: p99 at most 50 ms; at most 2 table reads per cluster per answer.
 *
 * Run alone: `npx tsx bench/capacity.ts`. Writes bench/results/capacity.json.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { startLocalServer } from '../shared/app/local-server.js';
import { scaleRunner } from '../shared/app/scale-pass.js';
import { type BerthConfig, parseConfig } from '../shared/config/schema.js';
import { startDynamoDbLocal } from '../shared/local/dynamodb-local.js';
import { dynamoClient } from '../shared/store/client.js';
import { DynamoCapacityLedger } from '../shared/store/dynamo-capacity-ledger.js';
import { ensureTable } from '../shared/store/ensure-table.js';
import {
  AGONES_FLEET_LABEL,
  GAME_SERVER_LABEL,
  GAME_STATE_ANNOTATION,
} from '../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../sim/fakes/cluster-api.js';
import { writeResults } from './support/results.js';
import { percentile, round } from './support/stats.js';
import { printTable } from './support/table.js';

const TABLE = 'berth-bench-capacity';
const CLUSTERS = ['games-eu', 'games-us', 'games-ap'];
const NODES = 300;
const GAME_SERVERS = 10_000;
const FLEETS = 12;
const ANSWERS = 500;
const WARM_UP = 20;
const TARGET_P99_MS = 50;
const TARGET_READS_PER_CLUSTER = 2;

const configOf = (cluster: string): BerthConfig =>
  parseConfig({
    cluster,
    hostPortRanges: { game: '7000-7999', voice: '8000-8099' },
    scale: { gameServerCpuMillis: 250, minNodes: 1, maxNodes: 400 },
  });

/** A node of 8 CPUs: 32 slots of 250m, so 300 hold the 10,000 game servers with room. */
function gameNode(name: string): V1Node {
  return {
    metadata: { name, labels: { role: 'game-server' } },
    spec: { providerID: `aws:///us-east-1a/i-${name}` },
    status: {
      allocatable: { cpu: '8' },
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

function gameServer(i: number): V1Pod {
  return {
    metadata: {
      name: `gs-${i}`,
      namespace: 'games',
      labels: { [GAME_SERVER_LABEL]: 'true', [AGONES_FLEET_LABEL]: `fleet-${i % FLEETS}` },
      annotations: { [GAME_STATE_ANNOTATION]: i % 5 === 0 ? 'ready' : 'allocated' },
    },
    spec: {
      nodeName: `node-${i % NODES}`,
      containers: [{ name: 'server', resources: { requests: { cpu: '250m' } } }],
    },
    status: { phase: 'Running' },
  };
}

/** Counts the requests (by operation) and read units that pass through to DynamoDB Local. */
class CountingProxy {
  readonly requests = new Map<string, number>();
  readUnits = 0;
  readonly #server: Server;

  constructor(target: URL) {
    this.#server = createServer((req, res) => {
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
      this.requests.set(operation, (this.requests.get(operation) ?? 0) + 1);
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            const body = Buffer.concat(chunks);
            if (
              operation.startsWith('BatchGet') ||
              operation.startsWith('Get') ||
              operation === 'Query'
            ) {
              const consumed = JSON.parse(body.toString('utf8')).ConsumedCapacity;
              for (const one of Array.isArray(consumed) ? consumed : consumed ? [consumed] : [])
                this.readUnits += one.CapacityUnits ?? 0;
            }
            res.writeHead(answer.statusCode ?? 500, answer.headers).end(body);
          });
        },
      );
      req.pipe(upstream);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((done) => this.#server.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.requests.clear();
    this.readUnits = 0;
  }

  total(): number {
    return [...this.requests.values()].reduce((sum, n) => sum + n, 0);
  }

  async close(): Promise<void> {
    await new Promise((done) => this.#server.close(done));
  }
}

/** Writes each cluster's record as its passes would. */
async function record(endpoint: string, configs: readonly BerthConfig[]): Promise<void> {
  const client = dynamoClient({ endpoint });
  await ensureTable(client, TABLE);
  const ledger = new DynamoCapacityLedger({ client, tableName: TABLE });
  const now = Date.now();
  for (const config of configs) {
    const cluster = new FakeClusterApi()
      .withNodes(...Array.from({ length: NODES }, (_, i) => gameNode(`node-${i}`)))
      .withPods(...Array.from({ length: GAME_SERVERS }, (_, i) => gameServer(i)));
    const report = await scaleRunner(
      { config, dynamo: client, tableName: TABLE, clusterApi: cluster },
      { triggers: false },
    )('bench');
    if (report.failures.length > 0) throw new Error(`scale pass failed: ${JSON.stringify(report)}`);
    await ledger.record(config.cluster, {
      source: 'hostPorts',
      atMs: now,
      ranges: [
        { range: 'game', size: 1000, used: GAME_SERVERS, largestFreeBlock: 412 },
        { range: 'voice', size: 100, used: GAME_SERVERS / 5, largestFreeBlock: 37 },
      ],
    });
    await ledger.record(config.cluster, {
      source: 'fronts',
      atMs: now,
      kind: 'listeners',
      total: 20 * 50_000,
      free: 20 * 50_000 - GAME_SERVERS,
    });
    await ledger.record(config.cluster, {
      source: 'eni',
      atMs: now,
      freeAddresses: 2_400,
      pools: NODES,
    });
  }
}

/** Answers `count` requests of `path` one after another; each one's milliseconds. */
async function answer(url: string, count: number): Promise<{ ms: number[]; body: string }> {
  const ms: number[] = [];
  let body = '';
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await fetch(url);
    body = await response.text();
    ms.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${body}`);
  }
  return { ms, body };
}

export async function runCapacityBench(): Promise<void> {
  const started = performance.now();
  console.log(
    `capacity benchmark: ${CLUSTERS.length} clusters of ${NODES} nodes and ${GAME_SERVERS} game servers, berth serve over DynamoDB Local (in memory)`,
  );
  const dynamo = await startDynamoDbLocal();
  const proxy = new CountingProxy(new URL(dynamo.endpoint));
  const configs = CLUSTERS.map(configOf);
  try {
    const endpoint = await proxy.listen();
    console.log('recording each cluster as its passes do (the scale pass over 10,000 pods)...');
    await record(endpoint, configs);
    const quiet = { info() {}, warn() {}, error() {} };
    const server = await startLocalServer(
      {
        config: configs[0] as BerthConfig,
        clusters: configs,
        configuredClusters: CLUSTERS,
        http: true,
        host: '127.0.0.1',
        port: 0,
        passes: false,
        dataDir: '.berth/bench-capacity',
        dynamodbEndpoint: endpoint,
        table: TABLE,
      },
      quiet,
    );
    try {
      const runs = [
        { name: 'every cluster', url: `${server.url}/v1/capacity`, clusters: CLUSTERS.length },
        { name: 'one cluster', url: `${server.url}/v1/capacity?cluster=games-us`, clusters: 1 },
      ];
      const measured = [];
      for (const run of runs) {
        await answer(run.url, WARM_UP);
        proxy.reset();
        const { ms, body } = await answer(run.url, ANSWERS);
        const view = JSON.parse(body);
        measured.push({
          ...run,
          answers: ANSWERS,
          p50Ms: round(percentile(ms, 50)),
          p99Ms: round(percentile(ms, 99)),
          maxMs: round(Math.max(...ms)),
          tableRequests: Object.fromEntries(proxy.requests),
          readsPerClusterPerAnswer: round(proxy.total() / ANSWERS / run.clusters, 3),
          readUnitsPerClusterPerAnswer: round(proxy.readUnits / ANSWERS / run.clusters, 3),
          answerBytes: body.length,
          readyGameServers: view.clusters.map(
            (c: { gameServers?: { ready: number } }) => c.gameServers?.ready,
          ),
          stale: view.clusters.map((c: { stale: boolean }) => c.stale),
        });
      }
      console.log('');
      printTable(
        [
          'answer',
          'answers',
          'p50 ms',
          'p99 ms',
          'max ms',
          'table requests',
          'reads/cluster',
          'RCU/cluster',
          'bytes',
        ],
        measured.map((m) => [
          m.name,
          m.answers,
          m.p50Ms,
          m.p99Ms,
          m.maxMs,
          Object.entries(m.tableRequests)
            .map(([op, n]) => `${op}=${n}`)
            .join(' ') || '-',
          m.readsPerClusterPerAnswer,
          m.readUnitsPerClusterPerAnswer,
          m.answerBytes,
        ]),
      );
      const all = measured[0] as (typeof measured)[number];
      const worstReads = Math.max(...measured.map((m) => m.readsPerClusterPerAnswer));
      const worstUnits = Math.max(...measured.map((m) => m.readUnitsPerClusterPerAnswer));
      const counted = all.readyGameServers.every((n: number) => n === GAME_SERVERS / 5);
      const targets = [
        {
          target: `capacity answer for ${CLUSTERS.length} clusters of ${NODES} nodes and ${GAME_SERVERS.toLocaleString('en-US')} game servers each: p99 at most ${TARGET_P99_MS} ms on the local server over DynamoDB Local`,
          pass: all.p99Ms <= TARGET_P99_MS && counted,
          line: `p99 ${all.p99Ms} ms (p50 ${all.p50Ms} ms) over ${ANSWERS} answers; one cluster p99 ${measured[1]?.p99Ms} ms; ready game servers ${all.readyGameServers.join(', ')}`,
        },
        {
          target: `at most ${TARGET_READS_PER_CLUSTER} table reads per cluster`,
          pass: worstReads <= TARGET_READS_PER_CLUSTER && worstUnits <= TARGET_READS_PER_CLUSTER,
          line: `${worstReads} requests and ${worstUnits} read units per cluster per answer at most (every cluster: ${all.readsPerClusterPerAnswer} requests; one cluster: ${measured[1]?.readsPerClusterPerAnswer})`,
        },
      ];
      console.log('');
      for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.target}: ${t.line}`);
      const durationMs = Math.round(performance.now() - started);
      console.log(`\ntotal ${(durationMs / 1000).toFixed(0)} s`);
      await writeResults('capacity', {
        benchmark: 'capacity',
        setup: { clusters: CLUSTERS, nodes: NODES, gameServers: GAME_SERVERS, fleets: FLEETS },
        runs: measured,
        targets,
        durationMs,
      });
    } finally {
      await server.close();
    }
  } finally {
    await proxy.close();
    await dynamo.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runCapacityBench();
}
