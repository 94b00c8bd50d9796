/**
 * The admission handler's own cost: CPU time per Service review with the
 * store in memory (no round trip in it), and the bundled admission function's size and
 * initialisation time.
 *
 * Run alone: `npx tsx bench/admission-cpu.ts`. Writes bench/results/admission.json.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BuildOptions, build, type Metafile } from 'esbuild';
import { admit } from '../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../shared/admission/review.js';
import { createRuntime } from '../shared/app/runtime.js';
import { parseConfig } from '../shared/config/schema.js';
import { dynamoClient } from '../shared/store/client.js';
import { MemoryAllocationStore, type StoreCalls } from '../sim/fakes/allocation-store.js';
import { applyPatch, decodePatch } from '../sim/fakes/json-patch.js';
import { writeResults } from './support/results.js';
import { median, percentile, round } from './support/stats.js';
import { printTable } from './support/table.js';

const REVIEWS = 20_000;
/** Untimed reviews first, so the JIT has compiled the handler before anything is counted. */
const WARM_UP_REVIEWS = 2_000;
/** Services kept alive, so the ranges hold a steady few hundred values while reviews flow. */
const LIVE_SERVICES = 300;
const INIT_RUNS = 10;
/** Inputs listed in the bundle breakdown. */
const TOP_INPUTS = 15;
const TARGET_CPU_P99_MS = 2;
const TARGET_BUNDLE_BYTES = 1_500_000;
const TARGET_INIT_MS = 300;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HANDLER = join(ROOT, 'functions/admission/handler.ts');

type Case = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'reinvocation' | 'delete';
/**
 * Each create is followed by the apiserver's re-invocation of the patched object and by the
 * DELETE of the oldest live Service, so the mix is steady and the ranges never fill.
 */
const CYCLE: readonly Case[] = [
  'ClusterIP',
  'reinvocation',
  'delete',
  'NodePort',
  'reinvocation',
  'delete',
  'LoadBalancer',
  'reinvocation',
  'delete',
];

type KubeObject = Record<string, unknown> & { metadata: Record<string, unknown> };

interface Sample {
  readonly kind: Case;
  readonly cpuMs: number;
  readonly wallMs: number;
  /** Store calls the review made: each is a DynamoDB round trip with the real store. */
  readonly calls: StoreCalls;
}

/** Runs both parts, prints tables and PASS/FAIL lines, writes the results file. */
export async function runAdmissionCpuBench(): Promise<void> {
  console.log(
    `admission benchmark: ${REVIEWS} Service reviews (after ${WARM_UP_REVIEWS} untimed), in-memory store`,
  );
  const cpu = await measureHandlerCpu();
  const bundle = await measureBundle();

  const targets = [
    {
      target: `admission handler CPU time p99 <= ${TARGET_CPU_P99_MS} ms per review`,
      pass: cpu.all.cpuP99Ms <= TARGET_CPU_P99_MS,
      line: `handler CPU p99 ${cpu.all.cpuP99Ms.toFixed(3)} ms (process.cpuUsage, user+system), wall p99 ${cpu.all.wallP99Ms.toFixed(3)} ms (need <= ${TARGET_CPU_P99_MS} ms)`,
    },
    ...(bundle.measured
      ? [
          {
            target: 'bundle <= 1.5 MB',
            pass: bundle.bytes <= TARGET_BUNDLE_BYTES,
            line: `bundle ${(bundle.bytes / 1e6).toFixed(3)} MB (${bundle.bytes} bytes; need <= 1.5 MB = ${TARGET_BUNDLE_BYTES} bytes)`,
          },
          {
            target: `bundled function initialises in <= ${TARGET_INIT_MS} ms`,
            pass: bundle.initMedianMs <= TARGET_INIT_MS,
            line: `init median ${bundle.initMedianMs.toFixed(0)} ms over ${INIT_RUNS} fresh processes (import incl. top-level await; whole process ${bundle.processMedianMs.toFixed(0)} ms) (need <= ${TARGET_INIT_MS} ms)`,
          },
        ]
      : []),
  ];
  console.log('\ntargets:');
  for (const t of targets) console.log(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.line}`);
  if (!bundle.measured) console.log(`  not measured: ${bundle.reason}`);

  await writeResults('admission', {
    benchmark: 'admission',
    handlerCpu: {
      method:
        'per review: JSON.parse of the body + parseAdmissionReview + admit + JSON.stringify of the answer; ' +
        'CPU = process.cpuUsage delta (user+system, all threads of the process), wall = performance.now delta; ' +
        'store = in-memory Map (sim/fakes/allocation-store.ts), so no round trip is included',
      reviews: REVIEWS,
      warmUpReviews: WARM_UP_REVIEWS,
      liveServices: LIVE_SERVICES,
      mix: CYCLE,
      ...cpu,
    },
    bundle,
    targets,
  });
}

/** Per-case and overall percentiles of CPU and wall time per review. */
interface Percentiles {
  readonly reviews: number;
  /** Mean store calls per review, by method. */
  readonly storeCallsPerReview: Record<string, number>;
  readonly cpuP50Ms: number;
  readonly cpuP99Ms: number;
  readonly wallP50Ms: number;
  readonly wallP99Ms: number;
  readonly wallMaxMs: number;
}

async function measureHandlerCpu(): Promise<{
  all: Percentiles;
  byCase: Record<string, Percentiles>;
  denials: number;
  cpuClockResolutionUs: number;
}> {
  const store = new MemoryAllocationStore();
  // `berth serve` without a cluster: given-back values are freed at once, and Service reviews
  // reach only the allocation store, so the table client is never called.
  const { admission: handlers } = createRuntime({
    config: parseConfig({ serviceCIDRs: ['10.100.0.0/16'], nodePortRange: '30000-32767' }),
    dynamo: dynamoClient({ region: 'us-east-1' }),
    tableName: 'bench-admission',
    allocationStore: store,
  });

  const live: KubeObject[] = [];
  let lastCreated: KubeObject | undefined;
  let serial = 0;
  let denials = 0;
  const samples: Sample[] = [];

  // One review: built outside the clock, then parsed and answered inside it.
  const send = async (kind: Case, timed: boolean) => {
    let object: KubeObject | null = null;
    let oldObject: KubeObject | null = null;
    let operation: 'CREATE' | 'DELETE' = 'CREATE';
    if (kind === 'reinvocation') {
      object = lastCreated ?? null;
    } else if (kind === 'delete') {
      if (live.length <= LIVE_SERVICES) return send('ClusterIP', timed);
      operation = 'DELETE';
      oldObject = live.shift() ?? null;
    } else {
      object = serviceOf(kind, `svc-${serial++}`);
    }
    const target = object ?? oldObject;
    if (!target) return send('ClusterIP', timed);
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: `review-${serial}-${kind}`,
        kind: { group: '', version: 'v1', kind: 'Service' },
        resource: { group: '', version: 'v1', resource: 'services' },
        name: target.metadata.name,
        namespace: 'bench',
        operation,
        userInfo: { username: 'system:serviceaccount:kube-system:deployment-controller' },
        object,
        oldObject,
        dryRun: false,
      },
    });

    const callsBefore = { ...store.calls };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const answer = await admit(parseAdmissionReview(JSON.parse(body)), handlers);
    const wire = JSON.stringify(answer);
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    if (wire.length === 0) throw new Error('empty answer');

    if (!answer.response.allowed) denials++;
    if (timed) {
      const calls = { ...store.calls };
      for (const method of Object.keys(calls) as (keyof StoreCalls)[]) {
        calls[method] -= callsBefore[method];
      }
      samples.push({ kind, cpuMs: (cpu.user + cpu.system) / 1000, wallMs, calls });
    }
    if (operation === 'CREATE' && object && kind !== 'reinvocation') {
      // What the apiserver stores: the patched object, with a uid.
      const stored = applyPatch(object, decodePatch(answer.response.patch));
      lastCreated = stored;
      live.push({
        ...stored,
        metadata: { ...stored.metadata, uid: `uid-${stored.metadata.name}` },
      });
    }
  };

  for (let i = 0; i < WARM_UP_REVIEWS + REVIEWS; i++) {
    await send(CYCLE[i % CYCLE.length] ?? 'ClusterIP', i >= WARM_UP_REVIEWS);
  }

  const summarise = (list: readonly Sample[]): Percentiles => ({
    reviews: list.length,
    storeCallsPerReview: Object.fromEntries(
      (Object.keys(store.calls) as (keyof StoreCalls)[]).map((method) => [
        method,
        round(list.reduce((sum, s) => sum + s.calls[method], 0) / list.length, 2),
      ]),
    ),
    cpuP50Ms: round(
      percentile(
        list.map((s) => s.cpuMs),
        50,
      ),
      3,
    ),
    cpuP99Ms: round(
      percentile(
        list.map((s) => s.cpuMs),
        99,
      ),
      3,
    ),
    wallP50Ms: round(
      percentile(
        list.map((s) => s.wallMs),
        50,
      ),
      3,
    ),
    wallP99Ms: round(
      percentile(
        list.map((s) => s.wallMs),
        99,
      ),
      3,
    ),
    wallMaxMs: round(Math.max(...list.map((s) => s.wallMs)), 3),
  });
  const all = summarise(samples);
  const byCase: Record<string, Percentiles> = {};
  for (const kind of new Set(samples.map((s) => s.kind))) {
    byCase[kind] = summarise(samples.filter((s) => s.kind === kind));
  }
  const resolution = cpuClockResolutionUs();

  console.log(
    `\nper-review time (CPU: process.cpuUsage user+system, resolution ~${resolution} us; wall: performance.now)`,
  );
  const callsText = (calls: Record<string, number>) =>
    Object.entries(calls)
      .filter(([, n]) => n > 0)
      .map(([method, n]) => `${method} ${n}`)
      .join(', ');
  printTable(
    [
      'case',
      'reviews',
      'CPU p50 ms',
      'CPU p99 ms',
      'wall p50 ms',
      'wall p99 ms',
      'wall max ms',
      'store calls per review',
    ],
    [...Object.entries(byCase), ['all', all] as const].map(([name, p]) => [
      name,
      p.reviews,
      p.cpuP50Ms,
      p.cpuP99Ms,
      p.wallP50Ms,
      p.wallP99Ms,
      p.wallMaxMs,
      callsText(p.storeCallsPerReview),
    ]),
  );
  console.log(`denials: ${denials} (expected 0)`);
  // A denied review is a different, shorter path: timings over denials measure the wrong thing.
  if (denials > 0) {
    throw new Error(
      `${denials} of ${WARM_UP_REVIEWS + REVIEWS} reviews were denied: the benchmark's store or reviews are wrong, and its timings mean nothing`,
    );
  }
  return { all, byCase, denials, cpuClockResolutionUs: resolution };
}

/** The smallest step process.cpuUsage shows on this machine, in microseconds. */
function cpuClockResolutionUs(): number {
  const steps: number[] = [];
  let last = process.cpuUsage();
  while (steps.length < 50) {
    const now = process.cpuUsage();
    const step = now.user + now.system - (last.user + last.system);
    if (step > 0) steps.push(step);
    last = now;
  }
  return Math.min(...steps);
}

/** A Service object as `kubectl apply` sends it for each case. */
function serviceOf(kind: Exclude<Case, 'reinvocation' | 'delete'>, name: string): KubeObject {
  const selector = { app: name };
  const http = { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 };
  const metadata = { name, namespace: 'bench', labels: { app: name } };
  if (kind === 'ClusterIP') {
    return { apiVersion: 'v1', kind: 'Service', metadata, spec: { selector, ports: [http] } };
  }
  const game = { name: 'game', port: 7777, protocol: 'UDP', targetPort: 7777 };
  if (kind === 'NodePort') {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata,
      spec: { type: 'NodePort', selector, ports: [http, game] },
    };
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', selector, ports: [http, game] },
  };
}

type BundleResult =
  | { readonly measured: false; readonly reason: string }
  | {
      readonly measured: true;
      readonly bytes: number;
      /** The largest inputs by bytes in the output, and the same summed per npm package. */
      readonly topInputs: readonly InputShare[];
      readonly topPackages: readonly InputShare[];
      /** Files of `@kubernetes/client-node` in the bundle; the admission function needs none. */
      readonly kubernetesClientInputs: number;
      readonly esbuild: Record<string, unknown>;
      readonly initRunsMs: number[];
      readonly initMedianMs: number;
      readonly processRunsMs: number[];
      readonly processMedianMs: number;
      readonly initMethod: string;
    };

/**
 * Bundles functions/admission/handler.ts as CDK would (esbuild, node24, ESM, minified, nothing
 * external) and imports it in fresh Node processes. The handler reads its webhook secret from
 * Secrets Manager at module scope, so a local stub answers that call.
 */
async function measureBundle(): Promise<BundleResult> {
  if (!existsSync(HANDLER)) {
    return { measured: false, reason: 'functions/admission/handler.ts missing' };
  }
  const dir = await mkdtemp(join(tmpdir(), 'berth-bundle-'));
  const outfile = join(dir, 'handler.mjs');
  const esbuildOptions: BuildOptions = {
    entryPoints: [HANDLER],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    external: [],
    // CommonJS dependencies (the AWS SDK) call require() for Node built-ins; ESM has none.
    banner: {
      js: "import { createRequire as __berthRequire } from 'node:module'; const require = __berthRequire(import.meta.url);",
    },
    logLevel: 'silent',
  };
  let secrets: Server | undefined;
  try {
    let metafile: Metafile;
    try {
      ({ metafile } = await build({ ...esbuildOptions, metafile: true }));
    } catch (error) {
      return { measured: false, reason: `esbuild failed: ${(error as Error).message}` };
    }
    const bytes = (await stat(outfile)).size;
    const contents = bundleContents(metafile);
    secrets = await secretsManagerStub();
    const address = secrets.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const initRunsMs: number[] = [];
    const processRunsMs: number[] = [];
    for (let run = 0; run < INIT_RUNS; run++) {
      const { importMs, processMs } = await importOnce(outfile, port);
      initRunsMs.push(round(importMs, 1));
      processRunsMs.push(round(processMs, 1));
    }
    const result: BundleResult = {
      measured: true,
      bytes,
      ...contents,
      esbuild: {
        ...esbuildOptions,
        entryPoints: ['functions/admission/handler.ts'],
        outfile: 'handler.mjs',
      },
      initRunsMs,
      initMedianMs: round(median(initRunsMs), 1),
      processRunsMs,
      processMedianMs: round(median(processRunsMs), 1),
      initMethod:
        `node --input-type=module importing the bundle, ${INIT_RUNS} fresh processes; init = the import's ` +
        'duration (module evaluation + top-level await, with Secrets Manager answered by a loopback stub); ' +
        'process = spawn to exit',
    };
    console.log(`\nbundle contents: top ${TOP_INPUTS} inputs by bytes in the output`);
    printTable(
      ['input', 'bytes'],
      contents.topInputs.map((input) => [input.path, input.bytes]),
    );
    console.log(`\nby package (top ${TOP_INPUTS})`);
    printTable(
      ['package', 'bytes'],
      contents.topPackages.map((input) => [input.path, input.bytes]),
    );
    console.log(`@kubernetes/client-node files in the bundle: ${contents.kubernetesClientInputs}`);
    console.log(
      `\nbundle: ${(bytes / 1e6).toFixed(3)} MB; init median ${result.initMedianMs} ms ` +
        `(runs ${initRunsMs.join(', ')}), whole process median ${result.processMedianMs} ms`,
    );
    return result;
  } finally {
    secrets?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** One input file, or one npm package, and the bytes it adds to the bundle. */
interface InputShare {
  readonly path: string;
  readonly bytes: number;
}

/** What the bundle is made of, from esbuild's metafile. */
function bundleContents(metafile: Metafile): {
  topInputs: InputShare[];
  topPackages: InputShare[];
  kubernetesClientInputs: number;
} {
  const inputs = Object.values(metafile.outputs).flatMap((output) =>
    Object.entries(output.inputs).map(([path, input]) => ({ path, bytes: input.bytesInOutput })),
  );
  const byPackage = new Map<string, number>();
  for (const input of inputs) {
    // The last node_modules segment names the package that really holds the file.
    const name = input.path.match(/.*node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1] ?? '(berth)';
    byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytes);
  }
  const largest = (list: InputShare[]) =>
    list.sort((a, b) => b.bytes - a.bytes).slice(0, TOP_INPUTS);
  return {
    topInputs: largest(inputs),
    topPackages: largest([...byPackage].map(([path, bytes]) => ({ path, bytes }))),
    kubernetesClientInputs: Object.keys(metafile.inputs).filter((path) =>
      path.includes('node_modules/@kubernetes/client-node/'),
    ).length,
  };
}

/** Answers every GetSecretValue with a fixed secret string. */
async function secretsManagerStub(): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(
        JSON.stringify({
          ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:berth-bench',
          Name: 'berth-bench',
          SecretString: 'bench-secret',
          VersionId: 'v1',
        }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return server;
}

/** One fresh `node` importing the bundle with a Lambda-like environment. */
async function importOnce(
  bundle: string,
  secretsPort: number,
): Promise<{ importMs: number; processMs: number }> {
  const code = [
    'const t0 = performance.now();',
    `await import(${JSON.stringify(pathToFileURL(bundle).href)});`,
    'process.stdout.write(JSON.stringify({ importMs: performance.now() - t0 }));',
    // Keep-alive sockets of the SDK clients would hold the process open.
    'process.exit(0);',
  ].join('\n');
  const env = {
    PATH: process.env.PATH ?? '',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${secretsPort}`,
    AWS_LAMBDA_FUNCTION_NAME: 'berth-admission-bench',
    BERTH_TABLE: 'berth',
    BERTH_CONFIG: '{}',
    BERTH_WEBHOOK_SECRETS: JSON.stringify({
      local: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:berth-bench',
    }),
    BERTH_SETTLE_QUEUE: 'https://sqs.us-east-1.amazonaws.com/000000000000/berth-bench-settle',
    POWERTOOLS_METRICS_NAMESPACE: 'berth-bench',
  };
  const started = performance.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const status = await new Promise<number | null>((done) => child.once('exit', done));
  const processMs = performance.now() - started;
  if (status !== 0)
    throw new Error(`importing the bundle failed (${status}):\n${stderr.slice(-2000)}`);
  const { importMs } = JSON.parse(stdout) as { importMs: number };
  return { importMs, processMs };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await runAdmissionCpuBench();
}
